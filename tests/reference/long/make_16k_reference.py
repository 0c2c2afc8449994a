#!/usr/bin/env python3
"""llama.cpp's logits (through llama-cpp-python) for tests/test_context_16k.c:
the YaRN tiny model (tests/reference/arch/llama-yarn-f32.gguf, trained on 256
tokens) in a context of 16384 tokens reads the test's 16384 pseudo-random
tokens in calls of 2048 (n_ubatch 512), and the last token's logits after
each call are recorded, rounded to 6 significant digits.

The tokens are the test's: splitmix64 (Steele, Lea, Flood 2014; tests/check.h
check_splitmix64) from the state 0x16C7, each output modulo n_vocab.
flash_attn is off, so llama.cpp's attention is its plain path over the F16
KV cache, which hearth's exact path (flash_attn OFF) follows.

Usage: python3 tests/reference/long/make_16k_reference.py
(needs llama-cpp-python==0.3.36; writes 16k_reference.json next to this script)
"""
import json
from pathlib import Path

import llama_cpp
import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version

HERE = Path(__file__).resolve().parent
MODEL = HERE.parent / "arch" / "llama-yarn-f32.gguf"
N_CTX, N_BATCH, N_UBATCH, SEED = 16384, 2048, 512, 0x16C7
MASK = (1 << 64) - 1


def splitmix64(state):
    """(next state, output), as check_splitmix64 in tests/check.h."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def main():
    llm = Llama(model_path=str(MODEL), n_ctx=N_CTX, n_batch=N_BATCH, n_ubatch=N_UBATCH, n_threads=2,
                logits_all=False, flash_attn=False, verbose=False)
    n_vocab = llm.n_vocab()
    state, tokens = SEED, []
    for _ in range(N_CTX):
        state, z = splitmix64(state)
        tokens.append(z % n_vocab)
    records = []
    for i in range(0, N_CTX, N_BATCH):
        llm.eval(tokens[i:i + N_BATCH])
        ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()
        records.append({"n_past": i + N_BATCH, "logits": [float(f"{x:.6g}") for x in logits]})
        print(f"{i + N_BATCH} tokens: max |logit| {np.abs(logits).max():.3f}")
    out = {"llama_cpp_python": llama_cpp_version, "model": "reference/arch/llama-yarn-f32.gguf", "n_ctx": N_CTX,
           "n_batch": N_BATCH, "n_ubatch": N_UBATCH, "seed": SEED, "first_tokens": tokens[:8], "records": records}
    (HERE / "16k_reference.json").write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
