#!/usr/bin/env python3
"""Writes tests/reference/encoder/encoder_reference.json: llama.cpp's hidden
states, pooled vectors and reranker scores for the tiny encoders that
make_models.py writes, checked by tests/test_tiny_encoders.c.

Usage: python3 tests/reference/encoder/make_references.py [--out FILE] [--threads N]
       python3 tests/reference/encoder/make_references.py --check
(--check recomputes everything and compares it with the committed file:
token ids exactly, values to 1e-5.) Needs numpy, gguf-py and
llama-cpp-python==0.3.36 built from its sdist, as
tests/reference/make_embedding_reference.py's docstring builds it (AVX2, no
AVX-512, in /tmp/embref/venv). Run make_models.py first. The fixture is
committed, so nothing here runs in CI.

For each model of make_models.py's MODELS the fixture holds
  file, arch, type, n_embd, n_cls_out, pooling_type (the file's)
  sequences   TEXTS tokenized by llama.cpp (Llama.tokenize(add_bos=True):
              [CLS] text [SEP] with the vocabulary's add_bos/add_eos), 3 to
              about 60 tokens each
  hidden      per sequence, every token's hidden state (pooling none:
              llama_get_embeddings_ith), n_embd floats each
  pooled      per pooling (mean, cls, last), per sequence, the pooled vector
              (llama_get_embeddings_seq), not normalised
and, for a reranker (a model whose file has pooling_type rank),
  rank        pairs: the query, each document and the pair's token ids as
              llama.cpp's server formats them (format_prompt_rerank in
              tools/server/server-common.cpp, a model without a rerank chat
              template: bos if add_bos, the query's tokens, eos (sep where
              the vocabulary has no eos) if add_eos, sep if add_sep, the
              document's tokens, eos if add_eos; here [CLS] q [SEP] d [SEP]),
              and scores: each pair's n_cls_out floats under pooling rank
              (llama_get_embeddings_seq: the classification head on the first
              token's hidden state, raw).
Every sequence is decoded alone in sequence 0 (cache cleared before each),
every token an output, in a context of n_ctx = n_batch = n_ubatch = 128 and
flash attention off, as Llama.embed() decodes. Floats are rounded to 7
significant digits."""
import argparse
import ctypes
import json
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_models  # noqa: E402

LLAMA_CPP_PYTHON = "0.3.36"
LLAMA_CPP_COMMIT = "ggml-org/llama.cpp@0c1e57098"
N_CTX = 128
POOLINGS = {"mean": 1, "cls": 2, "last": 3}

TEXTS = [
    "hello",
    "the cat sat on the mat.",
    "what is the capital of france?",
    "many people live in the city, and they work there every day of the year.",
    "the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs!",
    "it was the best of times, it was the worst of times, it was the age of wisdom, "
    "it was the age of foolishness, it was the epoch of belief.",
]
QUERY = "what is the capital of france?"
DOCUMENTS = [
    "paris is the capital and largest city of france.",
    "the cat sat on the mat.",
    "berlin is a city in germany where many people live and work.",
    "france",
]


def rounded(values):
    return [float(f"{v:.7g}") for v in values]


