#!/usr/bin/env python3
"""Writes quant_fixtures.bin: reference (de)quantization results from gguf-py
(gguf.quants), an implementation independent of hearth, for tests/test_quant.c.

Usage: python3 tests/reference/quant/make_quant_fixtures.py [model.gguf]
The model defaults to models/SmolLM2-135M-Instruct.Q4_1.gguf; a few of its rows
are copied (raw blocks plus gguf-py's floats) so that the C test checks real
weights without reading GGUF itself. Random data uses a fixed seed, so the
output only changes when gguf-py or numpy change their results.

File format, all little-endian:
  header:  char magic[4] = "HLQF", u32 version = 1, u32 n_records
  record:  char name[32] (NUL-padded)
           u32 kind       0 = dequantize: a = blocks, b = float32 gguf-py dequantized
                          1 = quantize:   a = float32 input, b = blocks gguf-py quantized
           u32 type       ggml type id (GGMLQuantizationType)
           u32 n_rows, u32 n_per_row   (elements per row)
           u64 a_bytes, u64 b_bytes
           a_bytes bytes of a, then b_bytes bytes of b
"""
import struct
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader, quants

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DEQUANTIZE, QUANTIZE = 0, 1

rng = np.random.default_rng(20240611)


def record(name, kind, qtype, n_rows, n_per_row, a, b):
    a, b = np.ascontiguousarray(a).tobytes(), np.ascontiguousarray(b).tobytes()
    head = struct.pack("<32s4I2Q", name.encode(), kind, int(qtype), n_rows, n_per_row, len(a), len(b))
    return head + a + b


def random_scales(n):
    """fp16 scales over many magnitudes, both signs, some fp16-subnormal and zero."""
    mag = 10.0 ** rng.uniform(-7, 2, n)
    s = (mag * rng.choice([-1.0, 1.0], n)).astype(np.float16)
    s[rng.random(n) < 0.05] = 0
    return s


def random_blocks(qtype, n_rows, n_per_row):
    """Rows of random blocks: random quants, random finite fp16 scales."""
    n_blocks = n_rows * n_per_row // 32
    qs_bytes = {T.Q4_0: 16, T.Q4_1: 16, T.Q8_0: 32}[qtype]
    scales = [random_scales(n_blocks).view(np.uint8).reshape(n_blocks, 2)]
    if qtype == T.Q4_1:  # d, then m
        scales.append(random_scales(n_blocks).view(np.uint8).reshape(n_blocks, 2))
    qs = rng.integers(0, 256, (n_blocks, qs_bytes), dtype=np.uint8)
    return np.concatenate(scales + [qs], axis=1).reshape(n_rows, -1)


def dequant_record(name, qtype, raw, n_rows, n_per_row):
    raw = np.ascontiguousarray(raw).view(np.uint8)  # gguf-py takes rows of bytes
    floats = quants.dequantize(raw, qtype).astype(np.float32, copy=False)
    assert floats.shape == (n_rows, n_per_row)
    return record(name, DEQUANTIZE, qtype, n_rows, n_per_row, raw, floats)


def quant_record(name, qtype, x):
    with np.errstate(over="ignore"):  # some inputs overflow fp16 on purpose
        q = quants.quantize(x, qtype)
    return record(name, QUANTIZE, qtype, x.shape[0], x.shape[1], x, q)


def conversion_inputs():
    """Floats that probe fp16/bf16 rounding: ties, the fp16 subnormal range and
    its edges, overflow to inf, signed zeros and infinities, random values."""
    f16 = np.arange(0, 0x7C00, 97, dtype=np.uint16).view(np.float16).astype(np.float32)
    ties = (f16[:-1] + f16[1:]) / 2  # exact halfway points between fp16 neighbours
    special = np.array([0.0, -0.0, np.inf, -np.inf, 65504, 65519.99, 65520, 1e6, 2.0**-24,
                        2.0**-25, 2.0**-25 * 1.0001, 2.0**-14, 2.0**-14 * (1 - 2.0**-11), 1e-30],
                       dtype=np.float32)
    rand = (rng.standard_normal(512) * 10.0 ** rng.uniform(-9, 6, 512)).astype(np.float32)
    x = np.concatenate([f16, -ties, ties, special, -special, rand]).astype(np.float32)
    return x[: x.size // 32 * 32].reshape(-1, 32)


def quant_inputs():
    """8 rows of 256 floats: normal data at several scales, plus blocks that hit
    the corner cases of the reference quantizers (all zero, constant, exact
    rounding ties, outliers, negative extremes, fp16 overflow of d)."""
    x = rng.standard_normal((8, 256)).astype(np.float32)
    x *= (10.0 ** rng.uniform(-6, 3, (8, 8, 1))).astype(np.float32).repeat(32, axis=1).reshape(8, 256)
    blocks = x.reshape(-1, 32)
    blocks[0] = 0
    blocks[1] = 0.25
    blocks[2] = np.arange(32) - 16 + 0.5  # ties after scaling
    blocks[2][0] = 127
    blocks[3] = (np.arange(32) - 8) * 0.5
    blocks[3][5] = -8
    blocks[4][7] = -1e4  # outlier, negative max
    blocks[5] = rng.uniform(-1, 1, 32) * 1e6  # d beyond the fp16 range
    blocks[6] = np.linspace(-3, 7, 32)
    return x


def model_records(path):
    reader = GGUFReader(path)
    tensors = {t.name: t for t in reader.tensors}
    out = []
    for tname, short, rows in [("blk.0.attn_q.weight", "model_attn_q", [0, 1, 300, 575]),
                               ("blk.0.ffn_down.weight", "model_ffn_down", [0, 575]),
                               ("token_embd.weight", "model_token_embd", [0, 1, 12345, 49151])]:
        t = tensors[tname]
        raw = np.asarray(t.data)[rows]
        out.append(dequant_record(short, T(t.tensor_type), raw, len(rows), int(t.shape[0])))
    return out


def main():
    model = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"
    recs = [
        dequant_record("rand_f16", T.F16, rng.integers(0, 1 << 16, (4, 96), dtype=np.uint16), 4, 96),
        dequant_record("rand_bf16", T.BF16, rng.integers(0, 1 << 16, (4, 96), dtype=np.uint16), 4, 96),
    ]
    for qtype in (T.Q4_0, T.Q4_1, T.Q8_0):
        recs.append(dequant_record("rand_" + qtype.name.lower(), qtype, random_blocks(qtype, 4, 256), 4, 256))
    conv = conversion_inputs()
    recs.append(quant_record("conv_f16", T.F16, conv))
    conv_bf16 = conv.copy()
    conv_bf16.reshape(-1)[:4] = np.array([0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FBFFFFF],
                                         dtype=np.uint32).view(np.float32)  # NaNs
    recs.append(quant_record("conv_bf16", T.BF16, conv_bf16))
    x = quant_inputs()
    for qtype in (T.Q4_0, T.Q4_1, T.Q8_0):
        recs.append(quant_record("quant_" + qtype.name.lower(), qtype, x))
    recs += model_records(model)

    out = HERE / "quant_fixtures.bin"
    out.write_bytes(b"HLQF" + struct.pack("<2I", 1, len(recs)) + b"".join(recs))
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(recs)} records)")


if __name__ == "__main__":
    main()
