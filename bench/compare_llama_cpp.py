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

--prompt/--gen change the test lengths, --depth D[,D...] passes -d to both
(each test also on top of D tokens already in the context: pp512 @ d4096),
--flash-attn 1,0 passes -fa to both (a row per value), --ubatch N passes
-ub and --cache-type T passes -ctk T -ctv T (the KV cache type: f16, bf16,
q8_0, q4_0); rows are matched by test, depth and flash attention. --no-mmap
has both read the model into memory instead of mapping it (hearth's
--no-mmap, llama-bench's -lm none).

With --bandwidth GB/s (measured with bench/membw.c), it also gives the
memory traffic of generation: weight bytes read per token (the model's
weights: every matrix is read once per token; with tied embeddings the
embedding matrix is read once, as the output matrix) x tok/s, and that as a
fraction of the bandwidth.

With --rounds K the engines run in turn K times (ABBA order) and the samples
are pooled: generation speed follows the machine's memory bandwidth, which on
a shared host drifts over minutes, and taking turns exposes both engines to
the same drift.

Usage: python3 bench/compare_llama_cpp.py [MODEL ...] [--threads N] [--reps R] [--rounds K]
           [--bandwidth GBPS] [--wait-idle FRACTION] [--save FILE]
Needs: build/hearth (scripts/build.sh; --hearth for another) and llama-bench
(bench/build_llama_cpp.sh).
"""
import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


TICK = os.sysconf("SC_CLK_TCK")


def cpu_times():
    """(total, busy) CPU time of the machine so far, in seconds (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:8]]
    return sum(fields) / TICK, (sum(fields) - fields[3] - fields[4]) / TICK  # idle, iowait


def cpu_busy(seconds=5.0):
    """Fraction of all CPUs' time spent busy over the next `seconds`."""
    t0, b0 = cpu_times()
    time.sleep(seconds)
    t1, b1 = cpu_times()
    return (b1 - b0) / max(t1 - t0, 1e-9)


def wait_for_idle(max_busy, timeout=1800):
    """Waits until the CPUs are busy less than max_busy of the time over 5 s
    (other work on the machine skews timings; the load average reacts too slowly
    to tell others' work from our last run); gives up after `timeout` s with a note.
    Returns the busy fraction seen last."""
    t0 = time.monotonic()
    while (busy := cpu_busy()) >= max_busy:
        if time.monotonic() - t0 > timeout:
            print(f"note: CPUs still {100 * busy:.0f}% busy after {timeout} s; measuring anyway", file=sys.stderr)
            break
    return busy


def row_key(row):
    """(test, depth, flash_attn) of a bench row: ("pp512", 4096, 1)."""
    test = f"pp{row['n_prompt']}" if row["n_prompt"] else f"tg{row['n_gen']}"
    return test, row.get("n_depth", 0), int(row.get("flash_attn", -1))


def run_bench(cmd):
    """Runs a bench command with -o json; returns ({row_key: row}, the
    fraction of the machine's CPU time that other processes used meanwhile)."""
    t0, b0 = cpu_times()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(cmd, capture_output=True, text=True)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t1, b1 = cpu_times()
    if res.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed ({res.returncode}):\n{res.stderr[-2000:]}")
    ours = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    others = max(0.0, (b1 - b0) - ours) / max(t1 - t0, 1e-9)
    rows = {row_key(row): row for row in json.loads(res.stdout)}
    return rows, others


def measure(cmd, args):
    """run_bench, waiting for an idle machine first and repeating (up to
    --tries times) while other processes took more than --wait-idle of the
    CPUs during the run. Returns (rows, others' share of the CPUs)."""
    for attempt in range(args.tries if args.wait_idle else 1):
        if args.wait_idle:
            wait_for_idle(args.wait_idle)
        print(f"running: {shlex.join(cmd)}", file=sys.stderr)
        rows, others = run_bench(cmd)
        if not args.wait_idle or others < args.wait_idle:
            break
        print(f"note: other processes used {100 * others:.0f}% of the CPUs during the run; again", file=sys.stderr)
    return rows, others


def pool(runs):
    """One row per test from several runs of a bench command: every sample
    kept, mean and sample sd recomputed over all of them."""
    out = {}
    for name in runs[0]:
        row = dict(runs[0][name])
        for key in ("samples_ns", "samples_ts"):
            row[key] = [x for r in runs for x in r[name][key]]
        ts = row["samples_ts"]
        row["avg_ts"] = statistics.mean(ts)
        row["stddev_ts"] = statistics.stdev(ts) if len(ts) > 1 else 0.0
        out[name] = row
    return out


