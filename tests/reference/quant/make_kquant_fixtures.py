#!/usr/bin/env python3
"""Writes kquant_fixtures.bin: reference results for Q5_0, Q5_1, the K-quants
Q2_K ... Q6_K and Q8_K, for tests/test_quant_k.c. Two independent sources:

- gguf-py (gguf.quants): dequantization of every type but Q8_K, and the
  Q5_0/Q5_1 quantizers (gguf-py has no K-quant quantizers);
- llama.cpp (the libggml-base.so bundled with llama-cpp-python, by ctypes):
  ggml_quantize_chunk(type, x, dst, 0, n_rows, n_per_row, NULL), i.e. the
  reference quantizers quantize_row_*_ref without an importance matrix, and
  quantize_row_q8_K_ref / dequantize_row_q8_K for Q8_K.
For each input (a 64 x 512 matrix shaped like LLM weights, for the K types
only; corner-case super-blocks; a row of real weights) the file holds the
reference's bytes (gguf-py's for Q5_0/Q5_1, checked here to equal
llama.cpp's) and the round-trip RMSE of those bytes (dequantized by gguf-py;
Q8_K by ggml): the bar hearth's quantizers must meet.

Usage: python3 tests/reference/quant/make_kquant_fixtures.py [model.gguf]
Needs gguf, numpy and llama-cpp-python 0.3.36. The model (default
models/SmolLM2-135M-Instruct.Q4_1.gguf) gives a row of real weights, which
llama.cpp quantizes to each type: blocks as a real file has them. Random data
uses a fixed seed, so the output only changes when gguf-py, numpy or
llama.cpp change their results.

File format: that of make_quant_fixtures.py (magic "HLQF", version 1, the
same record header), with two more record kinds:
  kind 2 = input:      a = float32 rows, b empty
  kind 3 = reference:  a = the blocks the reference quantizer makes of the
                       last input record, b = float64 RMSE of their
                       dequantization against that input (inf or NaN where
                       it overflows)
"""
import ctypes
import glob
import os
import struct
import sys
from pathlib import Path

import llama_cpp
import numpy as np
from gguf import GGML_QUANT_SIZES, GGUFReader, quants
from gguf import GGMLQuantizationType as T

from make_quant_fixtures import DEQUANTIZE, ROOT, record

HERE = Path(__file__).resolve().parent
INPUT, REFERENCE = 2, 3
Q5_TYPES = (T.Q5_0, T.Q5_1)
K_TYPES = (T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K)

rng = np.random.default_rng(20250301)

ggml = ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so*"))[0])
ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
ggml.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                     ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
for fn in (ggml.quantize_row_q8_K_ref, ggml.dequantize_row_q8_K):
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]


def row_bytes(qtype, n):
    block, size = GGML_QUANT_SIZES[qtype]
    return n // block * size


def llama_quantize(qtype, x):
    """llama.cpp's reference quantization of the rows x (float32)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.zeros((x.shape[0], row_bytes(qtype, x.shape[1])), dtype=np.uint8)
    if qtype == T.Q8_K:  # not a ggml_quantize_chunk type: an activation type only
        ggml.quantize_row_q8_K_ref(x.ctypes.data, out.ctypes.data, x.size)
    else:
        ggml.ggml_quantize_chunk(int(qtype), x.ctypes.data, out.ctypes.data, 0, x.shape[0], x.shape[1], None)
    return out


def dequantize(qtype, q, n_per_row):
    if qtype != T.Q8_K:
        return quants.dequantize(q, qtype)
    out = np.zeros((q.shape[0], n_per_row), dtype=np.float32)
    ggml.dequantize_row_q8_K(q.ctypes.data, out.ctypes.data, out.size)
    return out


def reference_quantize(qtype, x):
    """gguf-py's quantization for Q5_0/Q5_1 (which must equal llama.cpp's),
    llama.cpp's for the K types."""
    q = llama_quantize(qtype, x)
    if qtype in Q5_TYPES:
        with np.errstate(over="ignore"):  # fp16 overflow of d, on purpose
            q_py = quants.quantize(x, qtype)
        assert np.array_equal(q_py, q), f"gguf-py and llama.cpp disagree on {qtype.name}"
    return q


def reference_records(name, x, qtypes):
    """The input record, then the reference quantization to each type."""
    recs = [record(name, INPUT, T.F32, x.shape[0], x.shape[1], x, np.zeros(0, np.uint8))]
    for qtype in qtypes:
        q = reference_quantize(qtype, x)
        with np.errstate(all="ignore"):
            err = dequantize(qtype, q, x.shape[1]).astype(np.float64) - x
            rmse = np.sqrt(np.mean(err * err))
        recs.append(record(name + "_" + qtype.name.lower(), REFERENCE, qtype, x.shape[0], x.shape[1], q,
                           np.array([rmse], dtype=np.float64)))
    return recs


