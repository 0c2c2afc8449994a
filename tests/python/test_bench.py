"""`hearth bench`: llama-bench's tests (ppN, tgN) and output formats (md, json,
csv) on the default model and a tiny one, and one-line errors for bad options
and bad models. Speed itself is not checked here (see bench/)."""
import csv
import io
import json
import os
import re
import statistics
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from test_cli import one_line_error

TINY = ROOT / "tests/reference/tiny/tiny-q8_0.gguf"
LLAMA_BENCH = ROOT / "third_party/llama-cpp-python-0.3.36/build/bin/llama-bench"
BENCH_OPTIONS = ["-m", "--model", "-p", "--n-prompt", "-n", "--n-gen", "-d", "--n-depth", "-ub", "--ubatch-size",
                 "-c", "--ctx-size", "-t", "--threads", "-r", "--repetitions",
                 "-ngl", "--n-gpu-layers", "--device", "-fa", "--flash-attn", "-ctk", "--cache-type-k", "-ctv",
                 "--cache-type-v", "-o", "--output", "--progress", "-v", "--verbose", "-h", "--help", "--no-mmap", "--mlock",
                 "-ts", "--tensor-split", "-mg", "--main-gpu", "-sm", "--split-mode"]
MD_COLUMNS = ["model", "size", "params", "backend", "threads", "test", "t/s"]


def bench(run_hearth, *args):
    res = run_hearth("bench", *args)
    assert res.returncode == 0, res.stderr.decode()
    return res.stdout.decode()


def md_rows(out):
    """The table's rows as lists of cells (header first)."""
    lines = [l for l in out.splitlines() if l.startswith("|")]
    return [[c.strip() for c in l.strip("|").split("|")] for l in lines]


def test_help_lists_every_option(run_hearth):
    assert b"bench MODEL" in run_hearth("--help").stdout
    res = run_hearth("bench", "--help")
    assert res.returncode == 0
    text = res.stdout.decode()
    for opt in BENCH_OPTIONS:
        assert re.search(rf"(^|[\s,]){re.escape(opt)}\b", text), opt


def test_md_on_default_model(run_hearth, model_path):
    out = bench(run_hearth, model_path, "-p", "16", "-n", "4", "-r", "2", "-t", "1")
    rows = md_rows(out)
    assert rows[0] == MD_COLUMNS
    assert [r[5] for r in rows[2:]] == ["pp16", "tg4"]
    for r in rows[2:]:
        assert r[0] == "llama 135M Q4_1" and r[1] == "92.10 MiB" and r[2] == "134.52 M"
        assert r[3] == "CPU" and r[4] == "1"
        mean, sd = map(float, r[6].split(" ± "))
        assert mean > 0 and sd >= 0
    assert "build: hearth" in out


def test_defaults_on_tiny_model(run_hearth):
    rows = json.loads(bench(run_hearth, TINY, "-o", "json", "-t", "1"))  # -t 1: quick on a busy machine too
    assert [(r["n_prompt"], r["n_gen"]) for r in rows] == [(512, 0), (0, 128)]
    assert all(len(r["samples_ts"]) == 5 for r in rows)  # -r 5


def test_json(run_hearth):
    rows = json.loads(bench(run_hearth, TINY, "-p", "16", "-n", "4", "-r", "3", "-t", "1", "-o", "json"))
    assert len(rows) == 2
    for r in rows:
        assert r["model_filename"] == str(TINY) and r["backends"] == "CPU" and r["n_threads"] == 1
        assert r["model_type"].startswith("llama") and r["model_size"] > 0 and r["model_n_params"] > 0
        assert len(r["samples_ns"]) == len(r["samples_ts"]) == 3
        n = r["n_prompt"] + r["n_gen"]
        for ns, ts in zip(r["samples_ns"], r["samples_ts"]):
            assert ts == pytest.approx(n * 1e9 / ns, rel=1e-3)
        assert r["avg_ts"] == pytest.approx(statistics.mean(r["samples_ts"]), rel=1e-3)
        assert r["stddev_ts"] == pytest.approx(statistics.stdev(r["samples_ts"]), rel=1e-2, abs=1e-2)
        assert r["avg_ns"] == pytest.approx(statistics.mean(r["samples_ns"]), abs=1)


