#!/usr/bin/env python3
"""Reference greedy continuation from llama.cpp (through llama-cpp-python) of
Qwen2.5-Coder 0.5B with YaRN rope scaling (Peng et al. 2023,
arXiv:2309.00071) set from the command line, checked by
tests/test_yarn_greedy.c.

The settings are llama.cpp's `--rope-scaling yarn --rope-scale 4
--yarn-orig-ctx 32768` (rope_scaling_type YARN, rope_freq_scale 1/4,
yarn_orig_ctx 32768; the YaRN ext/attn/beta values left at their defaults:
ext_factor 1, YaRN's own attention factor, beta 32 and 1). The prompt is
long_prompt.txt (written for this test, about 2.6k tokens), tokenized by
llama.cpp with special tokens parsed. After evaluating it, the argmax token is
taken N_PREDICT times and fed back; each step stores llama.cpp's token and
its TOP_K largest logits (id, value). flash_attn is off, so attention is
llama.cpp's plain path over the F16 cache, which hearth's flash_attn off
computes in the same order.

Usage: python3 tests/reference/yarn/make_yarn_fixture.py [MODEL]
(default models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf; needs
llama-cpp-python==0.3.36; writes qwen2_yarn.json next to this script)
"""
import json
import sys
from pathlib import Path

import llama_cpp
import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
N_CTX = 4096
N_BATCH = 512
N_PREDICT = 32
TOP_K = 16
ROPE = {"rope_scaling_type": llama_cpp.LLAMA_ROPE_SCALING_TYPE_YARN, "rope_freq_scale": 0.25, "yarn_orig_ctx": 32768}


def main():
    model = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    prompt = (HERE / "long_prompt.txt").read_text()
    llm = Llama(model_path=str(model), n_ctx=N_CTX, n_batch=N_BATCH, n_threads=2, logits_all=False, flash_attn=False,
                verbose=False, **ROPE)
    ids = llm.tokenize(prompt.encode(), add_bos=True, special=True)
    n_vocab = llm.n_vocab()
    llm.reset()
    llm.eval(ids)
    steps, out = [], []
    for _ in range(N_PREDICT):
        ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()
        token = int(np.argmax(logits))
        top = np.argsort(-logits)[:TOP_K]
        steps.append({"token": token, "top_ids": [int(i) for i in top],
                      "top_logits": [float(f"{logits[i]:.6g}") for i in top]})
        out.append(token)
        llm.eval([token])
    doc = {"generator": f"llama-cpp-python {llama_cpp_version}, {Path(__file__).name}",
           "model": model.name, "n_ctx": N_CTX, "n_batch": N_BATCH,
           "rope_scaling": "yarn", "rope_freq_scale": ROPE["rope_freq_scale"], "yarn_orig_ctx": ROPE["yarn_orig_ctx"],
           "prompt_file": "long_prompt.txt", "prompt_ids": ids, "text": llm.detokenize(out).decode(errors="replace"),
           "steps": steps}
    dest = HERE / "qwen2_yarn.json"
    dest.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {dest}: {len(ids)} prompt tokens, {N_PREDICT} steps: {doc['text']!r}")


if __name__ == "__main__":
    main()
