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
  mistral-q8_0  llama as Mistral-style files write it: head size from
                attention.key_length (32, n_embd / n_head = 16); no
                sliding_window (llama.cpp ignores one, hearth applies it:
                make_window_models.py has the models with windows)
  qwen2-f16     qwen2: q/k/v biases, NEOX rope, base 1e6; n_embd 72, head 18
  qwen3-q8_0    qwen3: QK-norm, NEOX rope, head size 32 != 64 / 4
  gemma3-q8_0   gemma3: sliding window 20 with the period pattern (3: layers
                0, 1, 3 windowed, 2 global), global rope base 1e6
  gemma3-f16    gemma3: window 13 from a per-layer bool pattern, rope base
                2e4 for the windowed layers, linear rope scaling 2 on the global
                one, n_embd 72, n_ff 136, head 24
and YARN_MODELS (references in yarn_reference.json, make_yarn_reference.py):
  llama-yarn-f32  llama with YaRN rope scaling (factor 4 over an original
                context of 64, rope.scaling.attn_factor 1.25): normal pairs,
                head 32 so the ramp spans pairs 0..5 of 16
  qwen2-yarn-f16  qwen2 with YaRN (factor 2.5, original context 40): NEOX
                pairs, head 24, base 1e6
and PHI3_MODELS (references in phi3_reference.json, make_phi3_reference.py):
  tinyphi-f16   phi3: fused attn_qkv with its bias, fused ffn_up (gate rows
                then up rows), rope on 16 of the 24 dimensions of a head
                (Phi-4-mini's partial rotary), LongRoPE factors with an
                original context of 64, so llama.cpp's padded context (256)
                takes rope_factors_long, and the converter's attention factor
                sqrt(1 + ln(256 / 64) / ln 64); sliding_window 16 in the
                metadata, which llama.cpp disables for phi3 (and hearth too);
                n_embd 72, 3 heads, 1 KV head, n_ff 136
  tinyphi-q8_0  phi3: separate attn_q/k/v, fused ffn_up, an original context
                of 256 (context_length 1024), so rope_factors_short, GQA 2:1,
                tied output, sliding_window 0 (as Phi-4 files write it)
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import write_all  # noqa: E402

SEED = 20251121

MODELS = [
    dict(name="llama3-f32", arch="llama", type="F32", n_embd=40, n_head=4, n_head_kv=2, n_ff=136, n_layer=2,
         tied=True, freq_base=500000.0, llama3_rope=dict(factor=8.0, low=1.0, high=4.0, orig_ctx=32)),
    dict(name="mistral-q8_0", arch="llama", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, head_dim=32, n_ff=160,
         n_layer=2, tied=False),
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

# YaRN models: their references (make_yarn_reference.py, yarn_reference.json)
# come from another machine than arch_reference.json's, hence a list of
# their own; written after MODELS, with seeds SEED + 6 and SEED + 7.
YARN_MODELS = [
    dict(name="llama-yarn-f32", arch="llama", type="F32", n_embd=64, n_head=2, n_head_kv=1, n_ff=136, n_layer=2,
         tied=True, rope_scaling=("yarn", 4.0), yarn_orig_ctx=64, rope_attn_factor=1.25),
    dict(name="qwen2-yarn-f16", arch="qwen2", type="F16", n_embd=72, n_head=3, n_head_kv=1, n_ff=200, n_layer=2,
         tied=False, freq_base=1000000.0, norm_eps=1e-6, bias=True, rope_scaling=("yarn", 2.5), yarn_orig_ctx=40),
]

# phi3 models: written after the others from a seed of their own (SEED +
# 300 + i), so that models added to the lists above do not change them.
# Their names (general.name) avoid "phi3" and "phi-3": llama.cpp gives a
# model so named Phi-3's special-token attributes, which look up tokens
# ("</s>") this vocabulary lacks.
PHI3_MODELS = [
    dict(name="tinyphi-f16", arch="phi3", type="F16", n_embd=72, n_head=3, n_head_kv=1, n_ff=136, n_layer=2,
         tied=False, n_rot=16, fused_qkv=True, bias=True, fused_up=True, n_ctx_train=256, yarn_orig_ctx=64,
         longrope=dict(long=(1.0, 6.0), short=(1.0, 1.3)), sliding_window=16),
    dict(name="tinyphi-q8_0", arch="phi3", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, n_ff=160, n_layer=3,
         tied=True, fused_up=True, n_ctx_train=1024, yarn_orig_ctx=256,
         longrope=dict(long=(1.0, 9.0), short=(0.9, 1.4)), sliding_window=0),
]


def longrope_factors(n_rot, long, short, n_ctx_train, orig_ctx):
    """LongRoPE (Ding et al. 2024, arXiv:2402.13753) as Phi-3 files carry it:
    one long and one short frequency factor per rotated pair (here geometric
    ramps between the given ends), and the attention factor the converter
    (convert_hf_to_gguf.py, Phi3MiniModel) writes for a context of
    n_ctx_train over an original one of orig_ctx."""
    def ramp(lo, hi):
        return np.geomspace(lo, hi, n_rot // 2).astype(np.float32)
    scale = n_ctx_train / orig_ctx
    attn_factor = math.sqrt(1 + math.log(scale) / math.log(orig_ctx)) if scale > 1.0 else 1.0
    return (ramp(*long), ramp(*short)), attn_factor


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


def prepare(spec):
    """spec with the frequency factors of its llama3_rope or longrope, if it has one."""
    if "longrope" in spec:
        head_dim = spec["n_embd"] // spec["n_head"]
        factors, attn_factor = longrope_factors(spec.get("n_rot", head_dim), **spec["longrope"],
                                                n_ctx_train=spec["n_ctx_train"], orig_ctx=spec["yarn_orig_ctx"])
        return dict(spec, rope_factors=factors, rope_attn_factor=attn_factor)
    if "llama3_rope" not in spec:
        return spec
    head_dim = spec.get("head_dim", spec["n_embd"] // spec["n_head"])
    factors = llama3_rope_factors(head_dim, spec.get("freq_base", 10000.0), **spec["llama3_rope"])
    return dict(spec, rope_freqs=factors)


if __name__ == "__main__":
    write_all(MODELS + YARN_MODELS, SEED, __file__, prepare)
    write_all(PHI3_MODELS, SEED + 300, __file__, prepare)