def test_csv_and_lists(run_hearth):
    out = bench(run_hearth, TINY, "-p", "8,16", "-n", "0", "-r", "2", "-t", "1", "-o", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["n_prompt"], r["n_gen"]) for r in rows] == [("8", "0"), ("16", "0")]
    for r in rows:
        samples = [float(x) for x in r["samples_ts"].split(",")]
        assert len(samples) == 2 and float(r["avg_ts"]) == pytest.approx(statistics.mean(samples), rel=1e-3)


def test_md_header_equals_llama_bench(run_hearth):
    if not LLAMA_BENCH.exists():
        pytest.skip(f"{LLAMA_BENCH} not built (bench/build_llama_cpp.sh)")
    ref = subprocess.run([str(LLAMA_BENCH), "-m", str(TINY), "-p", "16", "-n", "4", "-r", "1", "-t", "1"],
                         capture_output=True, timeout=60)
    ours = bench(run_hearth, TINY, "-p", "16", "-n", "4", "-r", "1", "-t", "1")
    assert ours.splitlines()[:2] == ref.stdout.decode().splitlines()[:2]
    # the rows line up: same cell widths, same tests
    ours_rows, ref_rows = md_rows(ours), md_rows(ref.stdout.decode())
    assert [r[5] for r in ours_rows[2:]] == [r[5] for r in ref_rows[2:]]
    assert [len(l) for l in ours.splitlines()[:4]] == [len(l) for l in ref.stdout.decode().splitlines()[:4]]


def test_flash_attn_column_and_field(run_hearth):
    """-fa on,off: a context each, an `fa` column after threads (llama-bench's,
    shown when -fa is given) and llama-bench's flash_attn field."""
    out = bench(run_hearth, TINY, "-p", "16", "-n", "2", "-r", "1", "-t", "1", "-fa", "on,off")
    rows = md_rows(out)
    assert rows[0] == MD_COLUMNS[:5] + ["fa"] + MD_COLUMNS[5:]
    assert [(r[5], r[6]) for r in rows[2:]] == [("1", "pp16"), ("1", "tg2"), ("0", "pp16"), ("0", "tg2")]
    rows = json.loads(bench(run_hearth, TINY, "-p", "8", "-n", "0", "-r", "1", "-t", "1", "-fa", "auto,0", "-o", "json"))
    assert [r["flash_attn"] for r in rows] == [-1, 0]
    assert md_rows(bench(run_hearth, TINY, "-p", "8", "-n", "0", "-r", "1", "-t", "1", "-fa", "auto"))[0] == MD_COLUMNS


def test_no_mmap_column_and_field(run_hearth):
    """--no-mmap: llama-bench's `mmap` column (0) after threads and its
    use_mmap field, false; true (and no column) by default."""
    rows = md_rows(bench(run_hearth, TINY, "-p", "8", "-n", "2", "-r", "1", "-t", "1", "--no-mmap"))
    assert rows[0] == MD_COLUMNS[:5] + ["mmap"] + MD_COLUMNS[5:]
    assert [(r[5], r[6]) for r in rows[2:]] == [("0", "pp8"), ("0", "tg2")]
    rows = json.loads(bench(run_hearth, TINY, "-p", "8", "-n", "0", "-r", "1", "-t", "1", "--no-mmap", "-o", "json"))
    assert [r["use_mmap"] for r in rows] == [False]
    rows = json.loads(bench(run_hearth, TINY, "-p", "8", "-n", "0", "-r", "1", "-t", "1", "-o", "json"))
    assert [r["use_mmap"] for r in rows] == [True]


