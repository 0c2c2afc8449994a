#!/usr/bin/env python3
"""CPU-vs-GPU agreement through the hearth command: for each model given
(the tiny random-weight models of tests/reference/tiny and .../arch, one per
weight type and architecture), `hearth run MODEL PROMPT -n 32 --temp 0` with
-ngl 0 (CPU), half the layers and -1 (every layer and the output) must write
the same text, and the runs with layers on the GPU must not fall back to the
CPU. One line per model; exit 1 if any differs or fails.

Usage: python3 bench/gpu/greedy_tiny.py HEARTH MODEL...
"""
import re
import subprocess
import sys

PROMPT = "Once upon a time, in a small village by the sea,"


def n_layer(hearth, model):
    out = subprocess.run([hearth, "info", model], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"n_layer: (\d+)", out)
    if not m:
        raise SystemExit(f"hearth info {model} printed no n_layer:\n{out}")
    return int(m.group(1))


def run(hearth, model, ngl):
    res = subprocess.run([hearth, "run", model, PROMPT, "-n", "32", "--temp", "0", "-ngl", str(ngl)],
                         capture_output=True, timeout=120)
    err = res.stderr.decode(errors="replace")
    problem = None
    if res.returncode != 0:
        problem = f"exit {res.returncode}: {err.strip().splitlines()[-1][:120] if err.strip() else ''}"
    elif ngl != 0 and re.search(r"unavailable|running on CPU", err):
        problem = "fell back to the CPU: " + err.strip().splitlines()[0][:120]
    return res.stdout, problem


def main():
    hearth, models = sys.argv[1], sys.argv[2:]
    bad = 0
    for model in models:
        half = max(1, n_layer(hearth, model) // 2)
        runs = {ngl: run(hearth, model, ngl) for ngl in (0, half, -1)}
        problems = [f"-ngl {ngl}: {p}" for ngl, (_, p) in runs.items() if p][:1]
        same = [runs[ngl][0] == runs[0][0] for ngl in (half, -1)]
        ok = not problems and all(same)
        bad += not ok
        detail = "; ".join(problems) or ", ".join(f"-ngl {n} {'same' if s else 'DIFFERS'}" for n, s in zip((half, -1), same))
        print(f"RESULT greedy {model.rsplit('/', 1)[-1]}: {'ok' if ok else 'FAIL'} ({detail}; "
              f"CPU text {runs[0][0][:24]!r})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
