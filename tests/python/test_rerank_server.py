"""`hearth serve` with a reranker (tests/reference/encoder/tiny-reranker-f32.gguf,
a BERT cross-encoder with a classification head and pooling_type rank):
POST /v1/rerank (and its aliases) in llama-server's and Jina's shape, every
score against llama.cpp's in tests/reference/encoder/encoder_reference.json
(make_references.py: llama-cpp-python's pooling rank on the pairs as
llama-server formats them), sorted best first, top_n, return_documents,
Hugging Face TEI's `texts` form, usage counting llama.cpp's pair tokens,
16 concurrent clients equal to one at a time, the refusals in OpenAI's
error shape (no query, no documents, a document not a string, too many
documents, a model that is not a reranker), and the 400s of a reranker
asked for embeddings or text. Also `hearth rerank` on the same model."""
import http.client
import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# |hearth - llama.cpp| a score may differ by: hearth attends over its F16 KV
# cache, llama.cpp over F32 K and V, and llama.cpp's GELU goes through an F16
# table (tests/test_tiny_encoders.c: max_diff_for, half the F32 bound)
TOL = 1e-3
ENCODERS = ROOT / "tests" / "reference" / "encoder"
ALIAS = "reranker"


@pytest.fixture(scope="module")
def reference():
    data = json.loads((ENCODERS / "encoder_reference.json").read_text())
    models = data["models"] if isinstance(data, dict) and "models" in data else data
    rec = next(m for m in models if m.get("rank") and m["file"].endswith("-f32.gguf"))
    pairs = rec["rank"]["pairs"]
    query = pairs[0]["query"]
    assert all(p["query"] == query for p in pairs)
    return {"file": ENCODERS / Path(rec["file"]).name, "query": query,
            "documents": [p["document"] for p in pairs], "tokens": [p["tokens"] for p in pairs],
            "scores": [s[0] for s in rec["rank"]["scores"]]}


@pytest.fixture(scope="module")
def server(start_server, reference):
    return start_server("--alias", ALIAS, "--parallel", "4", "-c", "512", model=reference["file"])


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
    assert isinstance(err["message"], str) and err["message"]
    if code:
        assert err["code"] == code, err
    if param:
        assert err["param"] == param, err
    return err


def expected_order(reference):
    s = reference["scores"]
    return sorted(range(len(s)), key=lambda i: -s[i])


def test_rerank_scores_equal_llama_cpp(server, reference):
    status, data = call(server, "POST", "/v1/rerank",
                        {"model": ALIAS, "query": reference["query"], "documents": reference["documents"]})
    assert status == 200, data
    res = json.loads(data)
    assert set(res) == {"model", "object", "usage", "results"} and res["model"] == ALIAS and res["object"] == "list"
    n_tokens = sum(len(t) for t in reference["tokens"])
    assert res["usage"] == {"prompt_tokens": n_tokens, "total_tokens": n_tokens}
    results = res["results"]
    assert [r["index"] for r in results] == expected_order(reference)
    for r in results:
        assert set(r) == {"index", "relevance_score"}
        want = reference["scores"][r["index"]]
        assert abs(r["relevance_score"] - want) <= TOL, (r, want)
    scores = [r["relevance_score"] for r in results]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("path", ["/rerank", "/v1/reranking", "/reranking"])
def test_aliases(server, reference, path):
    status, data = call(server, "POST", path, {"query": reference["query"], "documents": reference["documents"]})
    assert status == 200, data
    assert [r["index"] for r in json.loads(data)["results"]] == expected_order(reference)


def test_top_n_and_return_documents(server, reference):
    body = {"query": reference["query"], "documents": reference["documents"], "top_n": 2, "return_documents": True}
    status, data = call(server, "POST", "/v1/rerank", body)
    assert status == 200, data
    results = json.loads(data)["results"]
    assert [r["index"] for r in results] == expected_order(reference)[:2]
    for r in results:
        assert r["document"] == {"text": reference["documents"][r["index"]]}
    # top_n beyond the documents gives them all
    body["top_n"] = 100
    status, data = call(server, "POST", "/v1/rerank", body)
    assert len(json.loads(data)["results"]) == len(reference["documents"])