def bench_args(args):
    extra = [*(["-d", args.depth] if args.depth else []), *(["-fa", args.flash_attn] if args.flash_attn else []),
             *(["-ub", str(args.ubatch)] if args.ubatch else []),
             *(["-ctk", args.cache_type, "-ctv", args.cache_type] if args.cache_type else [])]
    return ["-p", args.prompt, "-n", args.gen, *extra, "-t", str(args.threads), "-r", str(args.reps), "-o", "json"]


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
    head = "| model | type | size (MiB) | test | fa | hearth t/s | llama.cpp t/s | hearth / llama.cpp |"
    rule = "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |"
    if bandwidth:
        head += " hearth GB/s (% of bw) | llama.cpp GB/s (% of bw) |"
        rule += " ---: | ---: |"
    print(head)
    print(rule)
    for model, ours, ref in results:
        missing = set(ours) ^ set(ref)
        if missing:
            raise SystemExit(f"rows of one engine only: {sorted(missing)}")
        for key in ours:
            (test, depth, fa), h, l = key, ours[key], ref[key]
            (hm, hs), (lm, ls) = mean_sd(h), mean_sd(l)
            name = f"{test} @ d{depth}" if depth else test
            line = (f"| {Path(model).name} | {weight_type(h)} | {h['model_size'] / 2**20:.1f} | {name} | {fa} | "
                    f"{hm:.2f} ± {hs:.2f} | {lm:.2f} ± {ls:.2f} | {hm / lm:.2f} |")
            if bandwidth:
                if test.startswith("tg"):
                    gbs = [h["model_size"] * hm / 1e9, h["model_size"] * lm / 1e9]
                    line += "".join(f" {g:.1f} ({100 * g / bandwidth:.0f}%) |" for g in gbs)
                else:
                    line += " | |"
            print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=[str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf")])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", default="512", help="-p of both engines (default 512)")
    ap.add_argument("--gen", default="128", help="-n of both engines (default 128)")
    ap.add_argument("--depth", default=None, help="-d of both engines, e.g. 0,4096 (default: none)")
    ap.add_argument("--flash-attn", default=None, help="-fa of both engines, e.g. 1,0 (default: each engine's own)")
    ap.add_argument("--ubatch", type=int, default=None, help="-ub of both engines (default: 512, both)")
    ap.add_argument("--cache-type", default=None, help="-ctk and -ctv of both engines (default: f16, both)")
    ap.add_argument("--no-mmap", action="store_true",
                    help="both engines read the model into memory (hearth --no-mmap, llama-bench -lm none)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--hearth", default=str(ROOT / "build/hearth"))
    ap.add_argument("--llama-bench", default=None, help="default: bench/build_llama_cpp.sh's binary")
    ap.add_argument("--bandwidth", type=float, default=None, help="measured read bandwidth, GB/s (bench/membw.c)")
    ap.add_argument("--wait-idle", type=float, default=None, metavar="FRACTION",
                    help="before each engine's run, wait until the CPUs are busy less than FRACTION of 5 s (e.g. "
                         "0.05), and run again if other processes used more than FRACTION of them meanwhile")
    ap.add_argument("--tries", type=int, default=5, help="runs at most, with --wait-idle (default 5)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the two engines in turn this many times and pool the samples (default 1); on a "
                         "machine whose memory bandwidth drifts (a shared host) this keeps both under like conditions")
    ap.add_argument("--save", type=Path, default=None, help="write every row of both engines (JSON) here")
    args = ap.parse_args()
    lb = args.llama_bench or subprocess.run([str(ROOT / "bench/build_llama_cpp.sh")], capture_output=True, text=True,
                                            check=True).stdout.strip()

    results, commands, busy = [], [], []
    for model in args.models:
        cmds = {"llama.cpp": [lb, "-m", str(model), *bench_args(args), *(["-lm", "none"] if args.no_mmap else [])],
                "hearth": [args.hearth, "bench", str(model), *bench_args(args), *(["--no-mmap"] if args.no_mmap else [])]}
        commands += [shlex.join(c) for c in cmds.values()]
        runs = {"llama.cpp": [], "hearth": []}
        for rnd in range(args.rounds):
            # llama.cpp first in even rounds, hearth first in odd ones, so slow drifts
            # in the machine's speed weigh on both alike
            for engine in (("llama.cpp", "hearth") if rnd % 2 == 0 else ("hearth", "llama.cpp")):
                rows, others = measure(cmds[engine], args)
                runs[engine].append(rows)
                busy.append(others)
        results.append((model, pool(runs["hearth"]), pool(runs["llama.cpp"])))

    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, {args.threads} threads; "
          f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}; 1-min load average "
          f"{os.getloadavg()[0]:.2f} now; other processes' share of the CPUs during each run: {', '.join(f'{100 * b:.1f}%' for b in busy)}")
    print(f"llama.cpp: llama-bench ({lb}); hearth: {args.hearth}; {args.rounds} round(s) of {args.reps} "
          f"repetitions per engine, in turn")
    print("commands:")
    for c in commands:
        print(f"    {c}")
    print()
    print_table(results, args.bandwidth)
    if args.save:
        def named(rows):  # "pp512 d4096 fa1": a JSON key for each (test, depth, fa)
            return {f"{t} d{d} fa{f}": row for (t, d, f), row in rows.items()}
        args.save.write_text(json.dumps([{"model": m, "hearth": named(o), "llama.cpp": named(r)} for m, o, r in results],
                                        indent=1))


if __name__ == "__main__":
    main()
