"""`hearth serve` through Ollama's API with the official `ollama` client
(and langchain-ollama): / and /api/version, /api/tags, /api/ps and
/api/show; /api/chat and /api/generate whole and streamed (newline-delimited
JSON), their greedy text equal to the same request on /v1 (which
test_server.py checks against `hearth run`, and that against llama.cpp);
options (temperature, num_predict, stop, seed, repeat_penalty), format
"json" and a JSON Schema (answers validated by jsonschema), tools with
Qwen2.5-Coder (a call with object arguments, then the tool's result); the
refusals in Ollama's shape ({"error": "..."}: images, template, suffix,
unsupported options, an embedding model asked to chat); /api/embed and
/api/embeddings on all-MiniLM against llama.cpp's vectors."""
import http.client
import json
import os
from pathlib import Path

import jsonschema
import numpy as np
import pytest

ollama = pytest.importorskip("ollama")

ROOT = Path(__file__).resolve().parents[2]
# repeat_penalty 1 as /v1 (Ollama's default is 1.1)
GREEDY = {"temperature": 0, "num_predict": 16, "repeat_penalty": 1.0}


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("--alias", "smollm2", "--parallel", "2", "-c", "4096")


@pytest.fixture(scope="module")
def client(server):
    return ollama.Client(host=server.url)


@pytest.fixture(scope="module")
def openai_client(server):
    openai = pytest.importorskip("openai")
    with openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0) as c:
        yield c


