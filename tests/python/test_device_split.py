"""How offloaded layers spread over several devices from the command line:
-ts/--tensor-split, -mg/--main-gpu and -sm/--split-mode (llama.cpp's
spellings) on run, chat, serve and bench: each command's help lists them, a
bad value is refused with one line, and SmolLM2 split over two OpenCL
devices (PoCL asked for two CPU devices with POCL_DEVICES) gives the CPU's
greedy text, the offload line naming both devices, and `hearth bench`
runs there and names the backend."""
import json
import os
import re
import subprocess

import pytest
from test_cli import one_line_error

COMMANDS = ["run", "chat", "serve", "bench"]
SPLIT_OPTIONS = ["-ts", "--tensor-split", "-mg", "--main-gpu", "-sm", "--split-mode"]
PROMPT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
TWO_POCL = {**os.environ, "POCL_DEVICES": "pthread pthread"}


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help_lists_the_split_options(run_hearth, cmd):
    res = run_hearth(cmd, "--help")
    assert res.returncode == 0
    text = res.stdout.decode()
    for opt in SPLIT_OPTIONS:
        assert re.search(rf"(^|[ ,]){re.escape(opt)}[ ,]", text, re.M), (cmd, opt)


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("args,needle", [
    (["-sm", "row"], "-sm row (weight matrices split over devices) is not supported yet; use layer or none"),
    (["--split-mode", "rows"], "--split-mode expects none or layer, got 'rows'"),
    (["-ts", "1,x"], "-ts expects a number"),
    (["-ts", "1,-2"], "-ts expects a number"),
    (["--tensor-split", "1,,2"], "--tensor-split expects a number"),
    (["-ts", ",".join(["1"] * 17)], "-ts takes at most 16 proportions"),
    (["-mg", "-1"], "-mg expects an integer"),
    (["--main-gpu", "a"], "--main-gpu expects an integer"),
    (["-ts"], "-ts needs a value"),
])
def test_bad_split_values(run_hearth, model_path, cmd, args, needle):
    err = one_line_error(run_hearth(cmd, model_path, *args))
    assert needle in err, err


def opencl_ids(run_hearth, env):
    out = run_hearth("info", env=env).stdout.decode()
    return re.findall(r"\b(opencl\d+)\b", out)


def test_main_gpu_outside_the_devices_is_refused(run_hearth, model_path):
    if not opencl_ids(run_hearth, os.environ):
        pytest.skip("no OpenCL device (install pocl-opencl-icd)")
    err = one_line_error(run_hearth("run", model_path, "hi", "-ngl", "-1", "--device", "opencl0", "-sm", "none",
                                    "-mg", "3"))
    assert "main_gpu 3 does not exist" in err, err


def test_split_over_two_opencl_devices_gives_the_cpu_text(run_hearth, hearth_bin, model_path):
    ids = opencl_ids(run_hearth, TWO_POCL)
    if len(set(ids)) < 2:
        pytest.skip(f"PoCL exposes fewer than two devices with POCL_DEVICES='pthread pthread' ({sorted(set(ids))})")

    def run(*args):  # PoCL runs SmolLM2 at a few tokens per second: more time than run_hearth gives
        res = subprocess.run([str(hearth_bin), "run", model_path, PROMPT, "-n", "8", "--temp", "0", "-c", "128",
                              *args], capture_output=True, timeout=600, env={**TWO_POCL, "HEARTH_LOG": "info"})
        assert res.returncode == 0, res.stderr.decode()
        return res.stdout, res.stderr.decode()

    cpu, _ = run()
    text, log = run("-ngl", "-1", "--device", "opencl0,opencl1", "-sm", "layer", "-ts", "1,2")
    assert text == cpu
    assert "placed 31/31 layers on opencl0, opencl1 (" in log, log
    # -sm none: every layer on -mg's device
    text, log = run("-ngl", "-1", "--device", "opencl0,opencl1", "-sm", "none", "-mg", "1")
    assert text == cpu
    assert "placed 31/31 layers on opencl1 (" in log, log


def test_bench_split_over_two_opencl_devices(run_hearth, hearth_bin, model_path):
    ids = opencl_ids(run_hearth, TWO_POCL)
    if len(set(ids)) < 2:
        pytest.skip(f"PoCL exposes fewer than two devices with POCL_DEVICES='pthread pthread' ({sorted(set(ids))})")
    res = subprocess.run([str(hearth_bin), "bench", model_path, "-ngl", "-1", "--device", "opencl0,opencl1", "-sm",
                          "layer", "-ts", "1,1", "-p", "8", "-n", "2", "-r", "1", "-o", "json"], capture_output=True,
                         timeout=600, env=TWO_POCL)
    assert res.returncode == 0, res.stderr.decode()
    rows = json.loads(res.stdout)
    assert [(r["n_prompt"], r["n_gen"]) for r in rows] == [(8, 0), (0, 2)]
    for r in rows:
        assert r["backends"] == "OpenCL" and r["n_gpu_layers"] == -1 and r["avg_ts"] > 0, r
