"""`hearth serve` with all-MiniLM-L6-v2: POST /v1/embeddings through the
official `openai` client (a string, a list, token ids, float and base64) and
LangChain's OpenAIEmbeddings, every vector against llama.cpp's in
tests/reference/embedding_reference.json (L2-normalised, as the server
normalises), 8 concurrent clients equal to one at a time, the refusals in
OpenAI's error shape, /v1/models' n_embd, the 400s of an embedding model
asked to generate and of a generation model asked to embed, and a decoder
serving embeddings with --embeddings --pooling. Skips without
the model (scripts/fetch_model.sh minilm; HEARTH_MODEL_MINILM names another
path)."""
import base64
import http.client
import json
import os
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import openai
import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "reference" / "embedding_reference.json"
ALIAS = "minilm"
N_EMBD = 384


@pytest.fixture(scope="module")
def minilm():
    path = Path(os.environ.get("HEARTH_MODEL_MINILM", ROOT / "models" / "all-minilm-l6-v2-f16.gguf"))
    if not path.exists():
        pytest.skip(f"{path} not found: run scripts/fetch_model.sh minilm")
    return path


@pytest.fixture(scope="module")
def cases():
    return json.loads(REFERENCE.read_text())["texts"]


@pytest.fixture(scope="module")
def asan(server_bin):
    """Whether an ASan build serves (scripts/test.sh reruns this file so): its
    forward passes are many times slower, so the loads shrink."""
    return b"__asan_init" in server_bin.read_bytes()


@pytest.fixture(scope="module")
def server(start_server, minilm):
    # 4 slots of 512 positions (the model's context)
    return start_server("--alias", ALIAS, "--parallel", "4", "-c", "2048", model=minilm)


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120) as c:
        yield c


def call(server, method, path, body=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, data


def error_of(status, data, want_status, code=None, param=None):
    assert status == want_status, (status, data)
    err = json.loads(data)["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"] and err["type"]
    if code:
        assert err["code"] == code, err
    if param:
        assert err["param"] == param, err
    return err


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def check_vector(got, case):
    got = np.asarray(got, dtype=np.float64)
    want = unit(case["llama_cpp"])
    assert got.shape == (N_EMBD,), got.shape
    assert abs(np.linalg.norm(got) - 1) < 1e-4, np.linalg.norm(got)
    cos = float(got @ want)
    diff = float(np.max(np.abs(got - want)))
    assert cos >= 0.9999 and diff < 5e-3, (case["name"], cos, diff)


def test_models_lists_n_embd(server):
    status, data = call(server, "GET", "/v1/models")
    assert status == 200
    m = json.loads(data)["data"][0]
    assert m["id"] == ALIAS and m["meta"]["n_embd"] == N_EMBD, m


def test_one_string_and_the_response_shape(server, cases):
    case = next(c for c in cases if c["name"] != "empty")
    status, data = call(server, "POST", "/v1/embeddings", {"input": case["text"], "model": ALIAS})
    assert status == 200, data
    res = json.loads(data)
    assert set(res) == {"object", "data", "model", "usage"} and res["object"] == "list" and res["model"] == ALIAS
    assert res["usage"] == {"prompt_tokens": case["n_tokens"], "total_tokens": case["n_tokens"]}
    (item,) = res["data"]
    assert item["object"] == "embedding" and item["index"] == 0
    check_vector(item["embedding"], case)


def test_openai_client_every_text_as_a_list(client, cases):
    res = client.embeddings.create(model=ALIAS, input=[c["text"] for c in cases])
    assert [d.index for d in res.data] == list(range(len(cases)))
    assert res.usage.prompt_tokens == res.usage.total_tokens == sum(c["n_tokens"] for c in cases)
    for d, case in zip(res.data, cases):
        check_vector(d.embedding, case)


def test_openai_client_token_ids(client, cases):
    one = client.embeddings.create(model=ALIAS, input=cases[1]["tokens"])
    check_vector(one.data[0].embedding, cases[1])
    many = client.embeddings.create(model=ALIAS, input=[c["tokens"] for c in cases])
    for d, case in zip(many.data, cases):
        check_vector(d.embedding, case)


def test_openai_client_base64_equals_float(client, server, cases):
    texts = [c["text"] for c in cases[:5]]
    floats = client.embeddings.create(model=ALIAS, input=texts, encoding_format="float")
    # the client decodes base64 itself (numpy when installed): check the raw bytes too
    status, data = call(server, "POST", "/v1/embeddings", {"input": texts, "encoding_format": "base64"})
    assert status == 200, data
    for item, f in zip(json.loads(data)["data"], floats.data):
        raw = base64.b64decode(item["embedding"])
        assert len(raw) == 4 * N_EMBD
        # the JSON numbers round to the same float32 values
        assert np.array_equal(np.array(struct.unpack(f"<{N_EMBD}f", raw), dtype=np.float32),
                              np.asarray(f.embedding, dtype=np.float32))
    # the client asks for base64 by default and decodes it; asked explicitly it hands the string over
    default = client.embeddings.create(model=ALIAS, input=texts)
    b64 = client.embeddings.create(model=ALIAS, input=texts, encoding_format="base64")
    for d, b, f in zip(default.data, b64.data, floats.data):
        want = np.asarray(f.embedding, dtype=np.float32)
        assert np.array_equal(np.asarray(d.embedding, dtype=np.float32), want)
        assert np.array_equal(np.frombuffer(base64.b64decode(b.embedding), dtype="<f4"), want)


def test_dimensions_equal_to_n_embd_is_accepted(client, cases):
    res = client.embeddings.create(model=ALIAS, input=cases[1]["text"], dimensions=N_EMBD)
    check_vector(res.data[0].embedding, cases[1])


def test_concurrent_clients_equal_one_at_a_time(server, cases, asan):
    texts = [c["text"] for c in cases][: 6 if asan else None]
    alone = {}
    for t in texts:
        status, data = call(server, "POST", "/v1/embeddings", {"input": t})
        assert status == 200, data
        alone[t] = json.loads(data)["data"][0]["embedding"]

    def client_run(k):
        out = []
        for i in range(len(texts)):
            t = texts[(i + k) % len(texts)]
            status, data = call(server, "POST", "/v1/embeddings", {"input": t})
            assert status == 200, data
            out.append((t, json.loads(data)["data"][0]["embedding"]))
        return out

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(client_run, range(8)))
    for out in results:
        for t, v in out:
            # batched with other clients' texts: the same vector to float rounding
            assert np.max(np.abs(np.asarray(v) - np.asarray(alone[t]))) < 1e-5, t


