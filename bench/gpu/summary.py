#!/usr/bin/env python3
"""The markdown summary of a bench/gpu/run.sh session, ready to paste into
bench/results/: the machine, each stage's outcome, the test and sanitizer
results, the measured copy bandwidth and the speed table, hearth against
llama.cpp built and run in the same session.

Speed table: one row per model and test (pp512, tg128, tg128 at depth 4096),
t/s as mean ± sd over the repetitions of each engine's JSON (hearth bench and
llama-bench share the field names), hearth / llama.cpp of the means, and for
generation the share of the copy bandwidth that the bytes read per token
need: bytes per token x tok/s / copy bandwidth. Bytes per token = every
weight matrix once (token_embd only where it is also the output matrix; an
untied model reads one row of it, ignored) + at depth d the K and V cache,
2 x n_layer x n_head_kv x head_dim x d x 2 bytes (F16 cache, both engines'
default).

Usage: python3 bench/gpu/summary.py CACHE   (run.sh's cache folder; markdown on stdout)
"""
import csv
import json
import re
import sys
import time
from pathlib import Path

TEST_ORDER = ("pp512", "tg128", "tg128@d4096")


def read(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def model_facts(cache, model_path):
    """(weight bytes read per token, KV bytes per position) from the GGUF file,
    or (None, None) where the file or gguf-py is not at hand."""
    sys.path.insert(0, str(Path(cache) / "site"))
    try:
        import gguf
    except ImportError:
        return None, None
    if not Path(model_path).is_file():
        return None, None
    r = gguf.GGUFReader(model_path)
    names = {t.name: int(t.n_bytes) for t in r.tensors}
    tied = "output.weight" not in names
    weights = sum(b for n, b in names.items() if n.endswith(".weight") and not n.endswith("norm.weight")
                  and (tied or n != "token_embd.weight"))

    def field(key):
        f = r.fields[key]
        return int(f.parts[f.data[0]][0])

    arch = "llama"
    kv = 2 * field(f"{arch}.block_count") * field(f"{arch}.attention.head_count_kv") * field(
        f"{arch}.attention.key_length") * 2
    return weights, kv


def test_name(row):
    """pp512, tg128, tg128@d4096 ... from a row's n_prompt, n_gen, n_depth."""
    name = f"pp{row['n_prompt']}" if row["n_prompt"] else f"tg{row['n_gen']}"
    return name + (f"@d{row['n_depth']}" if row.get("n_depth") else "")


def bench_rows(cache):
    """{(model, test): {engine: row}} from results/bench-MODEL-RUN-ENGINE.json
    (each file holds one engine's rows of one run: pp512 and tg128, or tg128@d4096)."""
    out = {}
    for f in sorted((Path(cache) / "results").glob("bench-*.json")):
        m = re.match(r"bench-(.+)-(pp512\+tg128|tg128@d4096)-(hearth|hearth-unfused|llama\.cpp)\.json$", f.name)
        if not m:
            continue
        for row in json.loads(f.read_text()):
            out.setdefault((m.group(1), test_name(row)), {})[m.group(3)] = row
    return out


def type_of(model):
    return model.rsplit("-", 1)[-1].upper()


def speed_table(cache, bw):
    rows = bench_rows(cache)
    models_dir = read(Path(cache) / "models_dir").strip()
    facts = {}
    lines = ["| model | type | test | hearth t/s | llama.cpp t/s | hearth / llama.cpp | MB read / token | "
             "hearth % of copy bw | llama.cpp % of copy bw |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    order = sorted(rows, key=lambda k: (TEST_ORDER.index(k[1]) if k[1] in TEST_ORDER else len(TEST_ORDER), k[1],
                                        "8b" in k[0], k[0]))
    for model, test in order:
        eng = rows[(model, test)]
        h, l = eng.get("hearth"), eng.get("llama.cpp")

        def ts(r):
            return f"{r['avg_ts']:.1f} ± {r['stddev_ts']:.1f}" if r else "—"

        ratio = f"{h['avg_ts'] / l['avg_ts']:.2f}" if h and l else "—"
        mb = hp = lp = ""
        if test.startswith("tg"):
            if model not in facts:
                facts[model] = model_facts(cache, f"{models_dir}/{model}.gguf")
            weights, kv = facts[model]
            if weights is None:  # no file at hand: the engines' model_size (all weights, token_embd included)
                weights, kv = (h or l)["model_size"], 0
            depth = int(test.split("@d")[1]) if "@d" in test else 0
            per_token = weights + kv * depth
            mb = f"{per_token / 1e6:.0f}"
            if bw:
                hp = f"{100 * per_token * h['avg_ts'] / (bw * 1e9):.0f}%" if h else "—"
                lp = f"{100 * per_token * l['avg_ts'] / (bw * 1e9):.0f}%" if l else "—"
        lines.append(f"| {model.removeprefix('synthetic-')} | {type_of(model)} | {test} | {ts(h)} | {ts(l)} | "
                     f"{ratio} | {mb} | {hp} | {lp} |")
    if any("hearth-unfused" in e for e in rows.values()):  # HEARTH_GPU_ENGINES with hearth-unfused
        lines += ["", "hearth with its fused decode ops against HEARTH_CUDA_FUSED=0 (the same build without them):", "",
                  "| model | test | hearth t/s | unfused t/s | fused / unfused |", "| --- | --- | ---: | ---: | ---: |"]
        for model, test in order:
            h, u = rows[(model, test)].get("hearth"), rows[(model, test)].get("hearth-unfused")
            if h and u:
                lines.append(f"| {model.removeprefix('synthetic-')} | {test} | {h['avg_ts']:.1f} | {u['avg_ts']:.1f} | "
                             f"{h['avg_ts'] / u['avg_ts']:.2f} |")
    return lines if rows else ["(no bench results yet)"]


