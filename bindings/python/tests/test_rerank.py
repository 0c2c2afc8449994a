"""Model.rerank() on the tiny BERT cross-encoder
(tests/reference/encoder/tiny-reranker-f32.gguf) against llama.cpp's scores
(tests/reference/encoder/encoder_reference.json, make_references.py: pooling
rank on the pairs as llama-server formats them).

Environment:
  HEARTH_TEST_ENCODERS   the folder of the tiny encoders and their reference
                         (default: the repository's tests/reference/encoder)
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

import hearth

TOP = Path(__file__).resolve().parents[3]
# |hearth - llama.cpp| a score may differ by: hearth attends over its F16 KV
# cache, llama.cpp over F32 K and V, and llama.cpp's GELU goes through an F16
# table (tests/test_tiny_encoders.c: max_diff_for, half the F32 bound)
TOL = 1e-3
ENCODERS = Path(os.environ.get("HEARTH_TEST_ENCODERS", TOP / "tests" / "reference" / "encoder"))


@pytest.fixture(scope="module")
def reference():
    data = json.loads((ENCODERS / "encoder_reference.json").read_text())
    models = data["models"] if isinstance(data, dict) and "models" in data else data
    rec = next(m for m in models if m.get("rank") and m["file"].endswith("-f32.gguf"))
    pairs = rec["rank"]["pairs"]
    return {"file": str(ENCODERS / Path(rec["file"]).name), "query": pairs[0]["query"],
            "documents": [p["document"] for p in pairs], "scores": [s[0] for s in rec["rank"]["scores"]]}


@pytest.fixture(scope="module")
def reranker(reference):
    with hearth.Model(reference["file"]) as m:
        yield m


def close(got, want):
    return abs(got - want) <= TOL


def test_rerank_equals_llama_cpp(reranker, reference):
    scores = reranker.rerank(reference["query"], reference["documents"])
    assert isinstance(scores, list) and len(scores) == len(reference["documents"])
    for got, want in zip(scores, reference["scores"]):
        assert isinstance(got, float) and close(got, want), (got, want)
    # one document at a time gives the same scores
    for doc, want in zip(reference["documents"], reference["scores"]):
        (got,) = reranker.rerank(reference["query"], [doc])
        assert close(got, want)
    assert reranker.rerank(reference["query"], []) == []


def test_rerank_from_threads(reranker, reference):
    out = [None] * 4

    def run(k):
        out[k] = reranker.rerank(reference["query"], reference["documents"])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for scores in out:
        assert all(close(g, w) for g, w in zip(scores, reference["scores"]))


def test_rerank_refusals(reranker, reference):
    with pytest.raises(hearth.InvalidArgumentError):
        reranker.rerank(3, ["a"])
    with pytest.raises(hearth.InvalidArgumentError):
        reranker.rerank("q", "a document, not a list")
    with pytest.raises(hearth.InvalidArgumentError):
        reranker.rerank("q", ["a", 3])
    # a reranker gives no embeddings
    with pytest.raises(hearth.InvalidArgumentError):
        reranker.embed("a")
    # an encoder without a classification head does not rerank
    with hearth.Model(str(ENCODERS / "tiny-bert-f32.gguf")) as bert:
        with pytest.raises(hearth.InvalidArgumentError, match="classification head"):
            bert.rerank("q", ["a"])
