"""A CUDA build without a usable GPU (or with HEARTH_FORCE_CPU=1) runs
`hearth run -ngl -1` on the CPU: it says once why CUDA is unavailable and
writes the same text as -ngl 0. `hearth info` reports the devices and what
the build supports.

The CUDA backend is a module beside the binary (libhearth-cuda.so, loaded at
run time); the binary links no CUDA library, starts without one, and names
what is missing: the module (removed, or HEARTH_CUDA_MODULE pointing nowhere),
a library the module needs (a copy of the module whose cuBLAS dependency is
renamed to one that does not exist), or the driver."""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

MODULE = "libhearth-cuda.so"

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


def cuda_reason(hearth_bin, env=None):
    """The CUDA part of `hearth info`'s reason for offloading nowhere."""
    out = subprocess.run([str(hearth_bin), "info"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr
    m = re.search(r"^  (?:gpu|offload by default): none \((.*)\)$", out.stdout, re.M)
    assert m, f"no reason in hearth info:\n{out.stdout}"
    return m.group(1).split("; OpenCL: ")[0]


@pytest.fixture
def cuda_module(hearth_bin):
    path = hearth_bin.parent / MODULE
    if not path.exists():
        pytest.skip(f"{path} not found: this build has no CUDA backend")
    if gpu_count(hearth_bin) > 0:
        pytest.skip("a GPU is usable here: these tests are for machines without one")
    return path


def lone_binary(hearth_bin, tmp_path, module=None):
    """A copy of hearth in a folder of its own, with `module` beside it."""
    shutil.copy2(hearth_bin, tmp_path / "hearth")
    if module is not None:
        (tmp_path / MODULE).write_bytes(module)
    return tmp_path / "hearth"


def test_binary_links_no_cuda_library(hearth_bin, cuda_module):
    if not shutil.which("readelf"):
        pytest.skip("readelf (binutils) not found")
    for path in (hearth_bin, cuda_module):
        dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", dynamic)
        cuda = [n for n in needed if re.match(r"lib(cuda|cudart|cublas|cublasLt|nvrtc)\b", n)]
        if path == hearth_bin:
            assert needed and not cuda, f"hearth links {cuda}"
        else:
            assert any(n.startswith("libcublas.so") for n in cuda), f"the module links {needed}"


def test_reason_names_the_driver(hearth_bin, cuda_module, tmp_path):
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("an NVIDIA driver is installed here")
    except OSError:
        pass
    assert cuda_reason(hearth_bin).startswith("no NVIDIA driver (libcuda.so.1 not found)")
    # the module beside a copied binary is found from the binary's own path
    alone = lone_binary(hearth_bin, tmp_path, cuda_module.read_bytes())
    assert cuda_reason(alone).startswith("no NVIDIA driver"), "the module beside the binary was not loaded"


def test_missing_module(hearth_bin, model_path, cuda_module, tmp_path):
    missing = tmp_path / "nowhere" / MODULE
    env = {"HEARTH_CUDA_MODULE": str(missing)}
    assert cuda_reason(hearth_bin, env) == f"no CUDA module at HEARTH_CUDA_MODULE={missing} (no such file)"
    alone = lone_binary(hearth_bin, tmp_path)
    assert cuda_reason(alone).startswith(f"no CUDA module: {MODULE} not found in {tmp_path} or on the library "
                                         "search path")
    cpu, gpu = run(alone, model_path, 0), run(alone, model_path, -1)
    assert cpu.returncode == 0 and gpu.returncode == 0, gpu.stderr
    assert gpu.stdout == cpu.stdout
    assert gpu.stderr.count(f"CUDA unavailable (no CUDA module: {MODULE} not found") == 1, gpu.stderr


def test_module_dependency_missing(hearth_bin, model_path, cuda_module, tmp_path):
    # the module as a machine without cuBLAS sees it: its libcublas.so.N
    # dependency renamed (same length) to libcublas.so.9..., which no one has
    data = cuda_module.read_bytes()
    patched, n = re.subn(rb"(libcublas\.so\.)(\d+)\x00", lambda m: m.group(1) + b"9" * len(m.group(2)) + b"\x00", data)
    assert n > 0, "the module names no libcublas.so.N"
    soname = re.search(rb"libcublas\.so\.9+", patched).group(0).decode()
    alone = lone_binary(hearth_bin, tmp_path, patched)
    reason = cuda_reason(alone)
    assert reason == (f"the CUDA module {tmp_path / MODULE} needs {soname}, which is not installed: install the CUDA "
                      "toolkit's cuBLAS, or add the folder that holds it to LD_LIBRARY_PATH"), reason
    cpu, gpu = run(alone, model_path, 0), run(alone, model_path, -1)
    assert cpu.returncode == 0 and gpu.returncode == 0, gpu.stderr
    assert gpu.stdout == cpu.stdout
    assert f"CUDA unavailable (the CUDA module {tmp_path / MODULE} needs {soname}" in gpu.stderr