def weights_like(n_rows, n_per_row):
    """Random floats shaped like LLM weights: normal, a magnitude per 16
    elements spanning 1e-3 .. 10, 1% outliers up to 20x, some sub-blocks of
    16 all zero and some one-signed."""
    x = rng.standard_normal((n_rows, n_per_row // 16, 16)).astype(np.float32)
    x *= (10.0 ** rng.uniform(-3, 1, (n_rows, n_per_row // 16, 1))).astype(np.float32)
    x[rng.random(x.shape[:2]) < 0.02] = 0
    one_signed = rng.random(x.shape[:2]) < 0.05
    x[one_signed] = np.abs(x[one_signed])
    x = x.reshape(n_rows, n_per_row)
    outliers = rng.random(x.shape) < 0.01
    x[outliers] *= rng.uniform(2, 20, int(outliers.sum())).astype(np.float32)
    return x


def edge_rows():
    """One super-block per row, each a corner case of the searches: all zero,
    constant, below GROUP_MAX_EPS, tiny, huge (fp16 overflow of d), one
    outlier, one-signed, integer grids (rounding ties), sparse, half zero."""
    n = 256
    ramp = np.arange(n, dtype=np.float32)
    sparse = rng.standard_normal(n)
    sparse[rng.random(n) < 0.9] = 0
    half = rng.standard_normal(n)
    half[:128] = 0
    outlier = rng.standard_normal(n)
    outlier[7] = -1e4
    rows = [np.zeros(n), np.full(n, 0.25), np.full(n, -3.0), ramp - 128, (ramp % 16 - 8) * 0.5,
            rng.standard_normal(n) * 1e-20, rng.standard_normal(n) * 1e-6, rng.standard_normal(n) * 1e6,
            rng.standard_normal(n) * 1e30, np.abs(rng.standard_normal(n)) + 5, -np.abs(rng.standard_normal(n)) - 5,
            outlier, rng.integers(-4, 4, n), rng.integers(-40, 40, n) / 4, np.where(rng.random(n) < 0.5, 0.0, 1.0),
            sparse, half, rng.standard_normal(n) ** 3]
    return np.array(rows, dtype=np.float32)


def random_scales(n):
    """fp16 scales over many magnitudes, both signs, some fp16-subnormal and zero."""
    mag = 10.0 ** rng.uniform(-7, 2, n)
    s = (mag * rng.choice([-1.0, 1.0], n)).astype(np.float16)
    s[rng.random(n) < 0.05] = 0
    return s


# Byte offsets of the fp16 fields of each block (ggml-common.h).
HALF_FIELDS = {T.Q5_0: [0], T.Q5_1: [0, 2], T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2],
               T.Q6_K: [208]}


def random_blocks(qtype, n_rows, n_per_row):
    """Rows of random bytes (all quants and sub-block scales) with random
    finite fp16 d (and m/dmin)."""
    block, size = GGML_QUANT_SIZES[qtype]
    n_blocks = n_rows * n_per_row // block
    blocks = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    for off in HALF_FIELDS[qtype]:
        blocks[:, off:off + 2] = random_scales(n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return blocks.reshape(n_rows, -1)


def dequant_record(name, qtype, raw, n_per_row):
    raw = np.ascontiguousarray(raw).view(np.uint8)
    floats = quants.dequantize(raw, qtype).astype(np.float32, copy=False)
    assert floats.shape == (raw.shape[0], n_per_row)
    return record(name, DEQUANTIZE, qtype, raw.shape[0], n_per_row, raw, floats)


def model_row(path):
    """A row of real weights (gguf-py's floats of a Q4_1 ffn_down: 1536 per
    row, a multiple of 256)."""
    t = {t.name: t for t in GGUFReader(path).tensors}["blk.0.ffn_down.weight"]
    raw = np.asarray(t.data)[[575]]
    return quants.dequantize(raw, T(t.tensor_type)).astype(np.float32)


def main():
    model = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"
    recs = []
    for qtype in Q5_TYPES + K_TYPES[:-1]:  # gguf-py cannot dequantize Q8_K
        recs.append(dequant_record("rand_" + qtype.name.lower(), qtype, random_blocks(qtype, 2, 256), 256))
    real = model_row(model)
    for qtype in K_TYPES[:-1]:  # blocks llama.cpp makes of real weights (the first 512)
        q = llama_quantize(qtype, real[:, :512])
        recs.append(dequant_record("real_" + qtype.name.lower(), qtype, q, 512))
    recs += reference_records("matrix", weights_like(64, 512), K_TYPES)  # the RMSE bar
    recs += reference_records("edges", edge_rows(), Q5_TYPES + K_TYPES)
    recs += reference_records("model", real, Q5_TYPES + K_TYPES)

    out = HERE / "kquant_fixtures.bin"
    out.write_bytes(b"HLQF" + struct.pack("<2I", 1, len(recs)) + b"".join(recs))
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(recs)} records)")


if __name__ == "__main__":
    main()
