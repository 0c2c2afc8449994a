#!/usr/bin/env python3
"""Writes vec_dot_k_fixtures.bin: llama.cpp's own matrix products with Q5_0,
Q5_1 and K-quant weights, for tests/test_vec_dot_k.c, which checks that
hearth's SIMD kernels give the same bits.

Usage: python3 tests/reference/quant/make_vec_dot_k_fixtures.py
Needs llama-cpp-python==0.3.36 (its bundled ggml libraries, built with
-march=native on the AVX-512 machine that made the committed file) and numpy.

Each case is computed twice through ggml, by ctypes:
- mul_mat: a ggml graph with one GGML_OP_MUL_MAT on the CPU backend, the
  weight placed as llama.cpp places it: in the CPU_REPACK buffer where ggml
  repacks that type on this CPU (Q4_K always on AVX2, Q2_K on AVX-512; the
  repacked kernels ggml_gemv/gemm_q*_K_8x8_q8_K then run), else in a plain
  CPU buffer (ggml_vec_dot_*, or llamafile's tinyBLAS for Q5_0). This is
  the arithmetic hearth must reproduce;
- vec_dot: ggml_get_type_traits_cpu(type)->vec_dot on each (row, token), for
  information (it equals mul_mat except for the repacked types).
For the repacked types, mul_mat runs gemm on the tokens in whole groups of 4
(ggml's repack forward_mul_mat: tokens 0 .. n_tok - n_tok % 4 - 1) and gemv
on the rest, in two different float orders. The other K-quants take ggml's
tiled path from 8 tokens on (another order again).
The activations are also quantized with ggml's from_float of the vec_dot
type, whose bytes hearth's act_from_float must equal.

Weights: half the rows quantized by ggml from random floats (realistic
blocks), half random bytes with realistic fp16 scales (all quants and
sub-block scales, extremes included). Fixed seed.

File format, all little-endian:
  header:  char magic[4] = "HLVK", u32 version = 1, u32 n_records
  record:  char name[32] (NUL-padded), u32 kind, then by kind:
  kind 0 = activations: u32 n, u32 n_tok, float32 x[n_tok][n]
  kind 1 = case: u32 type (ggml id), u32 n, u32 n_rows, u32 n_tok,
           u32 act (index of its activation record, counting from 0),
           u32 path (0 vec_dot, 1 repacked gemm/gemv, 2 tiled: see PATH_*),
           u64 w_bytes, u64 a_bytes,
           w[n_rows] rows of `type`, a[n_tok] rows of the vec_dot type,
           float32 mul_mat[n_tok][n_rows], float32 vec_dot[n_tok][n_rows]
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

F32, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K = 0, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
NAMES = {Q5_0: "q5_0", Q5_1: "q5_1", Q2_K: "q2_k", Q3_K: "q3_k", Q4_K: "q4_k", Q5_K: "q5_k", Q6_K: "q6_k"}
# (elements per block, bytes per block)
BLOCK = {Q5_0: (32, 22), Q5_1: (32, 24), Q8_0: (32, 34), Q8_1: (32, 36),
         Q2_K: (256, 84), Q3_K: (256, 110), Q4_K: (256, 144), Q5_K: (256, 176), Q6_K: (256, 210), Q8_K: (256, 292)}
# The types ggml-cpu repacks on this CPU (ggml_repack_get_optimal_repack_type
# in ggml-cpu/repack.cpp, for tensors with a multiple of 8 rows).
FLAGS = open("/proc/cpuinfo").read()
REPACKED = {Q4_K} | ({Q2_K} if " avx512f " in FLAGS else set())

# Which kernels mul_mat runs (record field `path`): ggml_vec_dot_* (or, for
# Q5_0, tinyBLAS, in the same per-result order); the repacked gemm/gemv; the
# tiled K-quant kernels (ggml-cpu/tiled/), which ggml_compute_forward_mul_mat
# takes from 8 tokens on for K-quant weights that are not repacked.
PATH_VEC_DOT, PATH_REPACKED, PATH_TILED = 0, 1, 2
PATH_NAMES = ["vec_dot", "repacked", "tiled"]
TILED_MIN_BATCH = 8

rng = np.random.default_rng(20251121)


class InitParams(C.Structure):
    _fields_ = [("mem_size", C.c_size_t), ("mem_buffer", C.c_void_p), ("no_alloc", C.c_bool)]


class TypeTraitsCpu(C.Structure):
    _fields_ = [("from_float", C.c_void_p), ("vec_dot", C.c_void_p), ("vec_dot_type", C.c_int),
                ("nrows", C.c_int64)]


FROM_FLOAT = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p, C.c_int64)
VEC_DOT = C.CFUNCTYPE(None, C.c_int, C.c_void_p, C.c_size_t, C.c_void_p, C.c_size_t, C.c_void_p, C.c_size_t,
                      C.c_int)

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
    (base, "ggml_quantize_chunk", C.c_size_t, [C.c_int, vp, vp, C.c_int64, C.c_int64, C.c_int64, vp]),
    (cpu, "ggml_backend_cpu_init", vp, []), (cpu, "ggml_backend_cpu_set_n_threads", None, [vp, C.c_int]),
    (cpu, "ggml_get_type_traits_cpu", C.POINTER(TypeTraitsCpu), [C.c_int]),
    (cpu, "_Z35ggml_backend_cpu_repack_buffer_typev", vp, []),  # ggml_backend_cpu_repack_buffer_type()
]:
    getattr(lib, name).restype = res
    getattr(lib, name).argtypes = args


def ptr(a):
    return a.ctypes.data_as(C.c_void_p)


def row_bytes(qtype, n):
    qk, size = BLOCK[qtype]
    return n // qk * size


def act_quantize(qtype, x):
    """x [n_tok][n] float32 -> rows of the vec_dot type, by ggml's from_float."""
    vt = cpu.ggml_get_type_traits_cpu(qtype).contents.vec_dot_type
    from_float = FROM_FLOAT(cpu.ggml_get_type_traits_cpu(vt).contents.from_float)
    out = np.zeros((x.shape[0], row_bytes(vt, x.shape[1])), np.uint8)
    for t in range(x.shape[0]):
        from_float(ptr(x[t]), ptr(out[t]), x.shape[1])
    return out


