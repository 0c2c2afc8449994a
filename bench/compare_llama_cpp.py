#!/usr/bin/env python3
"""Side-by-side prompt and generation speed of hearth and llama.cpp on the
same models, thread count and machine, in one run.

Both engines follow llama-bench's protocol, since both are run through their
bench commands with the same options: `hearth bench` and llama.cpp's
`llama-bench`, each with -p 512 -n 128 -t THREADS -r REPS -o json. pp512 = 512
random tokens decoded from an empty context in one batch; tg128 = 128 random
tokens decoded one at a time from an empty context; one warm-up run first;
tok/s as the mean and sample sd over the repetitions. The table gives both
figures and the ratio hearth / llama.cpp of the means for every model.

With --bandwidth GB/s (measured with bench/membw.c), it also gives the
memory traffic of generation: weight bytes read per token (the model's
weights: every matrix is read once per token; with tied embeddings the
embedding matrix is read once, as the output matrix) x tok/s, and that as a
fraction of the bandwidth.

Usage: python3 bench/compare_llama_cpp.py [MODEL ...] [--threads N] [--reps R]
           [--bandwidth GBPS] [--wait-idle LOAD] [--save FILE]
Needs: build/hearth (scripts/build.sh; --hearth for another) and llama-bench
(bench/build_llama_cpp.sh).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = (("pp", 512), ("tg", 128))


def wait_for_idle(max_load, timeout=1800):
    """Waits until the 1-minute load average is below max_load (other work on
    the machine skews timings); gives up after `timeout` seconds with a note."""
    t0 = time.monotonic()
    while os.getloadavg()[0] >= max_load:
        if time.monotonic() - t0 > timeout:
            print(f"note: load average still {os.getloadavg()[0]:.2f} after {timeout} s; measuring anyway",
                  file=sys.stderr)
            return
        time.sleep(10)


def run_bench(cmd):
    """Runs a bench command with -o json; returns {"pp": row, "tg": row}."""
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed ({res.returncode}):\n{res.stderr[-2000:]}")
    rows = {}
    for row in json.loads(res.stdout):
        rows["pp" if row["n_prompt"] else "tg"] = row
    return rows


def bench_args(args):
    return ["-p", str(TESTS[0][1]), "-n", str(TESTS[1][1]), "-t", str(args.threads), "-r", str(args.reps),
            "-o", "json"]


def cpu_model():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def mean_sd(row):
    return row["avg_ts"], row["stddev_ts"]


def weight_type(row):
    """"Q4_1" from hearth's model_type "llama 135M Q4_1"."""
    return row["model_type"].split()[-1]


def print_table(results, bandwidth):
    head = "| model | type | size (MiB) | test | hearth t/s | llama.cpp t/s | hearth / llama.cpp |"
    rule = "| --- | --- | ---: | --- | ---: | ---: | ---: |"
    if bandwidth:
        head += " hearth GB/s (% of bw) | llama.cpp GB/s (% of bw) |"
        rule += " ---: | ---: |"
    print(head)
    print(rule)
    for model, ours, ref in results:
        for name, n in TESTS:
            h, l = ours[name], ref[name]
            (hm, hs), (lm, ls) = mean_sd(h), mean_sd(l)
            line = (f"| {Path(model).name} | {weight_type(h)} | {h['model_size'] / 2**20:.1f} | {name}{n} | "
                    f"{hm:.2f} ± {hs:.2f} | {lm:.2f} ± {ls:.2f} | {hm / lm:.2f} |")
            if bandwidth:
                if name == "tg":
                    gbs = [h["model_size"] * hm / 1e9, h["model_size"] * lm / 1e9]
                    line += "".join(f" {g:.1f} ({100 * g / bandwidth:.0f}%) |" for g in gbs)
                else:
                    line += " | |"
            print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=[str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf")])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--hearth", default=str(ROOT / "build/hearth"))
    ap.add_argument("--llama-bench", default=None, help="default: bench/build_llama_cpp.sh's binary")
    ap.add_argument("--bandwidth", type=float, default=None, help="measured read bandwidth, GB/s (bench/membw.c)")
    ap.add_argument("--wait-idle", type=float, default=None, metavar="LOAD",
                    help="before each engine's run, wait for a 1-minute load average below LOAD")
    ap.add_argument("--save", type=Path, default=None, help="write every row of both engines (JSON) here")
    args = ap.parse_args()
    lb = args.llama_bench or subprocess.run([str(ROOT / "bench/build_llama_cpp.sh")], capture_output=True, text=True,
                                            check=True).stdout.strip()

    results, commands, loads = [], [], []
    for model in args.models:
        cmds = ([lb, "-m", str(model), *bench_args(args)], [args.hearth, "bench", str(model), *bench_args(args)])
        rows = []
        for cmd in cmds:
            if args.wait_idle:
                wait_for_idle(args.wait_idle)
            loads.append(os.getloadavg()[0])
            commands.append(shlex.join(cmd))
            print(f"running: {commands[-1]}", file=sys.stderr)
            rows.append(run_bench(cmd))
        results.append((model, rows[1], rows[0]))

    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, {args.threads} threads; "
          f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}; load average before the runs: "
          f"{min(loads):.2f}..{max(loads):.2f}")
    print(f"llama.cpp: llama-bench ({lb}); hearth: {args.hearth}; {args.reps} repetitions")
    print("commands:")
    for c in commands:
        print(f"    {c}")
    print()
    print_table(results, args.bandwidth)
    if args.save:
        args.save.write_text(json.dumps([{"model": m, "hearth": o, "llama.cpp": r} for m, o, r in results], indent=1))


if __name__ == "__main__":
    main()
