"""`hearth serve` through Anthropic's Messages API with the official
`anthropic` client: POST /v1/messages whole and streamed (the event
sequence, text equal to the whole answer), its greedy text equal to the same
conversation on /v1/chat/completions (which test_server.py checks against
`hearth run`, and that against llama.cpp), stop_sequences and max_tokens as
stop reasons, output_config's JSON Schema (validated), tools with
Qwen2.5-Coder (tool_use with an input object, streamed input_json_delta,
a tool_result round trip), count_tokens equal to the prompt the engine
reads, the x-api-key header, and the refusals in Anthropic's error shape.
The 2026 client has no temperature argument: it goes in extra_body."""
import http.client
import json

import jsonschema
import pytest

anthropic = pytest.importorskip("anthropic")

GREEDY = {"temperature": 0}
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("--alias", "smollm2", "--parallel", "2", "-c", "4096", "--api-key", "sekret")


@pytest.fixture(scope="module")
def client(server):
    return anthropic.Anthropic(base_url=server.url, api_key="sekret", max_retries=0)


@pytest.fixture(scope="module")
def openai_client(server):
    openai = pytest.importorskip("openai")
    with openai.OpenAI(base_url=server.url + "/v1", api_key="sekret", max_retries=0) as c:
        yield c


def post(server, path, body, key="sekret"):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json", "x-api-key": key})
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, data


def anthropic_error(status, data, want_status, want_type, words):
    assert status == want_status, (status, data)
    body = json.loads(data)
    assert body["type"] == "error" and set(body["error"]) == {"type", "message"}, body
    assert body["error"]["type"] == want_type and words in body["error"]["message"], body


def test_create_equals_v1(client, openai_client):
    r = client.messages.create(model="claude-sonnet", max_tokens=24, system="Be brief.", messages=QUESTION,
                               extra_body=GREEDY)
    want = openai_client.chat.completions.create(
        model="smollm2", max_tokens=24, temperature=0,
        messages=[{"role": "system", "content": "Be brief."}] + QUESTION)
    assert r.type == "message" and r.role == "assistant" and r.id.startswith("msg_")
    assert r.model == "claude-sonnet"  # any name is served, and echoed
    assert [b.type for b in r.content] == ["text"] and r.content[0].text == want.choices[0].message.content
    assert r.stop_reason == ("max_tokens" if want.choices[0].finish_reason == "length" else "end_turn")
    assert r.usage.output_tokens == want.usage.completion_tokens
    assert r.usage.input_tokens + r.usage.cache_read_input_tokens == want.usage.prompt_tokens


def test_stream_events_and_text(server, client):
    whole = client.messages.create(model="m", max_tokens=24, messages=QUESTION, extra_body=GREEDY)
    with client.messages.stream(model="m", max_tokens=24, messages=QUESTION, extra_body=GREEDY) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text == whole.content[0].text and final.content[0].text == text
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens
    assert final.usage.input_tokens + final.usage.cache_read_input_tokens == \
        whole.usage.input_tokens + whole.usage.cache_read_input_tokens
    # the raw event sequence
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", "/v1/messages", headers={"x-api-key": "sekret", "Content-Type": "application/json"},
                 body=json.dumps({"model": "m", "max_tokens": 8, "messages": QUESTION, "stream": True, **GREEDY}))
    res = conn.getresponse()
    assert res.status == 200 and res.getheader("Content-Type").startswith("text/event-stream")
    events = [line[len("event: "):] for line in res.read().decode().splitlines() if line.startswith("event: ")]
    conn.close()
    assert events[:3] == ["message_start", "ping", "content_block_start"]
    assert set(events[3:-3]) == {"content_block_delta"}
    assert events[-3:] == ["content_block_stop", "message_delta", "message_stop"]


def test_stop_reasons(client):
    free = client.messages.create(model="m", max_tokens=40, messages=[{"role": "user", "content": "Tell me about Paris."}],
                                  extra_body=GREEDY).content[0].text
    word = free.split()[len(free.split()) // 2]
    r = client.messages.create(model="m", max_tokens=40, stop_sequences=["zzz", word], extra_body=GREEDY,
                               messages=[{"role": "user", "content": "Tell me about Paris."}])
    assert r.stop_reason == "stop_sequence" and r.stop_sequence == word
    assert r.content[0].text == free[:free.index(word)]
    with client.messages.stream(model="m", max_tokens=40, stop_sequences=[word], extra_body=GREEDY,
                                messages=[{"role": "user", "content": "Tell me about Paris."}]) as s:
        final = s.get_final_message()
    assert final.stop_reason == "stop_sequence" and final.stop_sequence == word
    short = client.messages.create(model="m", max_tokens=3, messages=QUESTION, extra_body=GREEDY)
    assert short.stop_reason == "max_tokens" and short.usage.output_tokens == 3 and short.stop_sequence is None


def test_output_config_schema(client):
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30},
                                               "population": {"type": "integer", "minimum": 0}},
              "required": ["city", "population"], "additionalProperties": False}
    r = client.messages.create(model="m", max_tokens=200, messages=QUESTION, extra_body=GREEDY,
                               output_config={"format": {"type": "json_schema", "schema": schema}})
    jsonschema.validate(json.loads(r.content[0].text), schema)


