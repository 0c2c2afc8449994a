#!/usr/bin/env python3
"""Writes tiny random-weight models of each architecture hearth runs besides
plain llama (tests/reference/tiny/), with gguf-py, for the conformance test
tests/test_tiny_models.c: llama.cpp's logits for them are recorded by
make_arch_reference.py in arch_reference.json.

Each model covers variants of its architecture with odd sizes where the
weight type allows (F32/F16 rows need no block multiple; Q8_0 rows are
multiples of 32), grouped-query attention, and a head size other than
n_embd / n_head where the architecture takes one:
  llama3-f32    llama with Llama 3 rope scaling: rope_freqs.weight frequency
                factors from the Llama 3 formula; n_embd 40, head 10, n_ff 136
  mistral-q8_0  llama as Mistral-style files write it: sliding_window metadata
                (ignored for llama, as llama.cpp does), head size from
                attention.key_length (32, n_embd / n_head = 16)
  qwen2-f16     qwen2: q/k/v biases, NEOX rope, base 1e6; n_embd 72, head 18
  qwen3-q8_0    qwen3: QK-norm, NEOX rope, head size 32 != 64 / 4
  gemma3-q8_0   gemma3: sliding window 20 with the period pattern (3: layers
                0, 1, 3 windowed, 2 global), global rope base 1e6
  gemma3-f16    gemma3: window 13 from a per-layer bool pattern, rope base
                2e4 for the windowed layers, linear rope scaling 2 on the global
                one, n_embd 72, n_ff 136, head 24
The reference sequence (90 tokens) is longer than every window and than the
first 64 positions, so masking matters and reaches past a whole block of 64.

The vocabulary is tests/reference/tiny's byte-level BPE ("gpt2"); llama.cpp
runs each of these architectures with it. Weights are N(0, sigma) as in
make_tiny_models.py (see there why the embeddings have rms 0.4); norms ~1.

Usage: python3 tests/reference/arch/make_arch_models.py [OUT_DIR]
(default: the folder of this script; rerun make_arch_reference.py after it)
"""
import math
import sys
from pathlib import Path

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import vocabulary  # noqa: E402

SEED = 20251121
N_CTX_TRAIN = 256

MODELS = [
    dict(name="llama3-f32", arch="llama", type="F32", n_embd=40, n_head=4, n_head_kv=2, n_ff=136, n_layer=2,
         tied=True, freq_base=500000.0, llama3_rope=dict(factor=8.0, low=1.0, high=4.0, orig_ctx=32)),
    dict(name="mistral-q8_0", arch="llama", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, head_dim=32, n_ff=160,
         n_layer=2, tied=False, sliding_window=8),
    dict(name="qwen2-f16", arch="qwen2", type="F16", n_embd=72, n_head=4, n_head_kv=2, n_ff=200, n_layer=2,
         tied=True, freq_base=1000000.0, norm_eps=1e-6, bias=True),
    dict(name="qwen3-q8_0", arch="qwen3", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, head_dim=32, n_ff=160,
         n_layer=3, tied=False, freq_base=1000000.0, norm_eps=1e-6, qk_norm=True),
    dict(name="gemma3-q8_0", arch="gemma3", type="Q8_0", n_embd=64, n_head=4, n_head_kv=1, head_dim=32, n_ff=160,
         n_layer=4, tied=True, freq_base=1000000.0, norm_eps=1e-6, qk_norm=True, post_norms=True,
         sliding_window=20, swa_pattern=3),
    dict(name="gemma3-f16", arch="gemma3", type="F16", n_embd=72, n_head=3, n_head_kv=1, head_dim=24, n_ff=136,
         n_layer=3, tied=False, freq_base=1000000.0, norm_eps=1e-6, qk_norm=True, post_norms=True,
         sliding_window=13, swa_pattern=[True, False, True], freq_base_swa=20000.0, rope_scaling=("linear", 2.0)),
]

FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7}