def test_tei_form(server, reference):
    status, data = call(server, "POST", "/rerank",
                        {"query": reference["query"], "texts": reference["documents"], "return_text": True})
    assert status == 200, data
    res = json.loads(data)
    assert isinstance(res, list) and [r["index"] for r in res] == expected_order(reference)
    for r in res:
        assert set(r) == {"index", "score", "text"} and r["text"] == reference["documents"][r["index"]]
        assert abs(r["score"] - reference["scores"][r["index"]]) <= TOL


def test_concurrent_clients_equal_one_at_a_time(server, reference):
    docs = reference["documents"]

    def one(k):
        # each client its own rotation of the documents: indexes follow the request's order
        order = docs[k % len(docs):] + docs[:k % len(docs)]
        status, data = call(server, "POST", "/v1/rerank", {"query": reference["query"], "documents": order})
        assert status == 200, data
        return {order[r["index"]]: r["relevance_score"] for r in json.loads(data)["results"]}

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(32)))
    for got in results:
        for i, d in enumerate(docs):
            assert abs(got[d] - reference["scores"][i]) <= TOL, (d, got[d])


def test_errors(server, reference):
    post = lambda body: call(server, "POST", "/v1/rerank", body)  # noqa: E731
    error_of(*post({"documents": ["a"]}), 400, "missing_field", "query")
    error_of(*post({"query": 3, "documents": ["a"]}), 400, param="query")
    error_of(*post({"query": "q"}), 400, "missing_field", "documents")
    error_of(*post({"query": "q", "documents": []}), 400, "invalid_value", "documents")
    error_of(*post({"query": "q", "documents": "a"}), 400, "invalid_type", "documents")
    error_of(*post({"query": "q", "documents": ["a", 3]}), 400, "invalid_type", "documents")
    error_of(*post({"query": "q", "documents": ["a"] * 2049}), 400, "invalid_value", "documents")
    error_of(*post({"query": "q", "documents": ["a"], "top_n": 0}), 400, param="top_n")
    error_of(*post({"query": "q", "documents": ["a"], "max_chunks_per_doc": 2}), 400, "unsupported_parameter")
    error_of(*post({"query": "q", "texts": ["a"], "truncate": True}), 400, param="truncate")
    assert post({"query": "q", "texts": ["a"], "truncate": False})[0] == 200
    assert post({"query": "q", "documents": ["a"], "model": "other"})[0] == 200  # any name serves one model
    error_of(*call(server, "POST", "/v1/rerank", "{not json"), 400)
    # a pair longer than a slot's context (512 / 4 slots = 128 tokens)
    error_of(*post({"query": "q", "documents": ["paris " * 300]}), 400, "context_length_exceeded", "documents")
    # the reranker neither embeds nor generates
    error_of(*call(server, "POST", "/v1/embeddings", {"input": "a"}), 400, "model_not_embedding", "model")
    err = error_of(*call(server, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
                   400, "model_not_generative", "model")
    assert "/v1/rerank" in err["message"]
    # the server goes on
    status, _ = post({"query": reference["query"], "documents": reference["documents"]})
    assert status == 200


def test_a_model_that_is_not_a_reranker_refuses(start_server):
    bert = ENCODERS / "tiny-bert-f32.gguf"
    srv = start_server("--parallel", "2", model=bert)
    err = error_of(*call(srv, "POST", "/v1/rerank", {"query": "q", "documents": ["a"]}), 400, "model_not_reranker")
    assert "rerank" in err["message"]


def test_cli_rerank(hearth_bin, reference):
    out = subprocess.run([str(hearth_bin), "rerank", str(reference["file"]), "--json", reference["query"], "--",
                          *reference["documents"]], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)["results"]
    assert [r["index"] for r in results] == expected_order(reference)
    for r in results:
        assert r["document"] == reference["documents"][r["index"]]
        want = reference["scores"][r["index"]]
        assert abs(r["relevance_score"] - want) <= TOL
    plain = subprocess.run([str(hearth_bin), "rerank", str(reference["file"]), "--top-n", "1", reference["query"],
                            *reference["documents"]], capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    score, index, doc = plain.stdout.rstrip("\n").split("\t")
    assert int(index) == expected_order(reference)[0] and doc == reference["documents"][int(index)]
    bad = subprocess.run([str(hearth_bin), "rerank", str(ENCODERS / "tiny-bert-f32.gguf"), "q", "d"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "classification head" in bad.stderr
