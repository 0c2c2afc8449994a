#!/usr/bin/env python3
"""Reference logits from llama.cpp (through llama-cpp-python's low-level API)
around a context shift, checked by tests/test_context_shift.c.

llama.cpp shifts a context the way llama-cli and llama-server do when it
fills: llama_memory_seq_rm(mem, 0, n_keep, n_keep + n_discard) drops the
tokens after the kept ones, llama_memory_seq_add(mem, 0, n_keep + n_discard,
n_past, -n_discard) moves the later ones down, and the next decode first
re-rotates their cached keys (the K-shift, a RoPE of the F16 K cache by the
position delta). hearth does both in hearth_context_shift().

For each model (tiny random-weight models of tests/reference/arch/: normal
rope with YaRN, NEOX rope, gemma3's sliding-window layers with their own
rope base; mpt and bloom, whose ALiBi needs no K-shift: llama.cpp only moves
their cells' positions), one fixed sequence of tokens is decoded in one batch (N_FIRST
tokens); then, per step of STEPS, the context is shifted by (n_keep,
n_discard) and the next tokens of the sequence are decoded in one batch, and
the logits of the last token are recorded (6 significant digits). Positions
come from the memory (llama_batch_get_one), so they continue where the
shifted sequence ends. flash_attn is off, so attention is the plain path over
the F16 cache.

Usage: python3 tests/reference/shift/make_shift_reference.py
(needs llama-cpp-python==0.3.36; writes shift_reference.json next to this script)
"""
import json
from pathlib import Path

import llama_cpp
import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version

HERE = Path(__file__).resolve().parent
ARCH = HERE.parent / "arch"
SEED = 20261126
N_CTX = 128
N_FIRST = 90
# (n_keep, n_discard, tokens decoded after the shift)
STEPS = [(10, 40, 30), (10, 35, 1), (0, 20, 7)]
MODELS = ["llama-yarn-f32.gguf", "qwen2-f16.gguf", "gemma3-f16.gguf", "qwen2-yarn-f16.gguf", "mpt-f16.gguf",
          "bloom-f16.gguf", "mpt-q8_0.gguf", "bloom-q8_0.gguf"]


def rounded(x):
    return [float(f"{v:.6g}") for v in x]


def decode(ctx, tokens):
    arr = (llama_cpp.llama_token * len(tokens))(*tokens)
    batch = llama_cpp.llama_batch_get_one(arr, len(tokens))
    rc = llama_cpp.llama_decode(ctx, batch)
    if rc != 0:
        raise RuntimeError(f"llama_decode returned {rc}")


def last_logits(ctx, n_vocab):
    ptr = llama_cpp.llama_get_logits_ith(ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()


def reference(path, seq_seed):
    llm = Llama(model_path=str(path), n_ctx=N_CTX, n_batch=N_CTX, n_threads=2, logits_all=False,
                flash_attn=False, verbose=False)
    ctx = llm._ctx.ctx
    mem = llama_cpp.llama_get_memory(ctx)
    n_vocab = llm.n_vocab()
    rng = np.random.default_rng(seq_seed)
    n_total = N_FIRST + sum(n for _, _, n in STEPS)
    tokens = [llm.token_bos()] + [int(t) for t in rng.integers(0, n_vocab, size=n_total - 1)]
    llama_cpp.llama_memory_clear(mem, True)
    decode(ctx, tokens[:N_FIRST])
    n_past, done = N_FIRST, N_FIRST
    records = [{"n_past": n_past, "logits": rounded(last_logits(ctx, n_vocab))}]
    for n_keep, n_discard, n_new in STEPS:
        assert llama_cpp.llama_memory_seq_rm(mem, 0, n_keep, n_keep + n_discard)
        llama_cpp.llama_memory_seq_add(mem, 0, n_keep + n_discard, n_past, -n_discard)
        n_past -= n_discard
        decode(ctx, tokens[done:done + n_new])
        done += n_new
        n_past += n_new
        assert llama_cpp.llama_memory_seq_pos_max(mem, 0) == n_past - 1
        records.append({"n_keep": n_keep, "n_discard": n_discard, "n_new": n_new, "n_past": n_past,
                        "logits": rounded(last_logits(ctx, n_vocab))})
    return {"n_vocab": n_vocab, "tokens": tokens, "records": records}


if __name__ == "__main__":
    models = []
    for i, name in enumerate(MODELS):
        ref = reference(ARCH / name, SEED + i)
        models.append({"file": f"reference/arch/{name}", **ref})
        print(f"{name}: {len(ref['records'])} logit records")
    out = HERE / "shift_reference.json"
    doc = {"generator": f"llama-cpp-python {llama_cpp_version}, {Path(__file__).name}", "n_ctx": N_CTX,
           "n_first": N_FIRST, "models": models}
    out.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)")
