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
import struct
from pathlib import Path

import numpy as np

from make_vec_dot_k_fixtures import F32, activations, mul_mat

HERE = Path(__file__).resolve().parent
F16 = 1
NP_TYPE = {F32: np.float32, F16: np.float16}
rng = np.random.default_rng(20251121)


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
            w, x = weights(wtype, n, n_rows), activations(n, n_tok, rng)
            y = mul_mat(wtype, w, x, repack=False)
            records.append(struct.pack("<4I", wtype, n, n_rows, n_tok) + w.tobytes() + x.tobytes() + y.tobytes())
            print(f"{name} n={n} rows={n_rows} tok={n_tok}")
    out = HERE / "vec_dot_f_fixtures.bin"
    out.write_bytes(b"HLVF" + struct.pack("<2I", 1, len(records)) + b"".join(records))
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(records)} records)")


if __name__ == "__main__":
    main()
