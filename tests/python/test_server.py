"""`hearth serve`: the OpenAI-compatible server driven by the official `openai`
client (sync, streaming, stream_options), a greedy chat equal to `hearth run
--chat`, logprobs, stop strings, n, every error in OpenAI's shape, clients
that vanish during prefill and decode (their slots free within a second),
32 concurrent streams over 500 requests with flat memory, and SIGTERM during
streams (exit 0). Each server runs on a free loopback port; set
HEARTH_SERVER_BIN to serve with another build (scripts/test.sh uses the ASan
one)."""
import http.client
import json
import random
import re
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

KEY, FILE_KEY = "test-key-1", "test-key-2"
ALIAS = "smollm2"
QUESTION = "What is the capital of France?"
# 4 slots of 2048 positions; steps of at most 64 tokens keep one step short,
# so "freed within one step" is well inside a second
SERVER_ARGS = ["--api-key", KEY, "-c", "8192", "--parallel", "4", "-b", "64", "--alias", ALIAS]


@pytest.fixture(scope="module")
def server(start_server, tmp_path_factory):
    keys = tmp_path_factory.mktemp("keys") / "keys.txt"
    keys.write_text(f"\n  {FILE_KEY}  \n")
    return start_server(*SERVER_ARGS, "--api-key-file", keys)


@pytest.fixture(scope="module")
def asan(server_bin):
    """Whether an ASan build serves: its engine steps are several times slower
    and its allocator keeps freed memory in quarantine, so the timing bounds
    widen, the load is smaller and memory is not measured (the release build
    checks those)."""
    return b"__asan_init" in server_bin.read_bytes()


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0, timeout=120) as c:
        yield c


def call(server, method, path, body=None, key=KEY, timeout=60, headers=None):
    """One raw HTTP request: (status, headers, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    headers = {"Content-Type": "application/json", **(headers or {})}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    conn.request(method, path, body=body, headers=headers)
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, res.headers, data


def get_json(server, path):
    status, _, data = call(server, "GET", path)
    assert status == 200, data
    return json.loads(data)


def metrics(server):
    status, headers, data = call(server, "GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^(hearth_[a-z_]+(?:\{[^}]*\})?) (\S+)$", data.decode(), re.M)}


def error_of(status, data, want_status, code=None):
    """The error object of an answer, checked for OpenAI's shape."""
    assert status == want_status, (status, data)
    err = json.loads(data)["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"] and err["type"]
    if code:
        assert err["code"] == code, err
    return err


def chat_body(text, **kw):
    return {"model": ALIAS, "messages": [{"role": "user", "content": text}], **kw}


# ---------------------------------------------------------------- basics --

def test_help_lists_every_option(run_hearth):
    res = run_hearth("serve", "--help")
    assert res.returncode == 0
    text = res.stdout.decode()
    for opt in ("--host", "--port", "--parallel", "-c", "-b", "-ngl", "-t", "--api-key", "--api-key-file",
                "--max-body", "--timeout", "--chat-template", "--alias", "--queue", "-v"):
        assert re.search(rf"(^|[ ,]){re.escape(opt)}\b", text, re.M), opt
    assert b"serve MODEL" in run_hearth("--help").stdout


def test_bad_options_and_model(run_hearth, tmp_path):
    for args in (["--port", "70000"], ["--parallel", "0"], ["--bogus"], []):
        res = run_hearth("serve", *args)
        err = res.stderr.decode().strip()
        assert res.returncode == 2 and err and "\n" not in err, (args, err)
    # the server listens first, then fails to load: one error line, exit 1
    res = run_hearth("serve", tmp_path / "missing.gguf", "--port", "0")
    lines = res.stderr.decode().strip().splitlines()
    assert res.returncode == 1 and "listening on" in lines[0] and "missing.gguf" in lines[-1], lines