def main():
    cache = Path(sys.argv[1])
    res = cache / "results"
    print(f"# hearth on a GPU: bench/gpu/run.sh ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    print()
    gpu = list(csv.reader(read(res / "gpu.csv").splitlines()))
    if len(gpu) > 1:
        print("GPU: " + "; ".join(f"{k.strip()} {v.strip()}" for k, v in zip(gpu[0], gpu[1])))
    print(read(res / "machine.txt").strip())
    m = re.search(r"copy_GBps (\d+)", read(res / "membw.txt"))
    bw = float(m.group(1)) if m else None
    extra = re.findall(r"(kcopy|read)_GBps (\d+)", read(res / "membw.txt"))
    print(f"Copy bandwidth (cudaMemcpy D2D, read + write, median): {bw:.0f} GB/s" if bw else
          "Copy bandwidth: not measured (membw stage)", end="")
    print("".join(f"; {k} {v} GB/s" for k, v in extra))
    print()
    print("## Stages")
    print()
    print("| stage | state | s | note |")
    print("| --- | --- | ---: | --- |")
    for s in ("check", "build", "llama", "models", "test", "membw", "sanitize", "bench", "serve"):
        st = read(cache / "status" / s).rstrip("\n").split("\t")
        st = st if len(st) == 3 else ["not run", "", ""]
        print(f"| {s} | {st[0]} | {st[1]} | {st[2]} |")
    print()
    print("## Tests and sanitizer")
    print()
    logs = cache / "logs"
    found = False
    ran = {s: read(cache / "status" / s).split("\t")[0] in ("ok", "FAIL") for s in ("test", "sanitize")}
    for line in read(logs / "test.log").splitlines() if ran["test"] else []:
        if line.startswith("RESULT") or re.search(r"case runs passed", line):
            print(f"    {line}")
            found = True
    for line in read(logs / "sanitize.log").splitlines() if ran["sanitize"] else []:
        if re.search(r"^---|^exit|SUMMARY|case runs passed", line):
            print(f"    {line}")
            found = True
    if not found:
        print("(not run yet)")
    print()
    print(f"## Speed (-ngl 99; {read(res / 'reps').strip() or '?'} repetitions after a warm-up)")
    print()
    for line in speed_table(cache, bw):
        print(line)
    cmds = read(res / "commands.txt").splitlines()
    if cmds:
        print()
        print("Commands (each with its model; in this order):")
        print()
        seen = set()
        for c in cmds:
            c = re.sub(r"/\S*/", "", c)  # paths off: the shape of each command once
            c = re.sub(r"synthetic-\S+\.gguf", "MODEL", c)
            if c not in seen:
                seen.add(c)
                print(f"    {c}")
    serve = read(res / "serve.txt").strip()
    if serve:
        print()
        print("## Batched decode: hearth serve vs llama-server (bench/compare_serve.py)")
        print()
        print(serve)


if __name__ == "__main__":
    main()
