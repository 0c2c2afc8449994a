#!/usr/bin/env python3
"""The cost of a JSON schema on generation, for `hearth serve` and llama.cpp's
llama-server on the same model, threads and machine, in one run.

Both servers run with one slot (-np 1, -c CTX, -t T) and are loaded one at a
time. Each measurement is one non-streamed chat request, temperature 0, of
max_tokens N (128: tg128) over a prompt both servers have already cached (a
warm-up request first), so its wall time is the generation: tok/s =
completion_tokens / wall. Three kinds: `plain` (no schema, ignore_eos so that
all N tokens are generated), `schema` (response_format json_schema with a
schema whose shortest answer is longer than N tokens: the grammar constrains
every token) on both servers. The kinds and servers alternate within each
round (ABBA), and a kind's figure is the median over the rounds.

The markdown table gives each server's tok/s per kind, hearth's schema/plain
ratio (the grammar's cost) and hearth/llama-server under the schema. The
machine, date and commands come first, so the output can go to
bench/results/ as it is.

Usage: python3 bench/compare_structured.py [MODEL] [--n-predict 128] [--rounds 5] [--threads 2]
           [--schema numbers|people] [--hearth build/hearth] [--llama-server PATH]
Needs: build/hearth and llama-server (bench/build_llama_cpp.sh llama-server, built on first use).
"""
import argparse
import datetime
import json
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_serve import free_port, machine, serve, stop  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# (prompt, schema) by name; each schema's shortest answer is well over 128 tokens
CASES = {
    "numbers": ("List sixty random integers between 100 and 999 as a JSON array.",
                {"type": "array", "items": {"type": "integer", "minimum": 100, "maximum": 999},
                 "minItems": 60, "maxItems": 60}),
    "people": ("List forty people with their names, cities and ages as JSON.",
               {"type": "array", "minItems": 40, "maxItems": 40, "items": {
                   "type": "object", "additionalProperties": False, "required": ["name", "city", "age"],
                   "properties": {"name": {"type": "string", "minLength": 2, "maxLength": 20},
                                  "city": {"type": "string", "minLength": 2, "maxLength": 20},
                                  "age": {"type": "integer", "minimum": 0, "maximum": 120}}}}),
}
PROMPT, SCHEMA = CASES["numbers"]


def request(port, body, timeout=600):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout) as res:
        out = json.loads(res.read())
    return out, time.perf_counter() - t0


def body(kind, n):
    b = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": n, "temperature": 0}
    if kind == "plain":
        b["ignore_eos"] = True
    else:
        b["response_format"] = {"type": "json_schema", "json_schema": {"name": "numbers", "schema": SCHEMA}}
    return b


def measure(port, kind, n):
    out, wall = request(port, body(kind, n))
    got = out["usage"]["completion_tokens"]
    if got != n:
        sys.exit(f"{kind}: {got} tokens instead of {n} ({out['choices'][0]['finish_reason']}): raise the schema's length")
    return got / wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--n-predict", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--hearth", default=str(ROOT / "build/hearth"))
    ap.add_argument("--llama-server", default=None)
    ap.add_argument("--schema", choices=sorted(CASES), default="numbers",
                    help="numbers (integers only) or people (objects with strings)")
    args = ap.parse_args()
    global PROMPT, SCHEMA
    PROMPT, SCHEMA = CASES[args.schema]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ls = args.llama_server or subprocess.run([str(ROOT / "bench/build_llama_cpp.sh"), "llama-server"],
                                             stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    common = ["--host", "127.0.0.1", "-c", str(args.ctx), "-t", str(args.threads)]
    make = {"hearth": lambda p: [args.hearth, "serve", args.model, "--port", str(p), "--parallel", "1", *common],
            "llama-server": lambda p: [ls, "-m", args.model, "--port", str(p), "-np", "1", *common]}
    kinds = [("hearth", "plain"), ("hearth", "schema"), ("llama-server", "schema"), ("llama-server", "plain")]
    res = {k: [] for k in kinds}
    commands, procs, ports = [], {}, {}
    with tempfile.TemporaryDirectory() as logdir:
        try:
            for name, cmd_of in make.items():
                ports[name] = free_port()
                cmd = cmd_of(ports[name])
                commands.append(shlex.join(cmd))
                procs[name] = serve(name, cmd, ports[name], logdir)
                for kind in ("plain", "schema"):  # warm-up: the prompt cached, the grammar's first use
                    request(ports[name], body(kind, 8))
            for rnd in range(args.rounds):
                for name, kind in (kinds if rnd % 2 == 0 else kinds[::-1]):
                    tps = measure(ports[name], kind, args.n_predict)
                    res[(name, kind)].append(tps)
                    print(f"round {rnd + 1}: {name} {kind} {tps:.1f} tok/s", file=sys.stderr, flush=True)
        finally:
            for proc in procs.values():
                stop(proc)
    med = {k: statistics.median(v) for k, v in res.items()}
    n = args.n_predict
    print(f"# JSON-schema generation, hearth vs llama-server\n")
    print(f"- machine: {machine()}")
    print(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"- model: {Path(args.model).name}; one slot, -t {args.threads}, temperature 0, tg{n} over a cached prompt")
    print(f"- schema: {json.dumps(SCHEMA)}")
    print(f"- rounds: {args.rounds} (ABBA order), medians")
    print(f"- command: python3 bench/compare_structured.py {' '.join(map(shlex.quote, sys.argv[1:]))}")
    for c in commands:
        print(f"- server: `{c}`")
    print()
    print(f"| server | tg{n} plain tok/s | tg{n} schema tok/s | schema / plain |")
    print("| --- | --- | --- | --- |")
    for name in make:
        p, s = med[(name, "plain")], med[(name, "schema")]
        print(f"| {name} | {p:.1f} | {s:.1f} | {s / p:.2f} |")
    print(f"\nhearth / llama-server under the schema: {med[('hearth', 'schema')] / med[('llama-server', 'schema')]:.2f}x; "
          f"plain: {med[('hearth', 'plain')] / med[('llama-server', 'plain')]:.2f}x")
    print("\nEvery round: " + "; ".join(f"{n_} {k}: " + ", ".join(f"{x:.1f}" for x in v) for (n_, k), v in res.items()))


if __name__ == "__main__":
    main()