def test_health_models_and_keys(server, client):
    status, _, data = call(server, "GET", "/health", key=None)  # no key needed
    assert status == 200 and json.loads(data) == {"status": "ok"}
    assert [m.id for m in client.models.list().data] == [ALIAS]
    status, _, data = call(server, "GET", "/v1/models", key=FILE_KEY)  # a key from --api-key-file
    assert status == 200 and json.loads(data)["data"][0]["id"] == ALIAS
    error_of(*call(server, "GET", "/v1/models", key=None)[::2], 401, "invalid_api_key")
    error_of(*call(server, "GET", "/metrics", key="test-key-3")[::2], 401, "invalid_api_key")
    error_of(*call(server, "POST", "/v1/chat/completions", chat_body("hi"), key=KEY + "x")[::2], 401)
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=server.url + "/v1", api_key="wrong", max_retries=0).models.list()


def test_default_alias_is_the_file_name(start_server, model_path):
    srv = start_server("-c", "2048", "--parallel", "1")
    assert get_json(srv, "/v1/models")["data"][0]["id"] == model_path.name
    assert srv.stop() == 0


# ------------------------------------------------------------ generation --

def test_greedy_chat_equals_hearth_run(client, run_hearth, model_path):
    res = run_hearth("run", model_path, "--chat", QUESTION, "--temp", "0", "-n", "24")
    assert res.returncode == 0, res.stderr.decode()
    expected = res.stdout.decode()
    out = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": QUESTION}],
                                         max_tokens=24, temperature=0)
    assert out.object == "chat.completion" and out.id.startswith("chatcmpl-") and out.model == ALIAS
    assert out.created > 1_600_000_000
    choice = out.choices[0]
    assert choice.message.role == "assistant" and choice.message.content == expected
    assert choice.finish_reason in ("stop", "length") and choice.index == 0
    assert out.usage.completion_tokens <= 24 and out.usage.prompt_tokens > 5
    assert out.usage.total_tokens == out.usage.prompt_tokens + out.usage.completion_tokens
    # content as text parts is the same message: one part as it is, several
    # joined with newlines (vLLM's rule)
    parts = client.chat.completions.create(
        model=ALIAS, max_tokens=24, temperature=0, messages=[{"role": "user", "content": [{"type": "text", "text": QUESTION}]}])
    assert parts.choices[0].message.content == expected
    two = [{"type": "text", "text": "Answer briefly."}, {"type": "text", "text": QUESTION}]
    joined = client.chat.completions.create(model=ALIAS, max_tokens=24, temperature=0,
                                            messages=[{"role": "user", "content": "Answer briefly.\n" + QUESTION}])
    parts = client.chat.completions.create(model=ALIAS, max_tokens=24, temperature=0,
                                           messages=[{"role": "user", "content": two}])
    assert parts.choices[0].message.content == joined.choices[0].message.content


def test_chat_stream_with_usage(client):
    whole = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "Tell me a joke."}],
                                           max_tokens=16, temperature=0)
    chunks = list(client.chat.completions.create(
        model=ALIAS, messages=[{"role": "user", "content": "Tell me a joke."}], max_tokens=16, temperature=0,
        stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    last = chunks[-1]
    assert last.choices == [] and last.usage.completion_tokens == whole.usage.completion_tokens
    assert last.usage.prompt_tokens == whole.usage.prompt_tokens
    assert all(c.usage is None for c in chunks[:-1])
    # without stream_options: no usage chunk
    plain = list(client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "Hi"}],
                                                max_tokens=4, stream=True))
    assert all(c.choices and c.usage is None for c in plain)


def test_completions(client):
    prompt = "The capital of France is"
    whole = client.completions.create(model=ALIAS, prompt=prompt, max_tokens=12, temperature=0, logprobs=3)
    assert whole.object == "text_completion" and whole.id.startswith("cmpl-")
    choice = whole.choices[0]
    lp = choice.logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) > 0
    assert "".join(lp.tokens) == choice.text and lp.text_offset[0] == 0
    for tok, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert logprob <= 0 and 1 <= len(top) <= 3
        assert max(top.values()) == pytest.approx(logprob)  # greedy takes the most likely
    streamed = list(client.completions.create(model=ALIAS, prompt=prompt, max_tokens=12, temperature=0, stream=True))
    assert "".join(c.choices[0].text for c in streamed) == choice.text
    assert streamed[-1].choices[0].finish_reason == choice.finish_reason