def llama3_rope_factors(head_dim, base, factor, low, high, orig_ctx):
    """Llama 3's frequency factors, one per rotated pair, as
    convert_hf_to_gguf.py derives rope_freqs.weight from rope_scaling
    (factor, low_freq_factor, high_freq_factor, original_max_position_embeddings)."""
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    low_wavelen, high_wavelen = orig_ctx / low, orig_ctx / high
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (orig_ctx / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_model(spec, out_dir, rng):
    tokens, types, merges, eot = vocabulary()
    n_vocab = len(tokens)
    arch = spec["arch"]
    n_embd, n_head, n_head_kv, n_ff = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["n_ff"]
    head_dim = spec.get("head_dim", n_embd // n_head)
    q_dim, kv_dim = n_head * head_dim, n_head_kv * head_dim
    qtype = gguf.GGMLQuantizationType[spec["type"]]

    path = out_dir / f"{spec['name']}.gguf"
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(spec["name"])
    w.add_description(f"random weights for hearth's tests ({Path(__file__).name}, seed {SEED})")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(n_embd)
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    if head_dim != n_embd // n_head:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(spec.get("norm_eps", 1e-5))
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(spec.get("freq_base", 10000.0))
    if "rope_scaling" in spec:
        kind, factor = spec["rope_scaling"]
        w.add_rope_scaling_type(gguf.RopeScalingType(kind))
        w.add_rope_scaling_factor(factor)
    if "sliding_window" in spec:
        w.add_sliding_window(spec["sliding_window"])
    if "swa_pattern" in spec:
        w.add_sliding_window_pattern(spec["swa_pattern"])
    if "freq_base_swa" in spec:
        w.add_rope_freq_base_swa(spec["freq_base_swa"])
    w.add_vocab_size(n_vocab)
    w.add_file_type(FILE_TYPE[spec["type"]])

    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types([int(t) for t in types])
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    def weight(name, rows, cols, sigma):
        """A [rows, cols] matrix (GGUF shape {cols, rows}) in the model's type."""
        data = rng.normal(0.0, sigma, size=(rows, cols)).astype(np.float32)
        if qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    def vector(name, n, mean, sigma):
        w.add_tensor(name, (mean + rng.normal(0.0, sigma, size=n)).astype(np.float32))

    weight("token_embd.weight", n_vocab, n_embd, 0.4)
    if "llama3_rope" in spec:
        w.add_tensor("rope_freqs.weight",
                     llama3_rope_factors(head_dim, spec.get("freq_base", 10000.0), **spec["llama3_rope"]))
    for il in range(spec["n_layer"]):
        vector(f"blk.{il}.attn_norm.weight", n_embd, 1.0, 0.1)
        weight(f"blk.{il}.attn_q.weight", q_dim, n_embd, 1.2 / np.sqrt(n_embd))
        weight(f"blk.{il}.attn_k.weight", kv_dim, n_embd, 1.2 / np.sqrt(n_embd))
        weight(f"blk.{il}.attn_v.weight", kv_dim, n_embd, 1.0 / np.sqrt(n_embd))
        if spec.get("bias"):
            vector(f"blk.{il}.attn_q.bias", q_dim, 0.0, 0.3)
            vector(f"blk.{il}.attn_k.bias", kv_dim, 0.0, 0.3)
            vector(f"blk.{il}.attn_v.bias", kv_dim, 0.0, 0.3)
        if spec.get("qk_norm"):
            vector(f"blk.{il}.attn_q_norm.weight", head_dim, 1.0, 0.2)
            vector(f"blk.{il}.attn_k_norm.weight", head_dim, 1.0, 0.2)
        weight(f"blk.{il}.attn_output.weight", n_embd, q_dim, 0.5 / np.sqrt(q_dim))
        if spec.get("post_norms"):
            vector(f"blk.{il}.post_attention_norm.weight", n_embd, 1.0, 0.1)
        vector(f"blk.{il}.ffn_norm.weight", n_embd, 1.0, 0.1)
        weight(f"blk.{il}.ffn_gate.weight", n_ff, n_embd, 1.0 / np.sqrt(n_embd))
        weight(f"blk.{il}.ffn_up.weight", n_ff, n_embd, 1.0 / np.sqrt(n_embd))
        weight(f"blk.{il}.ffn_down.weight", n_embd, n_ff, 0.5 / np.sqrt(n_ff))
        if spec.get("post_norms"):
            vector(f"blk.{il}.post_ffw_norm.weight", n_embd, 1.0, 0.1)
    vector("output_norm.weight", n_embd, 1.0, 0.1)
    if not spec["tied"]:
        weight("output.weight", n_vocab, n_embd, 1.5 / np.sqrt(n_embd))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def main():
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    out_dir.mkdir(parents=True, exist_ok=True)
    for i, spec in enumerate(MODELS):
        rng = np.random.default_rng(SEED + i)
        path = write_model(spec, out_dir, rng)
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