def test_langchain_openai_embeddings(server, cases):
    langchain_openai = pytest.importorskip("langchain_openai")
    emb = langchain_openai.OpenAIEmbeddings(model=ALIAS, base_url=server.url + "/v1", api_key="none",
                                            check_embedding_ctx_length=False, max_retries=0)
    docs = emb.embed_documents([c["text"] for c in cases[:6]])
    for v, case in zip(docs, cases[:6]):
        check_vector(v, case)
    check_vector(emb.embed_query(cases[2]["text"]), cases[2])


def test_errors_in_openai_shape(server, asan):
    post = lambda body: call(server, "POST", "/v1/embeddings", body)  # noqa: E731
    error_of(*post({}), 400, "missing_field", "input")
    error_of(*post({"input": []}), 400, "invalid_value", "input")
    error_of(*post({"input": [[]]}), 400, "invalid_value", "input")
    error_of(*post({"input": 42}), 400, "invalid_type", "input")
    error_of(*post({"input": ["a", 1]}), 400, "invalid_type", "input")
    error_of(*post({"input": [{"text": "a"}]}), 400, "invalid_type", "input")
    error_of(*post({"input": [101, 30522, 102]}), 400, "invalid_value", "input")  # n_vocab is 30522
    error_of(*post({"input": [101, -1, 102]}), 400, None, "input")
    error_of(*post({"input": ["a"] * 2049}), 400, "invalid_value", "input")
    # 600 words and [CLS] [SEP]: over a slot's 512 positions
    err = error_of(*post({"input": "hello " * 600}), 400, "context_length_exceeded", "input")
    assert "602" in err["message"] and "512" in err["message"], err
    error_of(*post({"input": "a", "dimensions": 128}), 400, "unsupported_parameter", "dimensions")
    error_of(*post({"input": "a", "encoding_format": "int8"}), 400, "invalid_value", "encoding_format")
    assert post({"input": "a", "model": "text-embedding-3-small"})[0] == 200  # any name serves one model
    error_of(*post("{not json"), 400)
    # a good request of the most inputs still works after them
    n = 64 if asan else 2048
    status, data = post({"input": ["a"] * n})
    assert status == 200 and len(json.loads(data)["data"]) == n


def test_chat_on_an_embedding_model_is_400(server, client):
    for path, body in (("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
                       ("/v1/completions", {"prompt": "hi"})):
        err = error_of(*call(server, "POST", path, body), 400)
        assert "embeddings" in err["message"], err
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "hi"}])


def test_embeddings_on_a_generation_model_is_400(start_server):
    srv = start_server("-c", "1024", "--parallel", "1")
    err = error_of(*call(srv, "POST", "/v1/embeddings", {"input": "hi"}), 400)
    assert "does not compute embeddings" in err["message"], err
    assert "meta" not in json.loads(call(srv, "GET", "/v1/models")[1])["data"][0]
    assert srv.stop() == 0


def test_a_decoder_serves_embeddings_on_request(start_server, run_hearth, model_path):
    # without a pooling type in the file, --pooling is needed: one line, exit 1
    res = run_hearth("serve", model_path, "--embeddings", "--port", "0", "-c", "1024")
    lines = res.stderr.decode().strip().splitlines()
    assert res.returncode == 1 and "--pooling" in lines[-1], lines
    srv = start_server("--embeddings", "--pooling", "last", "-c", "2048", "--parallel", "2")
    status, data = call(srv, "POST", "/v1/embeddings", {"input": ["Hello world", "The capital of France"]})
    assert status == 200, data
    vecs = [np.asarray(d["embedding"]) for d in json.loads(data)["data"]]
    n_embd = json.loads(call(srv, "GET", "/v1/models")[1])["data"][0]["meta"]["n_embd"]
    assert all(v.shape == (n_embd,) and abs(np.linalg.norm(v) - 1) < 1e-4 for v in vecs)
    assert float(vecs[0] @ vecs[1]) < 0.9999
    error_of(*call(srv, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}), 400)
    assert srv.stop() == 0
