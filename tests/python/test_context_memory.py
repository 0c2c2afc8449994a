"""`hearth info MODEL -c N -b B -ub U -np S`: the memory a context needs
(weights, KV cache, compute buffers) before one is made, and `-ub` on the
commands that make contexts. The figures themselves are checked against real
allocations in tests/test_context_memory.c."""
import re

import pytest
from test_cli import one_line_error

MIB = 1 << 20


def memory(run_hearth, model, *args):
    """hearth info's context lines: (context line, {device: {what: bytes}}, total bytes)."""
    res = run_hearth("info", model, *args)
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    head = re.search(r"^context: (.*)$", out, re.M).group(1)
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

    def size(s):
        value, unit = s.split()
        return float(value) * units[unit]

    devices = {}
    for m in re.finditer(r"^  (\w+): weights ([\d.]+ \w+), KV cache ([\d.]+ \w+), compute ([\d.]+ \w+) \(([\d.]+ \w+) "
                         r"available\)$", out, re.M):
        devices[m.group(1)] = dict(zip(("weights", "kv", "compute", "available"), map(size, m.groups()[1:])))
    total = size(re.search(r"^  total: ([\d.]+ \w+) \(", out, re.M).group(1))
    return head, devices, total


def test_info_prints_the_memory_of_a_context(run_hearth, model_path):
    head, dev, total = memory(run_hearth, model_path, "-c", "32768")
    assert head == "n_ctx 32768, n_batch 512, n_ubatch 512, n_seq_max 1, KV cache f16/f16"
    # SmolLM2-135M: 30 layers x (K, V) x 32768 cells x 3 KV heads x 64 x 2 bytes
    assert dev["cpu"]["kv"] == 30 * 2 * 32768 * 3 * 64 * 2 == 720 * MIB
    assert dev["cpu"]["weights"] == pytest.approx(92.1 * MIB, abs=0.05 * MIB)
    assert total == pytest.approx(dev["cpu"]["weights"] + dev["cpu"]["kv"] + dev["cpu"]["compute"], rel=2e-3)
    assert dev["cpu"]["available"] > 0


def test_compute_buffers_follow_the_ubatch_not_the_batch(run_hearth, model_path):
    """-c 32768 -b 32768 -ub 512 plans 512-token buffers; -ub 32768 plans 32k."""
    _, small, _ = memory(run_hearth, model_path, "-c", "32768", "-b", "32768", "-ub", "512")
    _, base, _ = memory(run_hearth, model_path, "-c", "32768")
    _, big, _ = memory(run_hearth, model_path, "-c", "32768", "-b", "32768", "-ub", "32768")
    _, tiny, _ = memory(run_hearth, model_path, "-c", "32768", "-ub", "64")
    assert small["cpu"]["compute"] == base["cpu"]["compute"]
    assert tiny["cpu"]["compute"] < small["cpu"]["compute"] < big["cpu"]["compute"] / 16
    assert small["cpu"]["kv"] == big["cpu"]["kv"] == tiny["cpu"]["kv"]


def test_sequences_share_n_ctx(run_hearth, model_path):
    """-np 4 -c 8192: four sequences of 2048 in one 8192-cell cache, as hearth serve --parallel 4."""
    head, dev, _ = memory(run_hearth, model_path, "-c", "8192", "-np", "4")
    assert "n_ctx 8192" in head and "n_seq_max 4" in head
    assert dev["cpu"]["kv"] == 30 * 2 * 8192 * 3 * 64 * 2


@pytest.mark.parametrize("cache,bytes_per_32", [("q8_0", 34), ("q4_0", 18), ("bf16", 64)])
def test_cache_types(run_hearth, model_path, cache, bytes_per_32):
    """-ctk/-ctv (llama.cpp's --cache-type-k/-v): the KV cache in that type,
    blocks of 32 elements of 34 (q8_0) or 18 bytes (q4_0); bf16 is f16's size."""
    head, dev, _ = memory(run_hearth, model_path, "-c", "8192", "-ctk", cache, "--cache-type-v", cache)
    assert head.endswith(f"KV cache {cache}/{cache}")
    # info prints MiB to one decimal
    assert dev["cpu"]["kv"] == pytest.approx(30 * 2 * 8192 * 3 * 64 // 32 * bytes_per_32, abs=0.05 * MIB)
    head, dev, _ = memory(run_hearth, model_path, "-c", "8192", "--cache-type-k", cache)
    assert head.endswith(f"KV cache {cache}/f16")
    assert dev["cpu"]["kv"] == pytest.approx(30 * 8192 * 3 * 64 // 32 * (bytes_per_32 + 64), abs=0.05 * MIB)


def test_cache_types_on_run(run_hearth, model_path):
    res = run_hearth("run", model_path, "The capital of France is", "-n", "8", "--temp", "0", "-ctk", "q8_0", "-ctv",
                     "q8_0", "-v")
    assert res.returncode == 0 and "Paris" in res.stdout.decode(), res.stderr.decode()
    assert "flash_attn on, KV cache q8_0/q8_0," in res.stderr.decode()
    res = run_hearth("run", model_path, "Hi", "-ctv", "q4_0", "-fa", "off")  # llama.cpp refuses it too
    err = one_line_error(res)
    assert res.returncode == 1 and "needs flash_attn on or auto" in err, err


def test_ubatch_on_run(run_hearth, model_path):
    res = run_hearth("run", model_path, "The capital of France is", "-n", "4", "--temp", "0", "-ub", "4", "-v")
    assert res.returncode == 0, res.stderr.decode()
    assert "n_batch 512, n_ubatch 4," in res.stderr.decode()
    res = run_hearth("run", model_path, "Hi", "-n", "1", "-b", "8", "-ub", "64", "-v")
    assert "n_batch 8, n_ubatch 8," in res.stderr.decode()  # llama.cpp's rule: at most n_batch


@pytest.mark.parametrize("cmd,args,needle", [
    ("run", ["Hi", "-ub", "0"], "-ub"),
    ("run", ["Hi", "--ubatch-size", "x"], "--ubatch-size"),
    ("info", ["-np", "0"], "-np"),
    ("info", ["-ub"], "needs a value"),
    ("info", ["--bogus"], "unknown option"),
    ("info", ["-ctk", "q5_0"], "f16, bf16, q8_0 or q4_0"),
    ("run", ["Hi", "-ctv"], "needs a value"),
])
def test_bad_options(run_hearth, model_path, cmd, args, needle):
    res = run_hearth(cmd, model_path, *args)
    err = one_line_error(res)
    assert res.returncode == 2 and needle in err, err