def test_completion_prompt_as_tokens(server, client):
    prompt = "The capital of France is"
    tokens = json.loads(call(server, "POST", "/tokenize", {"content": prompt})[2])["tokens"]
    by_text = client.completions.create(model=ALIAS, prompt=prompt, max_tokens=8, temperature=0)
    by_ids = client.completions.create(model=ALIAS, prompt=tokens, max_tokens=8, temperature=0)
    assert by_ids.choices[0].text == by_text.choices[0].text
    assert by_ids.usage.prompt_tokens == len(tokens)


def test_chat_logprobs(client):
    out = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": QUESTION}],
                                         max_tokens=8, temperature=0, logprobs=True, top_logprobs=3)
    content = out.choices[0].logprobs.content
    assert len(content) == out.usage.completion_tokens or out.choices[0].finish_reason == "stop"
    assert "".join(e.token for e in content) == out.choices[0].message.content
    for e in content:
        assert bytes(e.bytes).decode(errors="replace") == e.token and e.logprob <= 0
        assert len(e.top_logprobs) == 3 and e.top_logprobs[0].token == e.token
        assert [t.logprob for t in e.top_logprobs] == sorted((t.logprob for t in e.top_logprobs), reverse=True)
    streamed = list(client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": QUESTION}],
                                                   max_tokens=8, temperature=0, logprobs=True, top_logprobs=1,
                                                   stream=True))
    tokens = [e.token for c in streamed if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content]
    assert tokens == [e.token for e in content]


def test_stop_strings(client):
    prompt = "Count: one, two, three, four, five,"
    free = client.completions.create(model=ALIAS, prompt=prompt, max_tokens=24, temperature=0).choices[0].text
    words = free.split()
    assert len(words) > 3, free
    stop = words[2]
    cut = free[:free.index(stop)]
    for stops in (stop, [stop, "never-seen"]):
        out = client.completions.create(model=ALIAS, prompt=prompt, max_tokens=24, temperature=0, stop=stops)
        assert out.choices[0].text == cut and out.choices[0].finish_reason == "stop"
        streamed = list(client.completions.create(model=ALIAS, prompt=prompt, max_tokens=24, temperature=0,
                                                  stop=stops, stream=True))
        assert "".join(c.choices[0].text for c in streamed) == cut


def test_n_choices_and_seed(client):
    msgs = [{"role": "user", "content": "Write a word."}]
    greedy = client.chat.completions.create(model=ALIAS, messages=msgs, max_tokens=6, temperature=0, n=3)
    assert [c.index for c in greedy.choices] == [0, 1, 2]
    assert len({c.message.content for c in greedy.choices}) == 1
    sampled = [client.chat.completions.create(model=ALIAS, messages=msgs, max_tokens=12, temperature=1.5, n=2,
                                              seed=42) for _ in range(2)]
    texts = [[c.message.content for c in s.choices] for s in sampled]
    assert texts[0] == texts[1]  # the same seed gives the same choices
    streamed = list(client.chat.completions.create(model=ALIAS, messages=msgs, max_tokens=12, temperature=1.5, n=2,
                                                   seed=42, stream=True))
    for i in range(2):
        assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices[0].index == i) == texts[0][i]


def test_sampling_parameters(client):
    out = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "Hi"}], max_tokens=8,
                                         temperature=0.7, top_p=0.9, presence_penalty=0.5, frequency_penalty=0.5,
                                         seed=7, extra_body={"top_k": 20, "min_p": 0.1})
    assert out.choices[0].message.content and out.usage.completion_tokens <= 8
    out = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "Hi"}],
                                         max_completion_tokens=3, temperature=0, extra_body={"ignore_eos": True})
    assert out.usage.completion_tokens == 3 and out.choices[0].finish_reason == "length"