def call(server, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, res.getheader("Content-Type"), data


def ollama_error(status, data, want_status, words):
    assert status == want_status, (status, data)
    err = json.loads(data)
    assert set(err) == {"error"} and isinstance(err["error"], str), err
    assert words in err["error"], err
    return err["error"]


def test_root_version_tags_ps_show(server, client):
    status, ctype, data = call(server, "GET", "/")
    assert status == 200 and data == b"Ollama is running" and ctype.startswith("text/plain")
    status, _, data = call(server, "GET", "/api/version")
    assert status == 200 and json.loads(data)["version"]
    models = client.list().models
    assert [m.model for m in models] == ["smollm2"]
    assert models[0].details.format == "gguf" and models[0].details.family == "llama"
    assert models[0].details.parameter_size == "135M" and models[0].details.quantization_level == "Q4_1"
    assert models[0].size > 50_000_000
    assert [m.model for m in client.ps().models] == ["smollm2"]
    shown = client.show("smollm2")
    assert "completion" in shown.capabilities and "tools" in shown.capabilities
    assert "{%" in shown.template and shown.modelinfo["general.architecture"] == "llama"


def test_chat_equals_v1(client, openai_client):
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    got = client.chat(model="anything", messages=messages, options=GREEDY, stream=False)
    want = openai_client.chat.completions.create(model="smollm2", messages=messages, temperature=0, max_tokens=16)
    assert got.message.role == "assistant" and got.message.content == want.choices[0].message.content
    assert got.model == "anything"  # any name is served, and echoed
    assert got.done and got.done_reason == "length"
    # tokens evaluated: the prompt less what the slot had cached
    assert got.eval_count == 16 and 0 < got.prompt_eval_count <= want.usage.prompt_tokens
    assert got.total_duration > 0 and got.eval_duration > 0 and got.prompt_eval_duration >= 0


def test_chat_stream_equals_whole(client):
    messages = [{"role": "user", "content": "Name three colors."}]
    whole = client.chat(model="smollm2", messages=messages, options=GREEDY, stream=False)
    parts = list(client.chat(model="smollm2", messages=messages, options=GREEDY, stream=True))
    assert all(not p.done for p in parts[:-1]) and parts[-1].done and parts[-1].done_reason == whole.done_reason
    assert "".join(p.message.content for p in parts) == whole.message.content
    assert parts[-1].eval_count == whole.eval_count


def test_generate_raw_and_templated(client, openai_client):
    raw = client.generate(model="smollm2", prompt="The capital of France is", raw=True, options=GREEDY)
    want = openai_client.completions.create(model="smollm2", prompt="The capital of France is", temperature=0,
                                            max_tokens=16)
    assert raw.response == want.choices[0].text and raw.done
    templated = client.generate(model="smollm2", prompt="What is 2+2?", system="Answer briefly.", options=GREEDY)
    chat = openai_client.chat.completions.create(
        model="smollm2", temperature=0, max_tokens=16,
        messages=[{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is 2+2?"}])
    assert templated.response == chat.choices[0].message.content
    streamed = "".join(p.response for p in client.generate(model="smollm2", prompt="What is 2+2?",
                                                           system="Answer briefly.", options=GREEDY, stream=True))
    assert streamed == templated.response
    # an empty prompt loads the model
    loaded = client.generate(model="smollm2", prompt="")
    assert loaded.done and loaded.done_reason == "load"


def test_options(client):
    msgs = [{"role": "user", "content": "Tell me about Paris."}]
    free = client.chat(model="smollm2", messages=msgs, options={**GREEDY, "num_predict": 40}).message.content
    word = free.split()[len(free.split()) // 2]
    stopped = client.chat(model="smollm2", messages=msgs, options={**GREEDY, "num_predict": 40, "stop": [word]})
    assert stopped.message.content == free[:free.index(word)] and stopped.done_reason == "stop"
    a = client.chat(model="smollm2", messages=msgs, options={"temperature": 1.0, "seed": 7, "num_predict": 12})
    b = client.chat(model="smollm2", messages=msgs, options={"temperature": 1.0, "seed": 7, "num_predict": 12})
    assert a.message.content == b.message.content
    rp = client.chat(model="smollm2", messages=msgs, options={"temperature": 0, "num_predict": 12,
                                                              "repeat_penalty": 1.0, "repeat_last_n": -1})
    assert rp.eval_count == 12


def test_format_json_and_schema(client):
    res = client.chat(model="smollm2", messages=[{"role": "user", "content": "Give a cat's name and age as JSON."}],
                      format="json", options={**GREEDY, "num_predict": 300})
    # the 135M model may list keys until num_predict; whatever ends parses
    assert res.done_reason == "length" or isinstance(json.loads(res.message.content), dict)
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 150}},
              "required": ["name", "age"], "additionalProperties": False}
    for stream in (False, True):
        out = client.generate(model="smollm2", prompt="Invent a person.", format=schema, stream=stream,
                              options={**GREEDY, "num_predict": 300})
        text = "".join(p.response for p in out) if stream else out.response
        jsonschema.validate(json.loads(text), schema)


def test_tools_with_qwen(start_server, qwen_path):
    srv = start_server("--alias", "qwen", "--parallel", "1", "-c", "4096", model=qwen_path)
    c = ollama.Client(host=srv.url)
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    opts = {"temperature": 0, "num_predict": 100, "repeat_penalty": 1.0}
    res = c.chat(model="qwen", messages=msgs, tools=tools, options=opts)
    (tc,) = res.message.tool_calls
    assert tc.function.name == "get_weather" and isinstance(tc.function.arguments, dict)
    assert "paris" in tc.function.arguments["city"].lower()
    streamed = [p for p in c.chat(model="qwen", messages=msgs, tools=tools, stream=True, options=opts)
                if p.message.tool_calls]
    assert [p.message.tool_calls[0].function.name for p in streamed] == ["get_weather"]
    msgs += [res.message, {"role": "tool", "content": "18 degrees and sunny", "tool_name": "get_weather"}]
    # with the tools offered, the 0.5B model may call again (Ollama has no tool_choice); without, it reads the result
    again = c.chat(model="qwen", messages=msgs, tools=tools, options={**opts, "num_predict": 60})
    assert again.done and (again.message.content or again.message.tool_calls)
    answer = c.chat(model="qwen", messages=msgs, options={**opts, "num_predict": 60})
    assert "18" in answer.message.content and not answer.message.tool_calls


def test_langchain_ollama(server):
    langchain_ollama = pytest.importorskip("langchain_ollama")
    llm = langchain_ollama.ChatOllama(model="smollm2", base_url=server.url, temperature=0, num_predict=8)
    out = llm.invoke("Say hello.")
    assert isinstance(out.content, str) and out.content


def test_refusals_in_ollama_shape(server):
    post = lambda path, body: call(server, "POST", path, body)[::2]  # noqa: E731
    ollama_error(*post("/api/chat", {"messages": [{"role": "user", "content": "hi", "images": ["AAAA"]}]}), 400,
                 "images")
    ollama_error(*post("/api/generate", {"prompt": "hi", "template": "{{ .Prompt }}"}), 400, "template")
    ollama_error(*post("/api/generate", {"prompt": "hi", "suffix": "end"}), 400, "suffix")
    ollama_error(*post("/api/chat", {"messages": [], "options": {"mirostat": 2}}), 400, "mirostat")
    ollama_error(*post("/api/chat", {"messages": [], "options": {"bogus": 1}}), 400, "bogus")
    ollama_error(*post("/api/chat", {"messages": [], "options": {"num_ctx": 1000000}}), 400, "num_ctx")
    ollama_error(*post("/api/chat", {"messages": "hi"}), 400, "messages")
    ollama_error(*post("/api/chat", {"messages": [], "logprobs": True}), 400, "logprobs")
    ollama_error(*post("/api/generate", {"prompt": "hi", "bogus": 1}), 400, "bogus")
    ollama_error(*post("/api/chat", {"messages": [{"role": "user", "content": "hi"}], "think": True}), 400, "think")
    ollama_error(*post("/api/embed", {"input": "hi"}), 400, "embeddings")
    ollama_error(*call(server, "GET", "/api/nope")[::2], 404, "no endpoint")
    with pytest.raises(ollama.ResponseError) as e:
        ollama.Client(host=server.url).chat(model="smollm2", messages=[
            {"role": "user", "content": "hi", "images": [b"\x89PNG"]}])
    assert e.value.status_code == 400 and "images" in e.value.error


def test_embed_with_minilm(start_server):
    minilm = Path(os.environ.get("HEARTH_MODEL_MINILM", ROOT / "models" / "all-minilm-l6-v2-f16.gguf"))
    if not minilm.exists():
        pytest.skip(f"{minilm} not found: run scripts/fetch_model.sh minilm")
    cases = json.loads((ROOT / "tests" / "reference" / "embedding_reference.json").read_text())["texts"]
    cases = [c for c in cases if c["name"] != "empty"][:5]
    srv = start_server("--parallel", "2", "-c", "1024", model=minilm)
    c = ollama.Client(host=srv.url)
    res = c.embed(model="all-minilm", input=[x["text"] for x in cases])
    assert res.model == "all-minilm" and len(res.embeddings) == len(cases)
    assert res.prompt_eval_count == sum(x["n_tokens"] for x in cases)
    for got, case in zip(res.embeddings, cases):
        want = np.asarray(case["llama_cpp"]) / np.linalg.norm(case["llama_cpp"])
        assert float(np.asarray(got) @ want) >= 0.9999
    one = c.embeddings(model="all-minilm", prompt=cases[0]["text"])
    assert np.allclose(one.embedding, res.embeddings[0], atol=1e-5)
    # truncate (default true) cuts a long input to a slot; false refuses it
    long = "word " * 2000
    assert len(c.embed(model="m", input=long).embeddings[0]) == 384
    status, _, data = call(srv, "POST", "/api/embed", {"input": "a", "dimensions": 64})
    ollama_error(status, data, 400, "dimensions")
    status, _, data = call(srv, "POST", "/api/embed", {"input": long, "truncate": False})
    ollama_error(status, data, 400, "tokens")
    status, _, data = call(srv, "POST", "/api/chat", {"messages": [{"role": "user", "content": "hi"}]})
    ollama_error(status, data, 400, "does not generate")
