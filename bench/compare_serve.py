#!/usr/bin/env python3
"""Side-by-side serving speed of `hearth serve` and llama.cpp's llama-server
on the same model, slots, context, threads and machine, in one run.

Both servers are started on free loopback ports with the same number of slots
(hearth: serve MODEL --parallel P -c C -t T; llama-server: -m MODEL -np P -c C
-t T --cont-batching) and waited for (GET /health answers 200); each gets one
warm-up request. Then, for each concurrency level, each server in turn is
loaded by bench/serve_load.py (streamed /v1/completions, temperature 0,
max_tokens N; see its docstring for what is measured) while the other idles;
the order alternates from level to level (and round to round), so both meet
the same drift in the machine's speed, which on a shared host is large. With
--rounds K this repeats K times and each level's figures are pooled (tok/s:
all tokens / all wall time; TTFT: the median of the rounds' medians).

The markdown table gives, per level, the aggregate generated tok/s of both,
their ratio and the median time to first token of both; below it, each
server's speedup from one stream to the most streams (tok/s at the highest
level / tok/s at 1). The machine (lscpu model name, CPUs), date and the exact
commands come first, so the output can go to bench/results/ as it is. It also
gives the largest share of all CPUs' time that other processes (anything but
the measured server and this script's client threads, the idle server
included) used during a measurement; --wait-idle waits for a quiet machine
before each measurement and measures again (up to --tries times) when others
used more than that share.

--hearth-before PATH adds a third server, another hearth binary (the same
flags), to measure a change against the build before it. --idle-connections N
opens N idle TCP connections to each server before its measurements and holds
them throughout (hearth then runs with --read-timeout 0, so that it keeps them
rather than closing them at its read deadline); the output says how many each
server still held at the end.

Note: llama-server's -c is the context of all slots together (each slot gets
C/P tokens unless its KV cache is unified); llama-server also reuses a slot's
cached prompt prefix (pass --extra '{"cache_prompt": false}' to turn that off).

Usage: python3 bench/compare_serve.py [MODEL] [--parallel 16] [--ctx 8192] [--threads 2]
           [--n-predict 64] [--requests-per-client 4] [--concurrency 1 4 16] [--rounds 1]
           [--hearth build/hearth] [--hearth-before PATH] [--llama-server PATH] [--only hearth|llama-server]
           [--idle-connections N]
           [--wait-idle FRACTION [--tries 5]] [--extra JSON] [--save FILE]
Needs: build/hearth with `serve` (scripts/build.sh) and llama-server
(bench/build_llama_cpp.sh llama-server, built on first use).
"""
import argparse
import json
import os
import resource
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve_load  # noqa: E402
from compare_llama_cpp import TICK, cpu_times, wait_for_idle  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine():
    """'MODEL NAME (family F model M, AVX2/AVX-512), N CPUs' from lscpu (or /proc/cpuinfo)."""
    try:
        facts = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in subprocess.run(
            ["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines() if ":" in line)}
        simd = "AVX-512" if "avx512f" in facts.get("Flags", "").split() else "AVX2" if "avx2" in facts.get(
            "Flags", "").split() else "no AVX2"
        return (f"{facts['Model name']} (family {facts.get('CPU family', '?')} model {facts.get('Model', '?')}, "
                f"{simd}), {facts['CPU(s)']} CPUs")
    except (OSError, subprocess.CalledProcessError, KeyError):
        names = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith("model name")]
        return f"{names[0] if names else '?'}, {os.cpu_count()} CPUs"


def serve(name, cmd, port, logdir, timeout=600):
    """Starts cmd and waits until GET /health on port answers 200; returns the
    process. Exits with the log's tail if it dies or never gets healthy."""
    log = Path(logdir) / f"{name}.log"
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = serve_load.Server(f"http://127.0.0.1:{port}", model="", timeout=5)
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            break
        try:
            if server.get("/health")[0] == 200:
                return proc
        except OSError:
            pass
        time.sleep(0.5)
    stop(proc)
    tail = log.read_text(errors="replace")[-3000:]
    sys.exit(f"{name} did not become healthy ({shlex.join(cmd)}); its log ends:\n{tail}")


def open_idle(port, n):
    """Up to n TCP connections to port that send nothing; gives up after 20
    connections the server does not take within 2 s each."""
    socks, failed = [], 0
    while len(socks) < n and failed < 20:
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            failed += 1
    return socks


def still_open(socks):
    """How many of socks the server has not closed."""
    n = 0
    for s in socks:
        s.setblocking(False)
        try:
            n += s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            n += 1
        except OSError:
            pass
    return n


def cpu_seconds(pid):
    """CPU time (user + system) process pid has used so far, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def own_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--parallel", type=int, default=16, help="slots of each server (16)")
    ap.add_argument("--ctx", type=int, default=8192, help="-c of each server (8192)")
    ap.add_argument("--threads", type=int, default=2, help="-t of each server (2)")
    ap.add_argument("--ngl", type=int, default=0, help="-ngl of each server: layers on the GPU (0)")
    ap.add_argument("--n-predict", type=int, default=64)
    ap.add_argument("--requests-per-client", type=int, default=4)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--hearth", default=str(ROOT / "build/hearth"))
    ap.add_argument("--hearth-before", default=None, metavar="PATH", help="also measure this hearth binary")
    ap.add_argument("--idle-connections", type=int, default=0, metavar="N",
                    help="idle connections held open to each server while it is measured (0)")
    ap.add_argument("--llama-server", default=None, help="default: bench/build_llama_cpp.sh llama-server's binary")
    ap.add_argument("--only", choices=["hearth", "llama-server"], default=None, help="run one server only")
    ap.add_argument("--extra", type=json.loads, default=None, metavar="JSON",
                    help="fields merged into every request body (serve_load --extra)")
    ap.add_argument("--wait-idle", type=float, default=None, metavar="FRACTION",
                    help="before each measurement, wait until the CPUs are busy less than FRACTION of 5 s, and "
                         "measure again if other processes used more than FRACTION of them meanwhile")
    ap.add_argument("--tries", type=int, default=5, help="tries per measurement at most, with --wait-idle (5)")
    ap.add_argument("--rounds", type=int, default=1, help="times to measure every level of both, pooled (1)")
    ap.add_argument("--save", type=Path, default=None, help="also write every measurement (JSON) here")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the servers

    common = ["--host", "127.0.0.1", "-c", str(args.ctx), "-t", str(args.threads), "-ngl", str(args.ngl)]
    engines = {}
    if args.idle_connections:
        need = args.idle_connections * 3 + 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, need), hard), hard))
    if args.only != "llama-server":
        keep_idle = ["--read-timeout", "0"] if args.idle_connections else []
        engines["hearth"] = lambda port: [args.hearth, "serve", args.model, "--port", str(port),
                                          "--parallel", str(args.parallel), *keep_idle, *common]
        if args.hearth_before:
            engines["hearth-before"] = lambda port: [args.hearth_before, "serve", args.model, "--port", str(port),
                                                     "--parallel", str(args.parallel), *common]
    if args.only != "hearth":
        ls = args.llama_server or subprocess.run([str(ROOT / "bench/build_llama_cpp.sh"), "llama-server"],
                                                 stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
        engines["llama-server"] = lambda port: [ls, "-m", args.model, "--port", str(port), "-np",
                                                str(args.parallel), "--cont-batching", *common]
    names = list(engines)
    runs = {n: {c: [] for c in args.concurrency} for n in names}  # every measurement's summary
    commands, procs, servers, others, idle = [], {}, {}, [], {}
    with tempfile.TemporaryDirectory() as logdir:
        try:
            for name, make in engines.items():
                port = free_port()
                cmd = make(port)
                commands.append(shlex.join(cmd))
                print(f"starting {name}: {commands[-1]}", file=sys.stderr)
                procs[name] = serve(name, cmd, port, logdir)
                servers[name] = serve_load.Server(f"http://127.0.0.1:{port}", extra=args.extra)
                w = serve_load.one_request(servers[name], serve_load.PROMPTS[0], 8)
                if not w["ok"]:
                    print(f"{name}: warm-up request failed: {w['error']}", file=sys.stderr)
                if args.idle_connections:
                    idle[name] = open_idle(port, args.idle_connections)
            step = 0
            for rnd in range(args.rounds):
                for c in args.concurrency:
                    for name in (names if step % 2 == 0 else names[::-1]):
                        for _ in range(args.tries if args.wait_idle else 1):
                            if args.wait_idle:
                                wait_for_idle(args.wait_idle)
                            print(f"round {rnd + 1}, concurrency {c}: {name}", file=sys.stderr, flush=True)
                            pid = procs[name].pid
                            t0, b0, s0, o0 = *cpu_times(), cpu_seconds(pid), own_cpu_seconds()
                            r = serve_load.run_level(servers[name], c, args.n_predict, args.requests_per_client)
                            t1, b1, s1, o1 = *cpu_times(), cpu_seconds(pid), own_cpu_seconds()
                            r["others_cpu_share"] = max(0.0, (b1 - b0) - (s1 - s0) - (o1 - o0)) / max(t1 - t0, 1e-9)
                            for e in r["error_examples"]:
                                print(f"  error: {e}", file=sys.stderr)
                            if not args.wait_idle or r["others_cpu_share"] < args.wait_idle:
                                break
                            print(f"note: other processes used {100 * r['others_cpu_share']:.0f}% of the CPUs "
                                  "meanwhile; again", file=sys.stderr)
                        runs[name][c].append(r)
                        others.append(r["others_cpu_share"])
                    step += 1
            held = {name: still_open(socks) for name, socks in idle.items()}
        finally:
            for socks in idle.values():
                for sock in socks:
                    sock.close()
            for proc in procs.values():
                stop(proc)

    def pooled(name, c):
        rs = runs[name][c]
        wall = sum(r["wall_s"] for r in rs)
        ttft = [r["ttft_p50_ms"] for r in rs if r["ttft_p50_ms"] is not None]
        return {"tok_s": sum(r["tokens"] for r in rs) / wall if wall else 0.0,
                "ttft_p50_ms": serve_load.quantile(ttft, 0.5), "errors": sum(r["errors"] for r in rs)}

    print(f"machine: {machine()}; date: {time.strftime('%Y-%m-%d %H:%M %Z')}; "
          f"1-min load average {os.getloadavg()[0]:.2f} at the end; other processes used at most "
          f"{100 * max(others):.1f}% of the CPUs during a measurement")
    print(f"model: {Path(args.model).name}; {args.parallel} slots, -c {args.ctx}, -t {args.threads}, -ngl {args.ngl}; "
          f"streamed /v1/completions, temperature 0, max_tokens {args.n_predict}, "
          f"{args.requests_per_client} requests per client (bench/serve_load.py); {args.rounds} round(s), "
          "servers in turn at each level" + (f"; extra request fields {json.dumps(args.extra)}" if args.extra else ""))
    if args.idle_connections:
        print(f"idle connections: {args.idle_connections} asked of each server before its measurements; opened: "
              + ", ".join(f"{n} {len(idle[n])}" for n in names) + "; still open at the end: "
              + ", ".join(f"{n} {held[n]}" for n in names))
    print("commands:")
    for c in commands:
        print(f"    {c}")
    print()
    head = "| concurrency |" + "".join(f" {n} tok/s |" for n in names)
    rule = "| ---: |" + " ---: |" * len(names)
    for n in names[1:]:
        head += f" {names[0]} / {n} |"
        rule += " ---: |"
    head += "".join(f" {n} TTFT p50 ms |" for n in names) + f" errors ({' / '.join(names)}) |"
    rule += " ---: |" * len(names) + " ---: |"
    print(head)
    print(rule)
    for c in args.concurrency:
        rows = [pooled(n, c) for n in names]
        line = f"| {c} |" + "".join(f" {r['tok_s']:.1f} |" for r in rows)
        for r in rows[1:]:
            line += f" {rows[0]['tok_s'] / r['tok_s']:.2f} |" if r["tok_s"] else " - |"
        line += "".join(f" {serve_load.fmt(r['ttft_p50_ms'])} |" for r in rows)
        line += " " + " / ".join(str(r["errors"]) for r in rows) + " |"
        print(line)
    if 1 in args.concurrency and len(args.concurrency) > 1:
        top = max(args.concurrency)
        print()
        print(f"speedup from 1 to {top} streams (tok/s): " + "; ".join(
            f"{n} {pooled(n, top)['tok_s'] / pooled(n, 1)['tok_s']:.2f}x" for n in names if pooled(n, 1)["tok_s"]))
    if args.save:
        args.save.write_text(json.dumps({"commands": commands, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