def test_tokenize_detokenize(server):
    text = "Hello world, ünïcödé 🙂"
    status, _, data = call(server, "POST", "/tokenize", {"content": text})
    tokens = json.loads(data)["tokens"]
    assert status == 200 and tokens and all(isinstance(t, int) for t in tokens)
    status, _, data = call(server, "POST", "/detokenize", {"tokens": tokens})
    assert status == 200 and json.loads(data) == {"content": text}
    special = json.loads(call(server, "POST", "/tokenize", {"content": "<|im_start|>"})[2])["tokens"]
    assert len(special) == 1
    assert json.loads(call(server, "POST", "/detokenize", {"tokens": special})[2]) == {"content": "<|im_start|>"}
    assert json.loads(call(server, "POST", "/tokenize", {"content": ""})[2]) == {"tokens": []}
    error_of(*call(server, "POST", "/detokenize", {"tokens": [10**9]})[::2], 400)
    error_of(*call(server, "POST", "/detokenize", {"tokens": ["a"]})[::2], 400, "invalid_type")
    error_of(*call(server, "POST", "/tokenize", {"content": 5})[::2], 400, "invalid_type")
    error_of(*call(server, "POST", "/tokenize", {})[::2], 400, "missing_field")


def test_slots_and_metrics(server, client):
    client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    # the slots are a snapshot taken after each engine step: the answer can
    # arrive just before the step that frees its slot is published
    wait_for(lambda: all_idle(server), "every slot idle", timeout=1.0)
    slots = get_json(server, "/slots")
    assert [s["id"] for s in slots] == [0, 1, 2, 3]
    for s in slots:
        assert set(s) == {"id", "state", "request_id", "n_prompt", "n_cached", "n_generated", "n_past", "n_ctx"}
        assert s["state"] == "idle" and s["n_ctx"] == 2048
    m = metrics(server)
    for name in ("hearth_requests_running", "hearth_requests_waiting", "hearth_prompt_tokens_total",
                 "hearth_generated_tokens_total", "hearth_generation_tokens_per_second",
                 "hearth_prompt_tokens_per_second", "hearth_kv_cache_usage_ratio",
                 "hearth_time_to_first_token_seconds_count", "hearth_inter_token_latency_seconds_count",
                 'hearth_time_to_first_token_seconds_bucket{le="+Inf"}'):
        assert name in m, name
    assert m["hearth_requests_running"] == 0 and m["hearth_generated_tokens_total"] >= 4
    assert 0 < m["hearth_kv_cache_usage_ratio"] <= 1
    buckets = [v for k, v in m.items() if k.startswith("hearth_time_to_first_token_seconds_bucket")]
    assert buckets == sorted(buckets) and buckets[-1] == m["hearth_time_to_first_token_seconds_count"] > 0


# ---------------------------------------------------------------- errors --

LONG = "word " * 2100  # more tokens than a 2048-position slot holds