class LlamaCpp:
    def __init__(self, path, pooling, threads):
        import llama_cpp
        self.lc = llama_cpp
        self.llm = llama_cpp.Llama(model_path=str(path), embedding=True, pooling_type=pooling,
                                   n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX,
                                   n_threads=threads, n_threads_batch=threads,
                                   flash_attn=False, verbose=False)
        assert self.llm.pooling_type() == pooling, (self.llm.pooling_type(), pooling)
        self.n_embd = self.llm.n_embd()
        self.n_cls_out = llama_cpp.llama_model_n_cls_out(self.llm._model.model)

    def decode(self, ids):
        llm = self.llm
        llm._batch.reset()
        llm._batch.add_sequence(list(ids), 0, True)
        llm._ctx.kv_cache_clear()
        llm._ctx.decode(llm._batch)
        llm._batch.reset()

    def hidden(self, ids):
        self.decode(ids)
        out = []
        for i in range(len(ids)):
            ptr = self.lc.llama_get_embeddings_ith(self.llm._ctx.ctx, i)
            out.append(rounded(ptr[:self.n_embd]))
        return out

    def pooled(self, ids, n):
        self.decode(ids)
        ptr = self.lc.llama_get_embeddings_seq(self.llm._ctx.ctx, 0)
        return rounded(ptr[:n])

    def tokenize(self, text, add_special):
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=False)

    def rerank_tokens(self, query, doc):
        """format_prompt_rerank's tokens of a pair (no rerank template)."""
        lc = self.lc
        vocab = lc.llama_model_get_vocab(self.llm._model.model)
        eos = lc.llama_vocab_eos(vocab)
        if eos == lc.LLAMA_TOKEN_NULL:
            eos = lc.llama_vocab_sep(vocab)
        assert lc.llama_model_chat_template(self.llm._model.model, b"rerank") is None
        out = []
        if lc.llama_vocab_get_add_bos(vocab):
            out.append(lc.llama_vocab_bos(vocab))
        out += self.tokenize(query, False)
        if lc.llama_vocab_get_add_eos(vocab):
            out.append(eos)
        if lc.llama_vocab_get_add_sep(vocab):
            out.append(lc.llama_vocab_sep(vocab))
        out += self.tokenize(doc, False)
        if lc.llama_vocab_get_add_eos(vocab):
            out.append(eos)
        return out


def model_record(spec, threads):
    path = HERE / f"{spec['name']}.gguf"
    none = LlamaCpp(path, 0, threads)
    rec = dict(file=path.name, arch=spec["arch"], type=spec["type"], n_embd=none.n_embd,
               n_cls_out=len(spec.get("labels", [])), pooling_type=spec["pooling"])
    seqs = [dict(text=t, tokens=none.tokenize(t, True)) for t in TEXTS]
    rec["sequences"] = seqs
    rec["hidden"] = [none.hidden(s["tokens"]) for s in seqs]
    rec["pooled"] = {}
    for name, p in POOLINGS.items():
        ctx = LlamaCpp(path, p, threads)
        rec["pooled"][name] = [ctx.pooled(s["tokens"], ctx.n_embd) for s in seqs]
        del ctx
    if spec["pooling"] == 4:
        rank = LlamaCpp(path, 4, threads)
        assert rank.n_cls_out == rec["n_cls_out"], (rank.n_cls_out, rec["n_cls_out"])
        pairs = [dict(query=QUERY, document=d, tokens=rank.rerank_tokens(QUERY, d)) for d in DOCUMENTS]
        rec["rank"] = dict(pairs=pairs, scores=[rank.pooled(p["tokens"], rank.n_cls_out) for p in pairs])
    print(f"{spec['name']}: lengths {[len(s['tokens']) for s in seqs]}", file=sys.stderr)
    return rec


def compare(a, b, where=""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            compare(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert abs(a - b) <= 1e-5, f"{where}: {a} != {b}"
    else:
        assert a == b, f"{where}: {a} != {b}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "encoder_reference.json")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    import llama_cpp
    if llama_cpp.__version__ != LLAMA_CPP_PYTHON:
        print(f"warning: llama-cpp-python {llama_cpp.__version__}, the fixture records {LLAMA_CPP_PYTHON}",
              file=sys.stderr)
    models = [model_record(spec, args.threads) for spec in make_models.MODELS]
    doc = {
        "generator": "tests/reference/encoder/make_references.py",
        "llama_cpp_python": llama_cpp.__version__,
        "llama_cpp": LLAMA_CPP_COMMIT,
        "method": f"Llama(model_path, embedding=True, pooling_type=P, n_ctx=n_batch=n_ubatch={N_CTX}, "
                  "flash_attn=False); each sequence decoded alone in sequence 0, every token an output; "
                  "llama_get_embeddings_ith (pooling none) and llama_get_embeddings_seq (mean, cls, last, rank)",
        "system_info": llama_cpp.llama_print_system_info().decode().strip(),
        "models": models,
    }
    if args.check:
        old = json.loads(args.out.read_text())
        compare(old["models"], doc["models"], "models")
        print("the fixture matches")
        return
    # one line per list of numbers (a hidden state, a token sequence)
    text = re.sub(r"\[[-0-9.e+,\s]*\]", lambda m: re.sub(r"\s+", "", m.group(0)).replace(",", ", "),
                  json.dumps(doc, indent=1))
    args.out.write_text(text + "\n")
    print(f"{args.out}: {len(text)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
