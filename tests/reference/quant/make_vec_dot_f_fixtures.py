#!/usr/bin/env python3
"""Writes vec_dot_f_fixtures.bin: llama.cpp's own matrix products with F32
and F16 weights, for tests/test_vec_dot_f.c, which checks that hearth's CPU
kernels and matmul give the same bits.

Usage: python3 tests/reference/quant/make_vec_dot_f_fixtures.py
Needs llama-cpp-python==0.3.36 (its bundled ggml libraries, built with
-march=native on the AVX-512 machine that made the committed file) and numpy.

Each case is one ggml graph with one GGML_OP_MUL_MAT on the CPU backend (one
thread), the weight in a plain CPU buffer, as llama.cpp runs it: llamafile's
tinyBLAS<16, __m512> for 2 tokens or more where the row length is a multiple
of 16 and the row count of 4, ggml_vec_dot_f16 / _f32 otherwise. The shapes
cover both paths and each of tinyBLAS's conditions failing alone. F16
activations are rounded to F16 by ggml (ggml_cpu_fp32_to_fp16), whose bytes
hearth's act_from_float must equal. BF16 is left out: on this CPU llama.cpp
multiplies it with AVX512-BF16 instructions, which hearth does not follow.

Weights: random normal * 0.02, with a few large values. Fixed seed.

File format, all little-endian:
  header: char magic[4] = "HLVF", u32 version = 1, u32 n_cases
  case:   u32 type (ggml id: 0 F32, 1 F16), u32 n, u32 n_rows, u32 n_tok,
          w[n_rows] rows of `type`, float32 x[n_tok][n],
          float32 y[n_tok][n_rows] (llama.cpp's mul_mat)
"""
import ctypes as C
import glob
import os
import struct
from pathlib import Path

import llama_cpp
import numpy as np

HERE = Path(__file__).resolve().parent
LIB = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
base = C.CDLL(glob.glob(LIB + "/libggml-base.so*")[0], mode=C.RTLD_GLOBAL)
cpu = C.CDLL(glob.glob(LIB + "/libggml-cpu.so*")[0], mode=C.RTLD_GLOBAL)

F32, F16 = 0, 1
NP_TYPE = {F32: np.float32, F16: np.float16}
rng = np.random.default_rng(20251121)


class InitParams(C.Structure):
    _fields_ = [("mem_size", C.c_size_t), ("mem_buffer", C.c_void_p), ("no_alloc", C.c_bool)]


vp = C.c_void_p
for lib, name, res, args in [
    (base, "ggml_init", vp, [InitParams]), (base, "ggml_free", None, [vp]),
    (base, "ggml_tensor_overhead", C.c_size_t, []), (base, "ggml_graph_overhead", C.c_size_t, []),
    (base, "ggml_new_tensor_2d", vp, [vp, C.c_int, C.c_int64, C.c_int64]),
    (base, "ggml_mul_mat", vp, [vp, vp, vp]), (base, "ggml_new_graph", vp, [vp]),
    (base, "ggml_build_forward_expand", None, [vp, vp]),
    (base, "ggml_backend_cpu_buffer_type", vp, []),
    (base, "ggml_backend_alloc_ctx_tensors_from_buft", vp, [vp, vp]),
    (base, "ggml_backend_buffer_free", None, [vp]),
    (base, "ggml_backend_tensor_set", None, [vp, vp, C.c_size_t, C.c_size_t]),
    (base, "ggml_backend_tensor_get", None, [vp, vp, C.c_size_t, C.c_size_t]),
    (base, "ggml_backend_graph_compute", C.c_int, [vp, vp]), (base, "ggml_backend_free", None, [vp]),
    (cpu, "ggml_backend_cpu_init", vp, []), (cpu, "ggml_backend_cpu_set_n_threads", None, [vp, C.c_int]),
]:
    getattr(lib, name).restype = res
    getattr(lib, name).argtypes = args


def ptr(a):
    return a.ctypes.data_as(C.c_void_p)


def mul_mat(wtype, w, x):
    """ggml_mul_mat(W, X) on the CPU backend, one thread: [n_tok][n_rows]."""
    n_rows, n, n_tok = w.shape[0], x.shape[1], x.shape[0]
    ctx = base.ggml_init(InitParams(8 * base.ggml_tensor_overhead() + base.ggml_graph_overhead(), None, True))
    wt = base.ggml_new_tensor_2d(ctx, wtype, n, n_rows)
    xt = base.ggml_new_tensor_2d(ctx, F32, n, n_tok)
    yt = base.ggml_mul_mat(ctx, wt, xt)
    graph = base.ggml_new_graph(ctx)
    base.ggml_build_forward_expand(graph, yt)
    buf = base.ggml_backend_alloc_ctx_tensors_from_buft(ctx, base.ggml_backend_cpu_buffer_type())
    base.ggml_backend_tensor_set(wt, ptr(w), 0, w.nbytes)
    base.ggml_backend_tensor_set(xt, ptr(x), 0, x.nbytes)
    backend = cpu.ggml_backend_cpu_init()
    cpu.ggml_backend_cpu_set_n_threads(backend, 1)
    assert base.ggml_backend_graph_compute(backend, graph) == 0
    y = np.zeros((n_tok, n_rows), np.float32)
    base.ggml_backend_tensor_get(yt, ptr(y), 0, y.nbytes)
    base.ggml_backend_free(backend)
    base.ggml_backend_buffer_free(buf)
    base.ggml_free(ctx)
    return y


def activations(n, n_tok):
    """Activation-like rows: per-channel scales, a few outliers, some zeros."""
    x = rng.standard_normal((n_tok, n)) * np.exp(rng.normal(0, 0.5, n))
    x[rng.random((n_tok, n)) < 0.01] *= 20
    x[rng.random((n_tok, n)) < 0.01] = 0
    return x.astype(np.float32)


def weights(wtype, n, n_rows):
    w = rng.standard_normal((n_rows, n)) * 0.02
    w[rng.random((n_rows, n)) < 0.01] *= 30
    return w.astype(NP_TYPE[wtype])


def main():
    # (n, n_rows, n_tok): one token (vec_dot); tinyBLAS with 2, 5, 9 and 13
    # tokens, rows of 16 to 2048 elements (n % 64 != 0 included); tinyBLAS
    # declining for n % 16 != 0 and for n_rows % 4 != 0.
    shapes = [(256, 8, 1), (256, 8, 2), (80, 12, 5), (2048, 4, 2), (16, 20, 13), (320, 16, 9),
              (200, 8, 3), (256, 6, 5)]
    records = []
    for wtype, name in ((F32, "f32"), (F16, "f16")):
        for n, n_rows, n_tok in shapes:
            w, x = weights(wtype, n, n_rows), activations(n, n_tok)
            y = mul_mat(wtype, w, x)
            records.append(struct.pack("<4I", wtype, n, n_rows, n_tok) + w.tobytes() + x.tobytes() + y.tobytes())
            print(f"{name} n={n} rows={n_rows} tok={n_tok}")
    out = HERE / "vec_dot_f_fixtures.bin"
    out.write_bytes(b"HLVF" + struct.pack("<2I", 1, len(records)) + b"".join(records))
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(records)} records)")


if __name__ == "__main__":
    main()