def test_depth_rows_in_every_format(run_hearth):
    """-d 0,32: each test at each depth, named as llama-bench names them
    ("pp16 @ d32"), with its n_depth field in json and csv."""
    args = [TINY, "-p", "16", "-n", "4", "-d", "0,32", "-r", "1", "-t", "1"]
    rows = md_rows(bench(run_hearth, *args))
    assert rows[0] == MD_COLUMNS
    assert [r[5] for r in rows[2:]] == ["pp16", "tg4", "pp16 @ d32", "tg4 @ d32"]
    rows = json.loads(bench(run_hearth, *args, "-o", "json"))
    assert [(r["n_prompt"], r["n_gen"], r["n_depth"]) for r in rows] == [(16, 0, 0), (0, 4, 0), (16, 0, 32), (0, 4, 32)]
    assert all(r["n_ubatch"] == 512 and r["type_k"] == r["type_v"] == "f16" for r in rows)
    rows = list(csv.DictReader(io.StringIO(bench(run_hearth, *args, "-o", "csv"))))
    assert [r["n_depth"] for r in rows] == ["0", "0", "32", "32"]


def test_ubatch_column_and_field(run_hearth):
    """-ub 8,16: a context each, an n_ubatch column before fa (llama-bench's,
    shown when -ub is not its default 512) and the n_ubatch field."""
    out = bench(run_hearth, TINY, "-p", "16", "-n", "0", "-d", "24", "-r", "1", "-t", "1", "-ub", "8,16", "-fa", "off")
    rows = md_rows(out)
    assert rows[0] == MD_COLUMNS[:5] + ["n_ubatch", "fa"] + MD_COLUMNS[5:]
    assert [(r[5], r[6], r[7]) for r in rows[2:]] == [("8", "0", "pp16 @ d24"), ("16", "0", "pp16 @ d24")]
    rows = json.loads(bench(run_hearth, TINY, "-p", "8", "-n", "0", "-r", "1", "-t", "1", "-ub", "4", "-o", "json"))
    assert [r["n_ubatch"] for r in rows] == [4]


def test_cache_type_columns_and_fields(run_hearth):
    """-ctk q8_0 -ctv f16,q4_0: a context each, type_k and type_v columns
    after threads (llama-bench's, shown when not f16 or several) and the
    type_k, type_v fields; on tiny-q4_0, whose heads are one q8_0 block."""
    tiny = ROOT / "tests/reference/tiny/tiny-q4_0.gguf"
    args = ["-p", "16", "-n", "4", "-r", "1", "-t", "1", "-ctk", "q8_0", "-ctv", "f16,q4_0"]
    out = bench(run_hearth, tiny, *args)
    rows = md_rows(out)
    assert rows[0] == MD_COLUMNS[:5] + ["type_k", "type_v"] + MD_COLUMNS[5:]
    assert [(r[5], r[6], r[7]) for r in rows[2:]] == [("q8_0", "f16", "pp16"), ("q8_0", "f16", "tg4"),
                                                       ("q8_0", "q4_0", "pp16"), ("q8_0", "q4_0", "tg4")]
    rows = json.loads(bench(run_hearth, tiny, *args, "-o", "json"))
    assert [(r["type_k"], r["type_v"]) for r in rows] == [("q8_0", "f16")] * 2 + [("q8_0", "q4_0")] * 2
    if LLAMA_BENCH.exists():
        ref = subprocess.run([str(LLAMA_BENCH), "-m", str(tiny), *args], capture_output=True, timeout=60)
        assert out.splitlines()[:2] == ref.stdout.decode().splitlines()[:2]


def test_md_with_depth_equals_llama_bench(run_hearth):
    if not LLAMA_BENCH.exists():
        pytest.skip(f"{LLAMA_BENCH} not built (bench/build_llama_cpp.sh)")
    args = ["-p", "16", "-n", "4", "-d", "0,32", "-ub", "8", "-r", "1", "-t", "1"]
    ref = subprocess.run([str(LLAMA_BENCH), "-m", str(TINY), *args], capture_output=True, timeout=60)
    ours = bench(run_hearth, TINY, *args)
    assert ours.splitlines()[:2] == ref.stdout.decode().splitlines()[:2]
    ours_rows, ref_rows = md_rows(ours), md_rows(ref.stdout.decode())
    assert [r[6] for r in ours_rows[2:]] == [r[6] for r in ref_rows[2:]] == ["pp16", "tg4", "pp16 @ d32", "tg4 @ d32"]
    assert [len(l) for l in ours.splitlines()[:6]] == [len(l) for l in ref.stdout.decode().splitlines()[:6]]


