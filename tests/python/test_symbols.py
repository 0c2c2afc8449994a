"""The library's symbol surface (issue 21): every global symbol the static
archive defines is hearth_* (the API) or hl_* (internal), so hearth links
beside ggml, llama.cpp or anything else without clashes; a shared libhearth
exports exactly the functions include/hearth.h declares (HEARTH_API, built
with -fvisibility=hidden). The archive is C only: the CUDA backend is a
module of its own, which exports one symbol (checked last).

The archive is build/libhearth.a (HEARTH_STATIC_LIB); the shared library is
build-shared/libhearth.so (HEARTH_SHARED_LIB), which scripts/test.sh builds:
  cmake -S . -B build-shared -DBUILD_SHARED_LIBS=ON -DHEARTH_CUDA=OFF -DHEARTH_BUILD_TESTS=OFF
  cmake --build build-shared --target hearth_shared
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "include" / "hearth.h"


def header_functions():
    """The functions hearth.h declares, and those it marks HEARTH_API."""
    text = HEADER.read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    declared, marked = set(), set()
    for decl in text.split(";"):
        decl = re.split(r"[{}]", " ".join(decl.split()))[-1].strip()  # what follows a brace: the declaration
        if decl.startswith("typedef"):
            continue
        m = re.search(r"\b(hearth_\w+)\s*\(", decl)
        if m:
            declared.add(m.group(1))
            if decl.startswith("HEARTH_API "):
                marked.add(m.group(1))
    return declared, marked


def nm(*args):
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) not found")
    out = subprocess.run(["nm", *map(str, args)], capture_output=True, text=True, check=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:  # "<value> <type> <name>"; archive member headers and blanks have fewer
            names.append((parts[1], parts[2]))
    return names


def static_lib():
    path = Path(os.environ.get("HEARTH_STATIC_LIB", ROOT / "build" / "libhearth.a"))
    if not path.exists():
        pytest.fail(f"{path} not found: build first (scripts/build.sh) or set HEARTH_STATIC_LIB")
    return path


def test_header_marks_every_function():
    declared, marked = header_functions()
    assert len(declared) > 50, "hearth.h parsed to too few functions: the parser is broken"
    assert declared == marked, f"declared without HEARTH_API: {sorted(declared - marked)}"


def test_static_archive_names_are_prefixed():
    symbols = nm("-g", "--defined-only", static_lib())
    bad = sorted({s for _, s in symbols if not s.startswith(("hearth_", "hl_"))})
    assert not bad, f"global symbols of libhearth.a without the hearth_/hl_ prefix: {bad}"


def test_static_archive_api_is_the_header():
    _, marked = header_functions()
    public = {s for _, s in nm("-g", "--defined-only", static_lib()) if s.startswith("hearth_")}
    assert public == marked, (f"hearth_* defined but not in hearth.h: {sorted(public - marked)}; "
                              f"in hearth.h but not defined: {sorted(marked - public)}")


def test_shared_library_exports_exactly_the_header():
    env = os.environ.get("HEARTH_SHARED_LIB")
    path = Path(env or ROOT / "build-shared" / "libhearth.so")
    if not path.exists():
        if env:
            pytest.fail(f"HEARTH_SHARED_LIB={env} not found")
        pytest.skip(f"{path} not found: build the shared library (cmake -S . -B build-shared "
                    "-DBUILD_SHARED_LIBS=ON -DHEARTH_CUDA=OFF -DHEARTH_BUILD_TESTS=OFF && "
                    "cmake --build build-shared --target hearth_shared)")
    _, marked = header_functions()
    exported = nm("-D", "--defined-only", path)
    names = {s for _, s in exported}
    assert names == marked, (f"exported but not in hearth.h: {sorted(names - marked)}; "
                             f"in hearth.h but not exported: {sorted(marked - names)}")
    assert {t for t, _ in exported} == {"T"}, f"non-function exports: {[e for e in exported if e[0] != 'T']}"


def test_cuda_module_exports_only_its_entry():
    """The CUDA backend's module (libhearth-cuda.so, beside the release build's
    hearth binary, or HEARTH_CUDA_MODULE) exports one function, its entry
    (src/backend/cuda/cuda_backend.h); the static CUDA runtime and every
    hl_* function it holds stay inside."""
    env = os.environ.get("HEARTH_CUDA_MODULE")
    path = Path(env or ROOT / "build" / "libhearth-cuda.so")
    if not path.exists():
        if env:
            pytest.fail(f"HEARTH_CUDA_MODULE={env} not found")
        pytest.skip(f"{path} not found: the build has no CUDA backend")
    exported = nm("-D", "--defined-only", path)
    assert exported == [("T", "hl_cuda_module_entry")], f"exports: {exported}"
