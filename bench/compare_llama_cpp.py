#!/usr/bin/env python3
"""Side-by-side prompt and generation speed of `hearth run` and llama.cpp's
llama-bench on the same model, thread count and machine, in one run.

The protocol is llama-bench's: pp512 = a 512-token prompt processed from an
empty context in one batch; tg128 = 128 tokens generated one at a time from
(nearly) empty context. hearth's figures come from the summary `hearth run`
prints (prompt tok/s with -n 1 for pp; generation tok/s with a one-token prompt
for tg). Each is repeated REPS times; mean and sd are reported, and the ratio
hearth / llama.cpp of the means.

Usage: python3 bench/compare_llama_cpp.py [MODEL] [--threads N] [--reps R]
Needs: build/hearth (scripts/build.sh), llama-bench (bench/build_llama_cpp.sh),
and llama-cpp-python==0.3.36 (only to cut the prompt at exactly 512 tokens).
"""
import argparse
import json
import re
import statistics
import subprocess
import time
from pathlib import Path

from llama_cpp import Llama

ROOT = Path(__file__).resolve().parents[1]
N_PROMPT, N_GEN = 512, 128
TEXT = ("Write a detailed history of the city of Rome, from its founding through the Republic and the Empire, "
        "covering its politics, architecture, engineering, roads, aqueducts, art, religion and daily life. ") * 20


def prompt_of(model, n_tokens):
    """Text that tokenizes to exactly n_tokens (llama.cpp's tokenizer; hearth's
    gives the same ids, see tests/test_tokenizer.c)."""
    vocab = Llama(model_path=str(model), vocab_only=True, verbose=False)
    ids = vocab.tokenize(TEXT.encode(), add_bos=False, special=False)[:n_tokens]
    return vocab.detokenize(ids).decode()


def hearth_run(binary, model, prompt, n_gen, threads):
    res = subprocess.run([str(binary), "run", str(model), prompt, "-n", str(n_gen), "--temp", "0", "-t", str(threads),
                          "-c", "1024", "-b", "512"], capture_output=True, text=True, check=True)
    m = re.search(r"prompt (\d+) tokens, ([\d.]+) tok/s \| generated (\d+) tokens, ([\d.]+) tok/s", res.stderr)
    if not m:
        raise SystemExit(f"unexpected hearth summary: {res.stderr}")
    return int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))


def hearth_bench(binary, model, threads, reps):
    prompt = prompt_of(model, N_PROMPT)
    pp, tg = [], []
    for _ in range(reps):
        n_prompt, rate, _, _ = hearth_run(binary, model, prompt, 1, threads)
        assert n_prompt == N_PROMPT, n_prompt
        pp.append(rate)
        _, _, n_gen, rate = hearth_run(binary, model, "Once upon a time", N_GEN, threads)
        assert n_gen == N_GEN, f"generation stopped early at {n_gen} tokens"
        tg.append(rate)
    return {"pp": pp, "tg": tg}


def llama_bench(binary, model, threads, reps):
    res = subprocess.run([str(binary), "-m", str(model), "-p", str(N_PROMPT), "-n", str(N_GEN), "-t", str(threads),
                          "-r", str(reps), "-o", "json"], capture_output=True, text=True, check=True)
    out = {}
    for row in json.loads(res.stdout):
        out["pp" if row["n_prompt"] else "tg"] = row["samples_ts"]
    return out


def cpu_model():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--hearth", default=str(ROOT / "build/hearth"))
    ap.add_argument("--llama-bench", default=None, help="default: bench/build_llama_cpp.sh's binary")
    args = ap.parse_args()
    lb = args.llama_bench or subprocess.run([str(ROOT / "bench/build_llama_cpp.sh")], capture_output=True, text=True,
                                            check=True).stdout.strip()

    ref = llama_bench(lb, args.model, args.threads, args.reps)
    ours = hearth_bench(args.hearth, args.model, args.threads, args.reps)

    print(f"machine: {cpu_model()}, {args.threads} threads; date: {time.strftime('%Y-%m-%d')}")
    print(f"model: {Path(args.model).name}; llama.cpp: llama-bench built from llama-cpp-python 0.3.36's source; "
          f"{args.reps} repetitions")
    print("| test | hearth tok/s | llama.cpp tok/s | hearth / llama.cpp |")
    print("| --- | ---: | ---: | ---: |")
    for name, n in (("pp", N_PROMPT), ("tg", N_GEN)):
        h, l = ours[name], ref[name]
        print(f"| {name}{n} | {statistics.mean(h):.1f} ± {statistics.stdev(h):.1f} | "
              f"{statistics.mean(l):.1f} ± {statistics.stdev(l):.1f} | {statistics.mean(h) / statistics.mean(l):.2f} |")


if __name__ == "__main__":
    main()
