"""Model.embed() on all-MiniLM-L6-v2 against llama.cpp's vectors
(tests/reference/embedding_reference.json: mean pooled, not normalised).

Environment:
  HEARTH_TEST_MINILM     all-minilm-l6-v2-f16.gguf (default: beside HEARTH_TEST_MODEL,
                         else the repository's models/); the tests skip without it
  HEARTH_TEST_EMBEDDING_REFERENCE  the reference (default: the repository's)
  HEARTH_TEST_MODEL      a generation model, for pooling="last" (optional)
"""

from __future__ import annotations

import math
import json
import os
import threading
from pathlib import Path

import pytest

import hearth

TOP = Path(__file__).resolve().parents[3]
MODEL = os.environ.get("HEARTH_TEST_MODEL", "")
MINILM = os.environ.get("HEARTH_TEST_MINILM") or str(
    Path(MODEL).parent / "all-minilm-l6-v2-f16.gguf" if MODEL else TOP / "models" / "all-minilm-l6-v2-f16.gguf")
REFERENCE = os.environ.get("HEARTH_TEST_EMBEDDING_REFERENCE",
                           str(TOP / "tests" / "reference" / "embedding_reference.json"))
NAMES = ("hello", "accents_fr", "long")  # short, accented, 212 tokens


@pytest.fixture(scope="module")
def minilm():
    if not os.path.isfile(MINILM):
        pytest.skip(f"{MINILM} not found: scripts/fetch_model.sh minilm, or set HEARTH_TEST_MINILM")
    with hearth.Model(MINILM) as m:
        yield m


@pytest.fixture(scope="module")
def cases():
    if not os.path.isfile(REFERENCE):
        pytest.skip("the embedding reference is not found: set HEARTH_TEST_EMBEDDING_REFERENCE")
    with open(REFERENCE) as f:
        by_name = {c["name"]: c for c in json.load(f)["texts"]}
    return [by_name[n] for n in NAMES]


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / (norm(a) * norm(b))


def test_embed_matches_llama_cpp(minilm, cases):
    got = minilm.embed([c["text"] for c in cases])
    assert isinstance(got, list) and len(got) == len(cases)
    for c, v in zip(cases, got):
        assert isinstance(v, list) and len(v) == minilm.n_embd == 384
        assert all(isinstance(x, float) for x in v)
        assert abs(norm(v) - 1) < 1e-5, c["name"]
        ref = [x / norm(c["llama_cpp"]) for x in c["llama_cpp"]]
        assert cosine(v, ref) >= 0.9999, c["name"]
        assert max(abs(x - y) for x, y in zip(v, ref)) < 2e-3, c["name"]


def test_embed_str_and_options(minilm, cases):
    one = minilm.embed(cases[0]["text"])
    assert isinstance(one, list) and len(one) == 384 and isinstance(one[0], float)
    assert one == minilm.embed([cases[0]["text"]])[0] == minilm.embed(cases[0]["text"], pooling="mean")
    assert minilm.embed([]) == []
    raw = minilm.embed([c["text"] for c in cases], normalize=False)
    for c, v in zip(cases, raw):
        assert cosine(v, c["llama_cpp"]) >= 0.9999, c["name"]
        assert abs(norm(v) - norm(c["llama_cpp"])) < 1e-3 * norm(c["llama_cpp"]), c["name"]
    cls = minilm.embed(cases[0]["text"], pooling="cls")
    assert abs(norm(cls) - 1) < 1e-5 and cosine(cls, one) < 0.999


def test_embed_numpy(minilm, cases):
    np = pytest.importorskip("numpy")
    texts = [c["text"] for c in cases]
    a = minilm.embed_numpy(texts)
    assert a.shape == (3, 384) and a.dtype == np.float32
    assert np.array_equal(a, np.array(minilm.embed(texts), dtype=np.float32))
    assert minilm.embed_numpy(texts[0]).shape == (384,)


def test_embed_errors(minilm):
    with pytest.raises(hearth.ContextFullError, match="602 tokens.*512"):
        minilm.embed(["short", "word " * 600])
    with pytest.raises(hearth.InvalidArgumentError, match="pooling"):
        minilm.embed("x", pooling="max")
    with pytest.raises(hearth.InvalidArgumentError, match="none"):
        minilm.embed("x", pooling="none")
    with pytest.raises(hearth.InvalidArgumentError, match="str"):
        minilm.embed(["x", 3])
    # an encoder cannot generate
    with pytest.raises(hearth.InvalidArgumentError, match="embedding model"):
        minilm.generate("Hello", max_tokens=4)


def test_embed_threads(minilm, cases):
    """Calls from several threads at once each get their own context."""
    want = minilm.embed([c["text"] for c in cases])
    got, errors = {}, []

    def work(i):
        try:
            got[i] = minilm.embed([c["text"] for c in cases])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for v in got.values():
        assert all(cosine(a, b) > 0.999999 for a, b in zip(v, want))


def test_closed_model_refuses_embed(cases):
    if not os.path.isfile(MINILM):
        pytest.skip("no MiniLM model")
    m = hearth.Model(MINILM)
    m.close()
    with pytest.raises(hearth.InvalidArgumentError, match="closed"):
        m.embed("x")


def test_generation_model_embeds_with_pooling():
    if not os.path.isfile(MODEL):
        pytest.skip("HEARTH_TEST_MODEL is not set to a model file")
    with hearth.Model(MODEL, n_ctx=256) as m:
        with pytest.raises(hearth.InvalidArgumentError, match="pooling"):
            m.embed("Hello")
        a, b = m.embed(["Hello", "The capital of France"], pooling="last")
        assert len(a) == m.n_embd and abs(norm(a) - 1) < 1e-4 and cosine(a, b) < 0.9999
        assert m.generate("Hello", max_tokens=2, temperature=0)  # the engine still generates