def test_count_tokens_equals_the_prompt_read(client):
    counted = client.messages.count_tokens(model="m", system="Be brief.", messages=QUESTION)
    r = client.messages.create(model="m", max_tokens=1, system="Be brief.", messages=QUESTION, extra_body=GREEDY)
    assert counted.input_tokens == r.usage.input_tokens + r.usage.cache_read_input_tokens > 5


def test_tools_with_qwen(start_server, qwen_path):
    srv = start_server("--parallel", "1", "-c", "4096", model=qwen_path)
    c = anthropic.Anthropic(base_url=srv.url, api_key="none", max_retries=0)
    tools = [{"name": "get_weather", "description": "Get the current weather in a city.",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = c.messages.create(model="q", max_tokens=100, tools=tools, tool_choice={"type": "any"}, messages=msgs,
                          extra_body=GREEDY)
    assert r.stop_reason == "tool_use"
    (call,) = [b for b in r.content if b.type == "tool_use"]
    assert call.name == "get_weather" and "paris" in call.input["city"].lower() and call.id
    with c.messages.stream(model="q", max_tokens=100, tools=tools, tool_choice={"type": "any"}, messages=msgs,
                           extra_body=GREEDY) as s:
        final = s.get_final_message()
    (streamed,) = [b for b in final.content if b.type == "tool_use"]
    assert streamed.name == call.name and streamed.input == call.input and final.stop_reason == "tool_use"
    counted = c.messages.count_tokens(model="q", tools=tools, messages=msgs)
    plain = c.messages.count_tokens(model="q", messages=msgs)
    assert counted.input_tokens > plain.input_tokens + 20  # the tools reach the prompt
    msgs += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                           "content": "18 degrees and sunny"}]}]
    # the 0.5B model calls again while tools are offered; without them it reads the result
    answer = c.messages.create(model="q", max_tokens=60, messages=msgs, extra_body=GREEDY)
    assert answer.stop_reason in ("end_turn", "max_tokens") and "18" in answer.content[0].text


def test_errors_in_anthropic_shape(server):
    anthropic_error(*post(server, "/v1/messages", {"model": "m", "max_tokens": 8, "messages": QUESTION}, key="bad"),
                    401, "authentication_error", "API key")
    anthropic_error(*post(server, "/v1/messages", {"model": "m", "messages": QUESTION}), 400,
                    "invalid_request_error", "max_tokens")
    anthropic_error(*post(server, "/v1/messages", {"model": "m", "max_tokens": 8, "messages": []}), 400,
                    "invalid_request_error", "messages")
    image = [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                         "data": "AAAA"}}]}]
    anthropic_error(*post(server, "/v1/messages", {"model": "m", "max_tokens": 8, "messages": image}), 400,
                    "invalid_request_error", "images")
    anthropic_error(*post(server, "/v1/messages", {"model": "m", "max_tokens": 8, "messages": QUESTION,
                                                   "speed": "fast"}), 400, "invalid_request_error", "speed")
    anthropic_error(*post(server, "/v1/messages", {"model": "m", "max_tokens": 8, "messages": QUESTION,
                                                   "thinking": {"type": "enabled", "budget_tokens": 1024}}), 400,
                    "invalid_request_error", "thinking")
    anthropic_error(*post(server, "/v1/messages", {"model": "m", "max_tokens": 8,
                                                   "messages": [{"role": "robot", "content": "hi"}]}), 400,
                    "invalid_request_error", "role")
    anthropic_error(*post(server, "/v1/messages", {"model": "m", "max_tokens": 8, "messages": QUESTION,
                                                   "temperature": 7}), 400, "invalid_request_error", "temperature")
    with pytest.raises(anthropic.BadRequestError):
        anthropic.Anthropic(base_url=server.url, api_key="sekret", max_retries=0).messages.create(
            model="m", max_tokens=8, messages=image)


def test_langchain_chat_anthropic(server, client):
    langchain_anthropic = pytest.importorskip("langchain_anthropic")
    llm = langchain_anthropic.ChatAnthropic(model="claude-sonnet-4", base_url=server.url, api_key="sekret",
                                            max_tokens=24, temperature=0, max_retries=0)
    out = llm.invoke(QUESTION[0]["content"])
    want = client.messages.create(model="m", max_tokens=24, messages=QUESTION, extra_body=GREEDY)
    assert out.content == want.content[0].text
