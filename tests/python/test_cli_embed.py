"""`hearth embed` on all-MiniLM-L6-v2 against llama.cpp's vectors
(tests/reference/embedding_reference.json: mean pooled, not normalised),
its --json shape, its options and its errors. Skips without the model
(scripts/fetch_model.sh minilm; HEARTH_MODEL_MINILM names another path)."""
import json
import math
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "reference" / "embedding_reference.json"


@pytest.fixture(scope="module")
def minilm():
    path = Path(os.environ.get("HEARTH_MODEL_MINILM", ROOT / "models" / "all-minilm-l6-v2-f16.gguf"))
    if not path.exists():
        pytest.skip(f"{path} not found: run scripts/fetch_model.sh minilm")
    return path


@pytest.fixture(scope="module")
def cases():
    with open(REFERENCE) as f:
        return json.load(f)["texts"]


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def vectors(stdout):
    return [[float(x) for x in line.split()] for line in stdout.decode().splitlines()]


def embed(run_hearth, *args, **kw):
    out = run_hearth("embed", *args, **kw)
    assert out.returncode == 0, out.stderr.decode()
    return out


def test_every_reference_text_in_one_call(run_hearth, minilm, cases):
    """All 17 texts batched together (several sequences of one context):
    each vector is llama.cpp's, L2-normalised, to cosine >= 0.9999."""
    got = vectors(embed(run_hearth, minilm, "--", *[c["text"] for c in cases]).stdout)
    assert len(got) == len(cases)
    for c, v in zip(cases, got):
        assert len(v) == 384
        assert abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5, c["name"]
        assert cosine(v, unit(c["llama_cpp"])) >= 0.9999, c["name"]
        assert max(abs(x - y) for x, y in zip(v, unit(c["llama_cpp"]))) < 2e-3, c["name"]


def test_batched_equals_one_at_a_time(run_hearth, minilm, cases):
    texts = [c["text"] for c in cases[:5]]
    together = vectors(embed(run_hearth, minilm, "--", *texts).stdout)
    for text, v in zip(texts, together):
        alone = vectors(embed(run_hearth, minilm, "--", text).stdout)[0]
        assert cosine(alone, v) >= 0.999999
        assert max(abs(x - y) for x, y in zip(alone, v)) < 1e-5


def test_no_normalize_is_the_raw_reference(run_hearth, minilm, cases):
    picked = [c for c in cases if c["name"] in ("hello", "accents_fr", "cjk", "long")]
    got = vectors(embed(run_hearth, minilm, "--no-normalize", "--", *[c["text"] for c in picked]).stdout)
    for c, v in zip(picked, got):
        ref = c["llama_cpp"]
        assert cosine(v, ref) >= 0.9999, c["name"]
        norm = math.sqrt(sum(x * x for x in ref))
        assert abs(math.sqrt(sum(x * x for x in v)) - norm) < 1e-3 * norm, c["name"]
        assert max(abs(x - y) for x, y in zip(v, ref)) < 5e-3, c["name"]


def test_json_shape(run_hearth, minilm, cases):
    out = embed(run_hearth, minilm, "--json", "Hello world", "A man is eating food.")
    doc = json.loads(out.stdout)
    assert doc["model"] == str(minilm)
    assert doc["n_embd"] == 384
    assert [d["index"] for d in doc["data"]] == [0, 1]
    assert all(len(d["embedding"]) == 384 for d in doc["data"])
    ref = {c["text"]: c["llama_cpp"] for c in cases}
    assert cosine(doc["data"][0]["embedding"], ref["Hello world"]) >= 0.9999
    assert cosine(doc["data"][1]["embedding"], ref["A man is eating food."]) >= 0.9999
    # the same numbers as the plain output
    plain = vectors(embed(run_hearth, minilm, "Hello world").stdout)[0]
    assert plain == doc["data"][0]["embedding"]


def test_file_and_stdin(run_hearth, minilm, cases, tmp_path):
    texts = [c["text"] for c in cases if "\n" not in c["text"] and c["text"]][:6]
    f = tmp_path / "texts.txt"
    f.write_text("\r\n".join(texts) + "\n", encoding="utf-8")
    from_file = vectors(embed(run_hearth, minilm, "-f", f).stdout)
    from_stdin = vectors(embed(run_hearth, minilm, "-f", "-", input="\n".join(texts).encode()).stdout)
    from_args = vectors(embed(run_hearth, minilm, "--", *texts).stdout)
    assert len(from_file) == len(texts)
    assert from_file == from_args == from_stdin
    # arguments first, then the file's lines
    both = vectors(embed(run_hearth, minilm, "Hello world", "-f", f).stdout)
    assert len(both) == len(texts) + 1 and both[1:] == from_file


def test_pooling_override(run_hearth, minilm):
    mean = vectors(embed(run_hearth, minilm, "Hello world").stdout)[0]
    assert vectors(embed(run_hearth, minilm, "--pooling", "mean", "Hello world").stdout)[0] == mean
    cls = vectors(embed(run_hearth, minilm, "--pooling", "cls", "Hello world").stdout)[0]
    last = vectors(embed(run_hearth, minilm, "--pooling", "last", "Hello world").stdout)[0]
    for v in (cls, last):
        assert abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5
        assert cosine(v, mean) < 0.999
    assert cosine(cls, last) < 0.999


def test_generation_model_needs_pooling(run_hearth, model_path):
    out = run_hearth("embed", model_path, "Hello")
    assert out.returncode == 1
    assert b"--pooling" in out.stderr and len(out.stderr.decode().strip().splitlines()) == 1
    got = vectors(embed(run_hearth, model_path, "--pooling", "last", "Hello", "The capital of France").stdout)
    assert len(got) == 2 and all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-4 for v in got)
    assert cosine(got[0], got[1]) < 0.9999


def test_errors(run_hearth, minilm, tmp_path):
    long_text = "word " * 600  # 602 tokens, over the 512 of MiniLM's context
    out = run_hearth("embed", minilm, "short", long_text)
    assert out.returncode == 1 and out.stdout == b""
    err = out.stderr.decode().strip()
    assert len(err.splitlines()) == 1 and "text 1 is 602 tokens" in err and "512" in err, err
    for args, status, words in [
        ((minilm,), 2, "TEXT"),
        ((minilm, "--pooling", "max", "x"), 2, "--pooling"),
        ((minilm, "--pooling", "none", "x"), 1, "none"),
        ((minilm, "--bogus", "x"), 2, "unknown option"),
        ((minilm, "-f", tmp_path / "missing.txt"), 1, "cannot open"),
        ((tmp_path / "missing.gguf", "x"), 1, "missing.gguf"),
    ]:
        out = run_hearth("embed", *args)
        assert out.returncode == status, (args, out.stderr)
        assert words in out.stderr.decode(), (args, out.stderr)
        assert out.stdout == b""


def test_help(run_hearth):
    out = run_hearth("embed", "--help")
    assert out.returncode == 0 and b"--pooling" in out.stdout and b"--no-normalize" in out.stdout
    assert b"embed MODEL" in run_hearth("--help").stdout