def vec_dot(qtype, w, a, n):
    fn = VEC_DOT(cpu.ggml_get_type_traits_cpu(qtype).contents.vec_dot)
    out = np.zeros((a.shape[0], w.shape[0]), np.float32)
    s = np.zeros(1, np.float32)
    for t in range(a.shape[0]):
        for r in range(w.shape[0]):
            fn(n, ptr(s), 0, ptr(w[r]), 0, ptr(a[t]), 0, 1)
            out[t, r] = s[0]
    return out


def mul_mat(qtype, w, x, repack):
    """ggml_mul_mat(W, X) on the CPU backend, one thread: [n_tok][n_rows]."""
    n_rows, n, n_tok = w.shape[0], x.shape[1], x.shape[0]
    over = base.ggml_tensor_overhead()
    ctx_w = base.ggml_init(InitParams(4 * over, None, True))
    wt = base.ggml_new_tensor_2d(ctx_w, qtype, n, n_rows)
    buft = cpu._Z35ggml_backend_cpu_repack_buffer_typev() if repack else base.ggml_backend_cpu_buffer_type()
    buf_w = base.ggml_backend_alloc_ctx_tensors_from_buft(ctx_w, buft)
    base.ggml_backend_tensor_set(wt, ptr(w), 0, w.nbytes)  # repacks in the CPU_REPACK buffer
    ctx = base.ggml_init(InitParams(8 * over + base.ggml_graph_overhead(), None, True))
    xt = base.ggml_new_tensor_2d(ctx, F32, n, n_tok)
    yt = base.ggml_mul_mat(ctx, wt, xt)
    graph = base.ggml_new_graph(ctx)
    base.ggml_build_forward_expand(graph, yt)
    buf = base.ggml_backend_alloc_ctx_tensors_from_buft(ctx, base.ggml_backend_cpu_buffer_type())
    base.ggml_backend_tensor_set(xt, ptr(x), 0, x.nbytes)
    backend = cpu.ggml_backend_cpu_init()
    cpu.ggml_backend_cpu_set_n_threads(backend, 1)
    assert base.ggml_backend_graph_compute(backend, graph) == 0
    y = np.zeros((n_tok, n_rows), np.float32)
    base.ggml_backend_tensor_get(yt, ptr(y), 0, y.nbytes)
    base.ggml_backend_free(backend)
    base.ggml_backend_buffer_free(buf)
    base.ggml_backend_buffer_free(buf_w)
    base.ggml_free(ctx)
    base.ggml_free(ctx_w)
    return y


