"""A CUDA build without a usable GPU (or with HEARTH_FORCE_CPU=1) runs
`hearth run -ngl -1` on the CPU: it says once why CUDA is unavailable and
writes the same text as -ngl 0. `hearth info` reports the devices and what
the build supports."""
import os
import subprocess

import pytest

PROMPT = "<|im_start|>user\nName three colours.<|im_end|>\n<|im_start|>assistant\n"


def gpu_count(hearth_bin):
    out = subprocess.run([str(hearth_bin), "info"], capture_output=True, text=True, timeout=60).stdout
    return sum(1 for line in out.splitlines() if line.strip().startswith("cuda"))


def run(hearth_bin, model_path, ngl, env=None):
    return subprocess.run([str(hearth_bin), "run", str(model_path), PROMPT, "-n", "24", "--temp", "0", "-ngl", str(ngl)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("force", [False, True])
def test_fallback_runs_on_cpu(hearth_bin, model_path, force):
    env = {"HEARTH_FORCE_CPU": "1"} if force else {}
    if not force and gpu_count(hearth_bin) > 0:
        pytest.skip("a GPU is usable here: the fallback applies only without one")
    cpu = run(hearth_bin, model_path, 0, env)
    gpu = run(hearth_bin, model_path, -1, env)
    assert cpu.returncode == 0 and gpu.returncode == 0, gpu.stderr
    assert gpu.stdout == cpu.stdout
    assert gpu.stderr.count("CUDA unavailable (") == 1, gpu.stderr
    assert "; running on CPU" in gpu.stderr
    if force:
        assert "HEARTH_FORCE_CPU" in gpu.stderr
    assert "CUDA unavailable" not in cpu.stderr  # nothing asked of the GPU, nothing said


def test_info_reports_devices_and_support(hearth_bin, model_path):
    out = subprocess.run([str(hearth_bin), "info", "-ngl", "-1", str(model_path)], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "HEARTH_FORCE_CPU": "1"})
    assert out.returncode == 0, out.stderr
    assert "gpu: none (HEARTH_FORCE_CPU is set)" in out.stdout
    assert "supports: gpu_offload no, mmap yes, mlock yes" in out.stdout
    assert "layers on GPU: 0" in out.stdout


def test_log_level_from_environment(hearth_bin, model_path):
    quiet = run(hearth_bin, model_path, 0, {"HEARTH_LOG": "error", "HEARTH_FORCE_CPU": "1"})
    chatty = run(hearth_bin, model_path, 0, {"HEARTH_LOG": "info"})
    assert "info:" not in quiet.stderr and "info: context:" in chatty.stderr