@pytest.mark.parametrize("path, body, status, code, param", [
    ("/v1/chat/completions", b"{not json", 400, "invalid_json", None),
    ("/v1/chat/completions", b"[1, 2]", 400, "invalid_json", None),
    ("/v1/chat/completions", b'{"messages": []} trailing', 400, "invalid_json", None),
    ("/v1/chat/completions", {"messages": "hi"}, 400, "invalid_type", "messages"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": 5}]}, 400, "invalid_type", "messages"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400,
     "invalid_value", "messages"),
    ("/v1/chat/completions", {"messages": []}, 400, "invalid_value", "messages"),
    ("/v1/chat/completions", {}, 400, "missing_field", "messages"),
    ("/v1/chat/completions", chat_body("hi", temperature="hot"), 400, "invalid_type", "temperature"),
    ("/v1/chat/completions", chat_body("hi", temperature=-1), 400, "invalid_value", "temperature"),
    ("/v1/chat/completions", chat_body("hi", max_tokens=2.5), 400, "invalid_type", "max_tokens"),
    ("/v1/chat/completions", chat_body("hi", max_tokens=0), 400, "invalid_value", "max_tokens"),
    ("/v1/chat/completions", chat_body("hi", n=0), 400, "invalid_value", "n"),
    ("/v1/chat/completions", chat_body("hi", stream="yes"), 400, "invalid_type", "stream"),
    ("/v1/chat/completions", chat_body("hi", stop=5), 400, "invalid_type", "stop"),
    ("/v1/chat/completions", chat_body("hi", top_logprobs=2), 400, "invalid_value", "top_logprobs"),
    ("/v1/chat/completions", chat_body("hi", logprobs=True, top_logprobs=21), 400, "invalid_value", "top_logprobs"),
    ("/v1/chat/completions", chat_body("hi", model=7), 400, "invalid_type", "model"),
    ("/v1/chat/completions", chat_body(LONG), 400, "context_length_exceeded", "messages"),
    ("/v1/completions", {"prompt": LONG}, 400, "context_length_exceeded", "prompt"),
    ("/v1/completions", {"prompt": {"text": "x"}}, 400, "invalid_type", "prompt"),
    ("/v1/completions", {"prompt": [1, -2]}, 400, "invalid_type", "prompt"),
    ("/v1/completions", {"prompt": [1, 10**8]}, 400, "invalid_value", None),
    ("/v1/completions", {"prompt": "x", "logprobs": True}, 400, "invalid_type", "logprobs"),
])
def test_bad_requests(server, path, body, status, code, param):
    err = error_of(*call(server, "POST", path, body)[::2], status, code)
    assert err["param"] == param
    if code == "context_length_exceeded":  # the message gives both token counts
        assert re.search(r"\b2\d{3}\b.*\b2048\b", err["message"]), err["message"]


def test_any_model_name_unless_strict(server, start_server):
    """One model: any name serves, as llama-server does; --strict-model restores the 404."""
    status, _, data = call(server, "POST", "/v1/chat/completions", chat_body("hi", model="gpt-4o", max_tokens=2))
    assert status == 200, data
    strict = start_server("--parallel", "1", "-c", "512", "--alias", "smol", "--strict-model")
    error_of(*call(strict, "POST", "/v1/chat/completions", chat_body("hi", model="gpt-4o"))[::2], 404,
             "model_not_found")
    status, _, data = call(strict, "POST", "/v1/chat/completions", chat_body("hi", model="smol", max_tokens=2))
    assert status == 200, data


