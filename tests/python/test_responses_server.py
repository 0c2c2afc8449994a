"""`hearth serve` through OpenAI's Responses API with the official `openai`
client: responses.create whole and streamed (the response.* event sequence,
deltas equal to the whole text), its greedy text equal to the same
conversation on /v1/chat/completions (which test_server.py checks against
`hearth run`, and that against llama.cpp), max_output_tokens as an
incomplete response, responses.parse with a pydantic model, function tools
with Qwen2.5-Coder (function_call items, streamed argument deltas, a
function_call_output round trip), and the refusals in OpenAI's error shape."""
import json

import pytest
from pydantic import BaseModel, Field

openai = pytest.importorskip("openai")

QUESTION = "What is the capital of France?"


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("--alias", "smollm2", "--parallel", "2", "-c", "4096")


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0) as c:
        yield c


def test_create_equals_chat(client):
    r = client.responses.create(model="smollm2", instructions="Be brief.", input=QUESTION, temperature=0,
                                max_output_tokens=24)
    want = client.chat.completions.create(
        model="smollm2", temperature=0, max_tokens=24,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}])
    assert r.object == "response" and r.id.startswith("resp_") and r.model == "smollm2"
    assert r.output_text == want.choices[0].message.content
    (item,) = r.output
    assert item.type == "message" and item.role == "assistant" and item.content[0].type == "output_text"
    assert r.status == ("incomplete" if want.choices[0].finish_reason == "length" else "completed")
    assert r.usage.output_tokens == want.usage.completion_tokens and r.usage.input_tokens == want.usage.prompt_tokens
    assert r.instructions == "Be brief." and r.max_output_tokens == 24 and r.temperature == 0
    # messages as input items give the same
    items = client.responses.create(model="smollm2", temperature=0, max_output_tokens=24, input=[
        {"role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": QUESTION}]}])
    assert items.output_text == r.output_text


def test_stream_events_and_text(client):
    whole = client.responses.create(model="m", input=QUESTION, temperature=0, max_output_tokens=16)
    events = list(client.responses.create(model="m", input=QUESTION, temperature=0, max_output_tokens=16,
                                          stream=True))
    types = [e.type for e in events]
    assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert types[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.incomplete" if whole.status == "incomplete" else "response.completed"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == whole.output_text == events[-1].response.output_text
    assert [e.text for e in events if e.type == "response.output_text.done"] == [text]


def test_incomplete_at_max_output_tokens(client):
    r = client.responses.create(model="m", input="Tell me a long story.", temperature=0, max_output_tokens=5)
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 5


class City(BaseModel):
    name: str = Field(max_length=30)
    country: str = Field(max_length=30)


def test_parse_with_pydantic(client):
    r = client.responses.parse(model="m", input="Name a city.", text_format=City, temperature=0,
                               max_output_tokens=200)
    assert isinstance(r.output_parsed, City) and r.output_parsed.name
    r = client.responses.create(model="m", input="Give a JSON object with a key a.", temperature=0,
                                max_output_tokens=200, text={"format": {"type": "json_object"}})
    assert r.status == "incomplete" or isinstance(json.loads(r.output_text), dict)


def test_function_tools_with_qwen(start_server, qwen_path):
    srv = start_server("--parallel", "1", "-c", "4096", model=qwen_path)
    with openai.OpenAI(base_url=srv.url + "/v1", api_key="none", max_retries=0) as c:
        tools = [{"type": "function", "name": "get_weather", "description": "Get the current weather in a city.",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"]}}]
        msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
        r = c.responses.create(model="q", input=msgs, tools=tools, tool_choice="required", temperature=0,
                               max_output_tokens=100)
        (call,) = [o for o in r.output if o.type == "function_call"]
        assert call.name == "get_weather" and "paris" in json.loads(call.arguments)["city"].lower()
        assert call.call_id and call.id.startswith("fc_") and r.status == "completed"
        events = list(c.responses.create(model="q", input=msgs, tools=tools, tool_choice="required", temperature=0,
                                         max_output_tokens=100, stream=True))
        args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
        done = [e for e in events if e.type == "response.function_call_arguments.done"]
        assert args == done[0].arguments == call.arguments
        follow = msgs + [{"type": "function_call", "call_id": call.call_id, "name": call.name,
                          "arguments": call.arguments},
                         {"type": "function_call_output", "call_id": call.call_id, "output": "18 degrees and sunny"}]
        answer = c.responses.create(model="q", input=follow, temperature=0, max_output_tokens=60)
        assert "18" in answer.output_text


@pytest.mark.parametrize("extra,param", [
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"store": True}, "store"),
    ({"background": True}, "background"),
    ({"include": ["reasoning.encrypted_content"]}, "include"),
    ({"reasoning": {"effort": "high"}}, "reasoning"),
    ({"truncation": "auto"}, "truncation"),
    ({"tools": [{"type": "web_search"}]}, "tools"),
    ({"top_logprobs": 3}, None),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]}, "input"),
    ({"input": []}, "input"),
    ({"text": {"format": {"type": "xml"}}}, "text"),
])
def test_refusals(client, extra, param):
    body = {"model": "m", "input": "hi", **extra}
    with pytest.raises(openai.BadRequestError) as e:
        client.post("/responses", body=body, cast_to=object)
    err = e.value.body
    assert err["param"] == param and err["message"] and (param or "top_logprobs" in err["message"]), err