def activations(n, n_tok, rng=rng):
    """Activation-like rows: per-channel scales, a few outliers, some zeros."""
    x = rng.standard_normal((n_tok, n)) * np.exp(rng.normal(0, 0.5, n))
    x[rng.random((n_tok, n)) < 0.01] *= 20
    x[rng.random((n_tok, n)) < 0.01] = 0
    return x.astype(np.float32)


def f16(v):
    return np.array([v], np.float16).view(np.uint8)


def random_rows(qtype, n, n_rows):
    """Random bytes with realistic positive fp16 super-block scales."""
    qk, size = BLOCK[qtype]
    blocks = rng.integers(0, 256, (n_rows * n // qk, size), dtype=np.uint8)
    for b in blocks:
        d, m = rng.uniform(1e-4, 3e-3), rng.uniform(1e-4, 3e-3)
        if qtype == Q5_0:
            b[0:2] = f16(d)
        elif qtype == Q5_1:
            b[0:2], b[2:4] = f16(d), f16(-m * 8)
        elif qtype == Q2_K:
            b[80:82], b[82:84] = f16(d), f16(m)
        elif qtype in (Q3_K, Q6_K):
            b[-2:] = f16(d)
        else:  # Q4_K, Q5_K: d, dmin first
            b[0:2], b[2:4] = f16(d), f16(m)
    return blocks.reshape(n_rows, -1)


def weights(qtype, n, n_rows):
    half = n_rows // 2
    src = (rng.standard_normal((half, n)) * 0.02).astype(np.float32)
    w = np.zeros((half, row_bytes(qtype, n)), np.uint8)
    base.ggml_quantize_chunk(qtype, ptr(src), ptr(w), 0, half, n, None)
    return np.concatenate([w, random_rows(qtype, n, n_rows - half)])


def main():
    # (n, n_tok, n_rows). With the repacked types, tokens in whole groups of 4
    # go through ggml's gemm kernels and the rest through gemv, whose float
    # orders differ; 24 rows run both the 16-column AVX-512 and the 8-column
    # AVX2 parts of the gemm kernels. With 8 tokens or more, the other
    # K-quants go through ggml's tiled kernels.
    shapes = [(256, 1, 8), (512, 9, 24), (1024, 1, 8)]
    records = []
    xs = []
    for i, (n, n_tok, _) in enumerate(shapes):
        x = activations(n, n_tok)
        xs.append(x)
        records.append(struct.pack("<32s3I", f"x_{n}x{n_tok}".encode(), 0, n, n_tok) + x.tobytes())
    for qtype, name in NAMES.items():
        for i, (n, n_tok, n_rows) in enumerate(shapes):
            x = xs[i]
            w = weights(qtype, n, n_rows)
            a = act_quantize(qtype, x)
            repack = qtype in REPACKED
            path = PATH_REPACKED if repack else PATH_TILED if qtype >= Q2_K and n_tok >= TILED_MIN_BATCH else PATH_VEC_DOT
            ym = mul_mat(qtype, w, x, repack)
            yv = vec_dot(qtype, w, a, n)
            same = np.sum(ym.view(np.uint32) == yv.view(np.uint32))
            print(f"{name} n={n} tok={n_tok}: mul_mat ({PATH_NAMES[path]}) == vec_dot in {same}/{ym.size}")
            head = struct.pack("<32s7I2Q", f"{name}_{n}".encode(), 1, qtype, n, n_rows, n_tok, i, path,
                               w.nbytes, a.nbytes)
            records.append(head + w.tobytes() + a.tobytes() + ym.tobytes() + yv.tobytes())
    out = HERE / "vec_dot_k_fixtures.bin"
    out.write_bytes(b"HLVK" + struct.pack("<2I", 1, len(records)) + b"".join(records))
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(records)} records)")


if __name__ == "__main__":
    main()