def test_cors(server, start_server):
    """--cors-origin: a preflight answers 204 with the methods and the asked headers, answers and streams carry
    the origin; without it, OPTIONS is 405 and no answer carries CORS headers."""
    pre = {"Origin": "http://page.example", "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "authorization, content-type"}
    status, headers, _ = call(server, "OPTIONS", "/v1/chat/completions", headers=pre)
    assert status == 405 and "Access-Control-Allow-Origin" not in headers
    status, headers, _ = call(server, "POST", "/v1/chat/completions", chat_body("hi", max_tokens=1),
                              headers={"Origin": "http://page.example"})
    assert status == 200 and "Access-Control-Allow-Origin" not in headers
    cors = start_server("--parallel", "1", "-c", "512", "--cors-origin", "http://page.example", "--api-key", "k")
    status, headers, _ = call(cors, "OPTIONS", "/v1/chat/completions", key=None, headers=pre)
    assert status == 204, status
    assert headers["Access-Control-Allow-Origin"] == "http://page.example"
    assert headers["Access-Control-Allow-Methods"] == "POST, OPTIONS"
    assert headers["Access-Control-Allow-Headers"] == "authorization, content-type"
    auth = {"Origin": "http://page.example", "Authorization": "Bearer k"}
    status, headers, data = call(cors, "POST", "/v1/chat/completions",
                                 chat_body("hi", max_tokens=2, stream=True), key=None, headers=auth)
    assert status == 200 and headers["Access-Control-Allow-Origin"] == "http://page.example", data
    assert data.rstrip().endswith(b"data: [DONE]")
    status, headers, _ = call(cors, "GET", "/v1/models", key=None,
                              headers={"Origin": "http://other.example", "Authorization": "Bearer k"})
    assert status == 200 and "Access-Control-Allow-Origin" not in headers
    # a wrong key still gets its 401, with the header, so the page can read the error
    status, headers, _ = call(cors, "GET", "/v1/models", key=None, headers={"Origin": "http://page.example"})
    assert status == 401 and headers["Access-Control-Allow-Origin"] == "http://page.example"


def test_routing_errors(server):
    error_of(*call(server, "GET", "/v1/nothing")[::2], 404, "not_found")
    status, headers, data = call(server, "GET", "/v1/chat/completions")
    error_of(status, data, 405, "method_not_allowed")
    assert headers["Allow"] == "POST"
    error_of(*call(server, "POST", "/health", b"{}")[::2], 405)


def test_body_over_the_limit(server, start_server):
    big = json.dumps({"prompt": "x" * (1 << 20)})  # over the default 1 MiB
    error_of(*call(server, "POST", "/v1/completions", big)[::2], 413, "request_too_large")
    small = start_server("-c", "2048", "--parallel", "1", "--max-body", "100")
    error_of(*call(small, "POST", "/v1/completions", {"prompt": "y" * 200})[::2], 413, "request_too_large")
    status, _, _ = call(small, "POST", "/tokenize", {"content": "fits"})
    assert status == 200
    assert small.stop() == 0


def test_queue_full(start_server):
    srv = start_server("-c", "2048", "--parallel", "1", "--queue", "1")
    # one request in the slot, one waiting: the third is refused
    held = [open_request(srv, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 1000,
                                                  "ignore_eos": True, "stream": True}) for _ in range(2)]
    # (the slot generating: the engine has published it busy since the first step)
    wait_for(lambda: metrics(srv)["hearth_requests_waiting"] == 1 and get_json(srv, "/slots")[0]["state"] == "generate",
             "one request generating, one waiting")
    status, headers, data = call(srv, "POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 2})
    error_of(status, data, 503, "server_busy")
    assert headers["Retry-After"] == "1"
    for s in held:
        s.close()
    wait_for(lambda: all_idle(srv), "every slot idle")
    assert call(srv, "POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 2})[0] == 200
    assert srv.stop() == 0


# ------------------------------------------------------ vanishing clients --

def open_request(server, path, body):
    """Sends a request on a raw socket and returns the socket, unread."""
    payload = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\n"
              f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload)
    return s


def wait_for(cond, what, timeout=30.0):
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, f"timed out waiting for {what}"
        time.sleep(0.01)
    return time.monotonic() - t0


def all_idle(server):
    m = metrics(server)
    return (all(s["state"] == "idle" for s in get_json(server, "/slots")) and m["hearth_requests_running"] == 0
            and m["hearth_requests_waiting"] == 0)


def random_prompt(seed, n_words):
    """Words no earlier request began with, so no cached prefix shortens the prefill."""
    rng = random.Random(seed)
    words = ["river", "stone", "light", "garden", "number", "paper", "window", "silver", "orange", "music",
             "forest", "market", "winter", "letter", "circle", "engine", "button", "planet", "candle", "bridge"]
    return " ".join(rng.choice(words) for _ in range(n_words))


@pytest.mark.parametrize("stream", [False, True])
def test_client_gone_during_prefill(server, asan, stream):
    prompt = random_prompt(1000 + stream, 1700)
    n = len(json.loads(call(server, "POST", "/tokenize", {"content": prompt})[2])["tokens"])
    assert 1500 < n < 1950, n
    s = open_request(server, "/v1/completions", {"prompt": prompt, "max_tokens": 50, "stream": stream})
    wait_for(lambda: any(x["state"] == "prefill" for x in get_json(server, "/slots")), "prefill")
    s.close()
    wait_for(lambda: all_idle(server), "every slot idle", timeout=5.0 if asan else 1.0)


@pytest.mark.parametrize("stream", [False, True])
def test_client_gone_during_decode(server, asan, stream):
    s = open_request(server, "/v1/chat/completions", chat_body(f"Tell a long story ({stream}).", max_tokens=1500,
                                                               ignore_eos=True, stream=stream))
    if stream:
        got = b""
        while got.count(b"data: ") < 4:  # headers, the role chunk and some text
            got += s.recv(4096)
    wait_for(lambda: any(x["state"] == "generate" and x["n_generated"] > 3 for x in get_json(server, "/slots")),
             "decode")
    s.close()
    wait_for(lambda: all_idle(server), "every slot idle", timeout=5.0 if asan else 1.0)
    assert server.proc.poll() is None


# -------------------------------------------------------------------- load --

def test_32_concurrent_streams(start_server, asan):
    # 8 slots and few distinct prompts (their prefixes come from the cache):
    # the engine's work per request stays small, so 564 requests take seconds
    srv = start_server("--api-key", KEY, "--alias", ALIAS, "-c", "4096", "--parallel", "8", "-b", "64")
    prompts = [f"Say something about the number {i}." for i in range(4)]

    def one(client, i):
        with_usage = i % 2 == 0
        chunks = list(client.chat.completions.create(
            model=ALIAS, messages=[{"role": "user", "content": prompts[i % len(prompts)]}], max_tokens=4,
            stream=True, **({"stream_options": {"include_usage": True}} if with_usage else {})))
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assert len(finishes) == 1 and finishes[0] in ("stop", "length")
        if with_usage:
            assert 1 <= chunks[-1].usage.completion_tokens <= 4
        return True

    def errors_of_round(client, n):
        def safe(i):
            try:
                return one(client, i)
            except Exception as e:  # counted, not raised: the test reports every error
                return repr(e)
        with ThreadPoolExecutor(32) as pool:
            return [r for r in pool.map(safe, range(n)) if r is not True]

    with openai.OpenAI(base_url=srv.url + "/v1", api_key=KEY, max_retries=0, timeout=120) as client:
        assert errors_of_round(client, 64) == []  # warm-up: thread stacks, allocator arenas
        before = srv.rss_kib()
        n = 200 if asan else 500
        assert errors_of_round(client, n) == []
        after = srv.rss_kib()
    wait_for(lambda: all_idle(srv), "every slot idle", timeout=5)
    assert metrics(srv)["hearth_requests_finished_total"] == 64 + n
    if not asan:
        assert after - before < 8 * 1024, f"RSS grew from {before} to {after} KiB over 500 requests"
    assert srv.stop() == 0


# ---------------------------------------------------------------- SIGTERM --

def test_sigterm_during_streams(start_server):
    srv = start_server("-c", "4096", "--parallel", "2")
    outputs = [b""] * 3

    def stream(i):
        s = open_request(srv, "/v1/completions", {"prompt": f"Story {i}:", "max_tokens": 2000, "ignore_eos": True,
                                                  "stream": True})
        while True:
            got = s.recv(65536)
            if not got:
                break
            outputs[i] += got
        s.close()

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(3)]  # two running, one waiting
    for t in threads:
        t.start()
    wait_for(lambda: sum(o.count(b"data: ") for o in outputs) >= 6, "streams running")
    rc = srv.stop(signal.SIGTERM, timeout=30)
    for t in threads:
        t.join(10)
    assert rc == 0, srv.stderr()
    for out in outputs:
        # every client gets a proper end: the chunked body closes after an
        # error event and [DONE]
        assert out.startswith(b"HTTP/1.1 200"), out[:200]
        assert b'"code":"server_shutting_down"' in out and out.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n"), out[-300:]