def test_depth_that_does_not_fit(run_hearth, model_path):
    """A depth past -c, or a context larger than the machine's memory (the
    largest n_ctx on the default model: a 360 GiB KV cache), is one line."""
    res = run_hearth("bench", TINY, "-p", "16", "-n", "4", "-d", "64", "-c", "70")
    err = one_line_error(res)
    assert res.returncode == 2 and "pp16 @ d64 needs a context of 80 tokens, -c is 70" in err, err
    if os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >= 360 << 30:
        pytest.skip("this machine holds a 360 GiB KV cache")
    res = run_hearth("bench", model_path, "-p", "16", "-n", "0", "-d", "16777000")
    err = one_line_error(res)
    assert res.returncode == 1 and "the context needs 360.0 GiB (KV cache 360.0 GiB at n_ctx 16777016)" in err, err


def test_n_gpu_layers_without_gpu_says_so_once(run_hearth):
    res = run_hearth("bench", TINY, "-p", "8", "-n", "2", "-r", "1", "-t", "1", "-ngl", "99",
                     env={**os.environ, "HEARTH_FORCE_CPU": "1"})
    assert res.returncode == 0
    gpu_lines = [l for l in res.stderr.decode().splitlines() if "cuda unavailable" in l.lower()]
    assert len(gpu_lines) == 1 and "running on CPU" in gpu_lines[0], gpu_lines


def test_progress_goes_to_stderr(run_hearth):
    res = run_hearth("bench", TINY, "-p", "8", "-n", "2", "-r", "2", "-t", "1", "--progress", "-o", "json")
    assert res.returncode == 0
    json.loads(res.stdout)
    assert "pp8: run 2/2" in res.stderr.decode() and "tg2: warm-up" in res.stderr.decode()


@pytest.mark.parametrize("args,needle", [
    (["-p", "x"], "-p"),
    (["-p", "-1"], "-p"),
    (["-p", "8,,16"], "-p"),
    (["-p", "8,"], "-p"),
    (["-n", "70000"], "-n"),
    (["-t", "0"], "-t"),
    (["-r", "0"], "-r"),
    (["-r", "2.5"], "-r"),
    (["-o", "xml"], "-o"),
    (["-ngl", "-2"], "-ngl"),
    (["-fa", "maybe"], "-fa"),
    (["-fa", "on,"], "-fa"),
    (["-d", "-1"], "-d"),
    (["-d", "16777217"], "-d"),
    (["-ub", "0"], "-ub"),
    (["-ctk", "q4_1"], "f16, bf16, q8_0 or q4_0"),
    (["-c", "0"], "-c"),
    (["-p", "0", "-n", "0"], "nothing to measure"),
    (["--bogus"], "unknown option"),
    (["-r"], "needs a value"),
    (["extra"], "unexpected argument"),
])
def test_bad_options(run_hearth, args, needle):
    res = run_hearth("bench", TINY, *args)
    err = one_line_error(res)
    assert res.returncode == 2 and needle in err, err


def test_missing_model_argument(run_hearth):
    res = run_hearth("bench", "-p", "8")
    assert res.returncode == 2 and "MODEL" in one_line_error(res)


def test_bad_model(run_hearth, tmp_path):
    res = run_hearth("bench", tmp_path / "nope.gguf")
    assert res.returncode == 1 and "nope.gguf" in one_line_error(res)
    p = tmp_path / "notes.txt"
    p.write_text("not a model\n" * 10)
    res = run_hearth("bench", p)
    assert res.returncode == 1 and "not a GGUF file" in one_line_error(res)
