#!/usr/bin/env python3
"""The resource report and load widths of CUDA kernels, without a GPU.

    python3 bench/gpu/kernel_report.py [--arch 90] FILE.cu ...

Compiles each file alone for one architecture with the build's include paths
and -Xptxas -v (registers, stack frame, spills, shared memory per kernel),
disassembles the object with cuobjdump -sass, and prints one line per kernel:
those figures and the counts of global loads by width (LDG 128/64/32/16/8
bits), IDP.4A (dp4a), LDL/STL (local memory) and SHFL. Templates show
ggml's type numbers: 0 F32, 1 F16, 30 BF16, 2 Q4_0, 3 Q4_1, 6 Q5_0, 7 Q5_1,
8 Q8_0, 10 Q2_K, 11 Q3_K, 12 Q4_K, 13 Q5_K, 14 Q6_K. bench/gpu/KERNELS.md was
written from its output. cuobjdump (and the nvdisasm it runs) come from
the toolkit or from the nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels:
set CUOBJDUMP to its path when it is not on the PATH.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOADS = [("ldg128", r"LDG\.E\.128"), ("ldg64", r"LDG\.E\.64"), ("ldg32", r"LDG\.E(\.CONSTANT)?\s"),
         ("ldg16", r"LDG\.E\.(U|S)16"), ("ldg8", r"LDG\.E\.(U|S)8"), ("dp4a", r"IDP\.4A"),
         ("lmem", r"\b(LDL|STL)\b"), ("shfl", r"\bSHFL")]


def report(src, arch, nvcc, cuobjdump, tmp):
    obj = os.path.join(tmp, os.path.basename(src) + ".o")
    cmd = [nvcc, "-std=c++17", "-O3", "-DNDEBUG", "-DHEARTH_HAVE_CUDA=1", "-I" + os.path.join(ROOT, "include"),
           "-I" + os.path.join(ROOT, "src"), f"--generate-code=arch=compute_{arch},code=sm_{arch}", "-Xptxas", "-v",
           "-c", src, "-o", obj]
    ptxas = subprocess.run(cmd, capture_output=True, text=True)
    if ptxas.returncode != 0:
        sys.exit(f"{src}: nvcc failed:\n{ptxas.stderr}")
    kernels, cur = {}, None
    for line in ptxas.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            cur = m.group(1)
            kernels[cur] = {}
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            kernels[cur].update(stack=int(m.group(1)), spill=int(m.group(2)) + int(m.group(3)))
        m = re.search(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?", line)
        if m and cur:
            kernels[cur].update(regs=int(m.group(1)), smem=int(m.group(2) or 0))
    sass = subprocess.run([cuobjdump, "-sass", obj], capture_output=True, text=True, check=True).stdout
    bodies = {}
    for part in re.split(r"\n\s*Function : ", sass)[1:]:
        name, body = part.split("\n", 1)
        bodies[name.strip()] = body
    names = sorted(kernels)
    demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    for name, pretty in zip(names, demangled):
        k, body = kernels[name], bodies.get(name, "")
        pretty = re.sub(r"\(.*", "", pretty).replace("(anonymous namespace)::", "")
        counts = " ".join(f"{key}={len(re.findall(pat, body))}" for key, pat in LOADS)
        print(f"{pretty[:44]:44s} regs={k.get('regs')} stack={k.get('stack')} spill={k.get('spill')} "
              f"smem={k.get('smem')} | {counts}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="90")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if not cuobjdump:
        sys.exit("cuobjdump not found: set CUOBJDUMP (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    env_path = os.path.dirname(cuobjdump) + os.pathsep + os.environ.get("PATH", "")
    os.environ["PATH"] = env_path  # cuobjdump -sass runs nvdisasm from beside it
    with tempfile.TemporaryDirectory() as tmp:
        for src in args.files:
            print(f"== {src} (sm_{args.arch})")
            report(src, args.arch, nvcc, cuobjdump, tmp)


if __name__ == "__main__":
    main()
