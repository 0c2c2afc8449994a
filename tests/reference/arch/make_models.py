#!/usr/bin/env python3
"""Writes the tiny random-weight models of tests/reference/arch/ with gguf-py:
every architecture hearth runs besides the plain llama files of
tests/reference/tiny/, for tests/test_tiny_models.c (and the offload, flash
attention, KV cache and context-shift tests that reuse them).
make_references.py records their reference logits.

Usage: python3 tests/reference/arch/make_models.py [--out DIR] [NAME...]
(needs numpy and gguf-py 0.19.0; writes NAME.gguf, by default every model of
MODELS, into DIR, by default this folder; rerun make_references.py for the
fixtures of the models rewritten). The committed files are this script's
output byte for byte: a change to a model or to the order of its draws
changes its file and its reference.

MODELS is the table: one entry per file, a dict of
  name, arch, type        the file (NAME.gguf), general.architecture, the
                          type of every 2-D weight (F32, F16, Q8_0; F32
                          vectors); rows of Q8_0 weights are multiples of 32,
                          the others take odd sizes
  family                  the block, a key of FAMILIES (default: arch)
  n_embd, n_head, n_head_kv, n_ff, n_layer, head_dim, n_rot, tied ...
                          the hyperparameters and variants the writers read
  seed, made_by           the seed of the weights' generator, and the script
                          name and seed general.description names
The entries come in series (series()): model i of a series draws its
weights from the series' seed + i; the description names the script that
first wrote the series (the make_<family>_models.py scripts this one
replaced), so that the files stay as committed.

Two writers: the "llama" family (llama, qwen2, qwen3, gemma3, phi3: RMSNorm,
SwiGLU, rope) is tests/reference/tiny/make_tiny_models.py's write_model,
whose docstring lists its options (after prepare() adds Llama 3's or
LongRoPE's frequency factors); every other family is write_blocks() below,
with the options of its FAMILIES entry (an entry may override them). The
vocabulary is tiny's byte-level BPE ("gpt2"); llama.cpp runs each
architecture with it. Weights are N(0, sigma) as in make_tiny_models.py
(see there why the embeddings have rms 0.4); norm weights ~1, biases
~N(0, 0.1..0.3).

The models, by series:
  llama3-f32    llama with Llama 3 rope scaling: rope_freqs.weight frequency
                factors from the Llama 3 formula; n_embd 40, head 10, n_ff 136
  mistral-q8_0  llama as Mistral-style files write it: head size from
                attention.key_length (32, n_embd / n_head = 16); no
                sliding_window (llama.cpp ignores one, hearth applies it:
                the window series has the models with windows)
  qwen2-f16     qwen2: q/k/v biases, NEOX rope, base 1e6; n_embd 72, head 18
  qwen3-q8_0    qwen3: QK-norm, NEOX rope, head size 32 != 64 / 4
  gemma3-q8_0   gemma3: sliding window 20 with the period pattern (3: layers
                0, 1, 3 windowed, 2 global), global rope base 1e6
  gemma3-f16    gemma3: window 13 from a per-layer bool pattern, rope base
                2e4 for the windowed layers, linear rope scaling 2 on the global
                one, n_embd 72, n_ff 136, head 24
  llama-yarn-f32  llama with YaRN rope scaling (factor 4 over an original
                context of 64, rope.scaling.attn_factor 1.25): normal pairs,
                head 32 so the ramp spans pairs 0..5 of 16
  qwen2-yarn-f16  qwen2 with YaRN (factor 2.5, original context 40): NEOX
                pairs, head 24, base 1e6
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
  gpt2-f16         learned positions (position_embd, context_length 128
                   rows), fused attn_qkv with bias, tied output; n_embd 72,
                   3 heads of 24, n_ff 200
  gpt2-q8_0        the same, untied output, 3 layers, 4 heads of 16
  starcoder2-f16   NEOX rope over whole heads (base 1e5), separate attn_q/k/v
                   with biases, GQA 3:1, untied output; n_embd 72, n_ff 136
  starcoder2-q8_0  fused attn_qkv with bias, GQA 2:1, tied output (no
                   sliding_window, as mistral-q8_0)
  gptneox-f16      parallel residual, NEOX rope on 6 of the 24 dimensions of a
                   head (Pythia's 25%), untied output
  gptneox-q8_0     sequential residual (use_parallel_residual false), rope on
                   8 of 16 dimensions, 3 layers
  mpt-f16     ALiBi (Press, Smith & Lewis 2022, arXiv:2108.12409; head
              counts no power of two: 5, 6, 12, ggml's second run of
              slopes); no biases at all (MPT-7B's no_bias), clamp_kqv 0.5
              (it bites: the q/k/v values reach past it), max_alibi_bias 8,
              tied output; n_embd 80, 5 heads of 16, n_ff 216
  mpt-q8_0    every LayerNorm and projection bias, no clamp_kqv,
              max_alibi_bias 4, untied output, 3 layers; n_embd 96, 12 heads
              of 8, n_ff 160
  bloom-f16   ALiBi; token_embd_norm, biases everywhere (as llama.cpp
              requires), tied output; n_embd 72, 6 heads of 12, n_ff 200
              (llama.cpp sets bloom's max_alibi_bias to 8 itself)
  bloom-q8_0  the same, untied output, 3 layers; n_embd 96, 6 heads of 16,
              n_ff 160
  mixtral-f16   llama's block with a mixture of experts (llama.expert_count
                4, expert_used_count 2: the router ffn_gate_inp and the
                stacked experts ffn_gate_exps, ffn_up_exps, ffn_down_exps),
                n_embd 72, 6 heads of 12 over 2 KV heads, n_ff 100, untied
  mixtral-q8_0  the same, n_embd 64, 4 heads of 16 over 2 KV heads, n_ff 96,
                tied output; the router's weights are larger than the others'
                so that tokens spread over the experts
  mistral-window-q8_0    llama, llama.attention.sliding_window 8, head size
                         32 from attention.key_length, GQA 2:1, untied output
  starcoder2-window-f16  starcoder2, starcoder2.attention.sliding_window 16,
                         fused attn_qkv with bias, GQA 3:1, untied output
                         (llama.cpp 0.3.36 runs both without their window,
                         so their reference is make_references.py's numpy
                         pass)
  falcon-f16   Falcon-7B's shape: one norm per block, multi-query attention
               (4 heads of 18 over 1 KV head), untied output; n_embd 72,
               n_ff 200, rope base 1e4
  falcon-q8_0  Falcon-40B's: two norms per block (attn_norm_2), grouped
               attention (4 heads of 16 over 2 KV heads), untied output,
               3 layers; n_embd 64, n_ff 160, rope base 5e4, epsilon 1e-6
               Both outputs are untied: tied, these models' greedy text
               repeats one token, with near ties between candidates. The
               falcon seed is one whose greedy tokens after
               test_opencl_offload.c's prompt have no near ties (CPU top-2
               margins >= 0.015 for F16, 0.24 for Q8_0).
  gptj-f16   GPT-J (Wang & Komatsuzaki 2021), laid out by gguf-py's tensor
             map for MODEL_ARCH.GPTJ (no converter writes gptj files):
             biases on the LayerNorms, fc_in, fc_out and lm_head only, one
             LayerNorm per block read by attention and feed-forward,
             rope.dimension_count = rotary_dim, no rope.freq_base; n_embd
             72, 4 heads of 18, rotary on 8 of them, n_ff 200, 2 layers
  gptj-q8_0  n_embd 64, 4 heads of 16, rotary on 6, n_ff 160, 3 layers,
             epsilon 1e-6
The reference sequence (90 tokens) is longer than every window and than the
first 64 positions, so masking matters and reaches past a whole block of 64.
"""
import argparse
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tiny"))
import make_tiny_models  # noqa: E402
from make_tiny_models import Weights, add_vocabulary, close_model, open_model  # noqa: E402

# context_length of write_blocks()'s models (and gpt2's position_embd rows);
# the "llama" family's is make_tiny_models.py's (256) or the entry's n_ctx_train
N_CTX_TRAIN = 128

ALL_BIASES = ("norm", "qkv", "attn_output", "ffn")

# The blocks write_blocks() writes, with tensor names as llama.cpp's loaders
# ask (llama-model.cpp, src/models/<arch>.cpp):
#   norm         "layer" (LayerNorm, attention.layer_norm_epsilon) or "rms"
#   biases       which of ALL_BIASES the LayerNorms and projections have
#   rope_keys    which of rope.dimension_count (n_rot, or the head size) and
#                rope.freq_base (freq_base, or 1e4) the file holds
#   fused_qkv    attn_qkv (q, k, v rows) rather than attn_q/k/v
#   ffn_norm     a norm before the feed-forward (parallel blocks have none)
#   ffn          "gelu" (ffn_up, ffn_down) or "experts" (ffn_gate_inp and
#                the stacked ffn_gate/up/down_exps)
#   position_embd, token_embd_norm, output_bias, attn_norm_2 (an entry's
#                norm_2): the extra tensors of some families
FAMILIES = {
    "llama": dict(writer="llama"),  # make_tiny_models.write_model
    "gpt2": dict(norm="layer", biases=ALL_BIASES, rope_keys=(), position_embd=True),
    "starcoder2": dict(norm="layer", biases=ALL_BIASES, rope_keys=("dimension_count", "freq_base")),
    "gptneox": dict(norm="layer", biases=ALL_BIASES, rope_keys=("dimension_count", "freq_base")),
    "mpt": dict(norm="layer", biases=ALL_BIASES, rope_keys=(), fused_qkv=True),
    "bloom": dict(norm="layer", biases=ALL_BIASES, rope_keys=(), fused_qkv=True, token_embd_norm=True),
    "falcon": dict(norm="layer", biases=("norm",), rope_keys=("freq_base",), fused_qkv=True, ffn_norm=False),
    "gptj": dict(norm="layer", biases=("norm", "ffn"), rope_keys=("dimension_count",), ffn_norm=False,
                 output_bias=True, tied=False),
    "mixtral": dict(norm="rms", biases=(), rope_keys=("dimension_count", "freq_base"), ffn="experts"),
}
for _name in ("qwen2", "qwen3", "gemma3", "phi3"):
    FAMILIES[_name] = FAMILIES["llama"]


def series(made_by, seed, models):
    """models, model i drawn from seed + i; general.description names
    made_by and seed."""
    return [dict(m, seed=seed + i, made_by=(made_by, seed)) for i, m in enumerate(models)]


MODELS = [
    # The "llama" family's variants; the YaRN models' references come from
    # another machine (make_references.py), the phi3 models draw from a
    # series of their own so that models added before them change nothing.
    # Their names (general.name) avoid "phi3" and "phi-3": llama.cpp gives a
    # model so named Phi-3's special-token attributes, which look up tokens
    # ("</s>") this vocabulary lacks.
    *series("make_arch_models.py", 20251121, [
        dict(name="llama3-f32", arch="llama", type="F32", n_embd=40, n_head=4, n_head_kv=2, n_ff=136, n_layer=2,
             tied=True, freq_base=500000.0, llama3_rope=dict(factor=8.0, low=1.0, high=4.0, orig_ctx=32)),
        dict(name="mistral-q8_0", arch="llama", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, head_dim=32,
             n_ff=160, n_layer=2, tied=False),
        dict(name="qwen2-f16", arch="qwen2", type="F16", n_embd=72, n_head=4, n_head_kv=2, n_ff=200, n_layer=2,
             tied=True, freq_base=1000000.0, norm_eps=1e-6, bias=True),
        dict(name="qwen3-q8_0", arch="qwen3", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, head_dim=32, n_ff=160,
             n_layer=3, tied=False, freq_base=1000000.0, norm_eps=1e-6, qk_norm=True),
        dict(name="gemma3-q8_0", arch="gemma3", type="Q8_0", n_embd=64, n_head=4, n_head_kv=1, head_dim=32,
             n_ff=160, n_layer=4, tied=True, freq_base=1000000.0, norm_eps=1e-6, qk_norm=True, post_norms=True,
             sliding_window=20, swa_pattern=3),
        dict(name="gemma3-f16", arch="gemma3", type="F16", n_embd=72, n_head=3, n_head_kv=1, head_dim=24, n_ff=136,
             n_layer=3, tied=False, freq_base=1000000.0, norm_eps=1e-6, qk_norm=True, post_norms=True,
             sliding_window=13, swa_pattern=[True, False, True], freq_base_swa=20000.0,
             rope_scaling=("linear", 2.0)),
        dict(name="llama-yarn-f32", arch="llama", type="F32", n_embd=64, n_head=2, n_head_kv=1, n_ff=136,
             n_layer=2, tied=True, rope_scaling=("yarn", 4.0), yarn_orig_ctx=64, rope_attn_factor=1.25),
        dict(name="qwen2-yarn-f16", arch="qwen2", type="F16", n_embd=72, n_head=3, n_head_kv=1, n_ff=200,
             n_layer=2, tied=False, freq_base=1000000.0, norm_eps=1e-6, bias=True, rope_scaling=("yarn", 2.5),
             yarn_orig_ctx=40),
    ]),
    *series("make_arch_models.py", 20251421, [
        dict(name="tinyphi-f16", arch="phi3", type="F16", n_embd=72, n_head=3, n_head_kv=1, n_ff=136, n_layer=2,
             tied=False, n_rot=16, fused_qkv=True, bias=True, fused_up=True, n_ctx_train=256, yarn_orig_ctx=64,
             longrope=dict(long=(1.0, 6.0), short=(1.0, 1.3)), sliding_window=16),
        dict(name="tinyphi-q8_0", arch="phi3", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, n_ff=160, n_layer=3,
             tied=True, fused_up=True, n_ctx_train=1024, yarn_orig_ctx=256,
             longrope=dict(long=(1.0, 9.0), short=(0.9, 1.4)), sliding_window=0),
    ]),
    *series("make_classic_models.py", 20261126, [
        dict(name="gpt2-f16", arch="gpt2", type="F16", n_embd=72, n_head=3, n_ff=200, n_layer=2, tied=True,
             fused_qkv=True),
        dict(name="gpt2-q8_0", arch="gpt2", type="Q8_0", n_embd=64, n_head=4, n_ff=160, n_layer=3, tied=False,
             fused_qkv=True, norm_eps=1e-6),
        dict(name="starcoder2-f16", arch="starcoder2", type="F16", n_embd=72, n_head=3, n_head_kv=1, n_ff=136,
             n_layer=2, tied=False, fused_qkv=False, freq_base=100000.0),
        dict(name="starcoder2-q8_0", arch="starcoder2", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, n_ff=160,
             n_layer=2, tied=True, fused_qkv=True),
        dict(name="gptneox-f16", arch="gptneox", type="F16", n_embd=72, n_head=3, n_ff=200, n_layer=2, tied=False,
             fused_qkv=True, n_rot=6, parallel_residual=True),
        dict(name="gptneox-q8_0", arch="gptneox", type="Q8_0", n_embd=64, n_head=4, n_ff=160, n_layer=3,
             tied=False, fused_qkv=True, n_rot=8, parallel_residual=False),
    ]),
    *series("make_alibi_models.py", 20261127, [
        dict(name="mpt-f16", arch="mpt", type="F16", n_embd=80, n_head=5, n_ff=216, n_layer=2, tied=True,
             biases=(), clamp_kqv=0.5, max_alibi_bias=8.0),
        dict(name="mpt-q8_0", arch="mpt", type="Q8_0", n_embd=96, n_head=12, n_ff=160, n_layer=3, tied=False,
             max_alibi_bias=4.0),
        dict(name="bloom-f16", arch="bloom", type="F16", n_embd=72, n_head=6, n_ff=200, n_layer=2, tied=True),
        dict(name="bloom-q8_0", arch="bloom", type="Q8_0", n_embd=96, n_head=6, n_ff=160, n_layer=3, tied=False,
             norm_eps=1e-6),
    ]),
    *series("make_moe_models.py", 20261127, [
        dict(name="mixtral-f16", arch="llama", family="mixtral", type="F16", n_embd=72, n_head=6, n_head_kv=2,
             n_ff=100, n_layer=2, n_expert=4, n_expert_used=2, tied=False),
        dict(name="mixtral-q8_0", arch="llama", family="mixtral", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2,
             n_ff=96, n_layer=2, n_expert=4, n_expert_used=2, tied=True),
    ]),
    *series("make_window_models.py", 20261128, [
        dict(name="mistral-window-q8_0", arch="llama", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, head_dim=32,
             n_ff=160, n_layer=2, tied=False, sliding_window=8),
        dict(name="starcoder2-window-f16", arch="starcoder2", type="F16", n_embd=72, n_head=3, n_head_kv=1,
             n_ff=136, n_layer=2, tied=False, fused_qkv=True, sliding_window=16),
    ]),
    *series("make_falcon_models.py", 20261129, [
        dict(name="falcon-f16", arch="falcon", type="F16", n_embd=72, n_head=4, n_head_kv=1, n_ff=200, n_layer=2,
             tied=False),
        dict(name="falcon-q8_0", arch="falcon", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, n_ff=160, n_layer=3,
             tied=False, norm_2=True, freq_base=50000.0, norm_eps=1e-6),
    ]),
    *series("make_gptj_models.py", 20261130, [
        dict(name="gptj-f16", arch="gptj", type="F16", n_embd=72, n_head=4, n_ff=200, n_layer=2, n_rot=8),
        dict(name="gptj-q8_0", arch="gptj", type="Q8_0", n_embd=64, n_head=4, n_ff=160, n_layer=3, n_rot=6,
             norm_eps=1e-6),
    ]),
]


def find(key):
    """The entry of MODELS named `key`, or else the first of architecture `key`."""
    return next(m for m in MODELS if key in (m["name"], m["arch"]))


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


def write_blocks(spec, out_dir, rng, script, seed):
    """Writes the model of every family but "llama" (spec: its MODELS entry
    over its FAMILIES options) to OUT_DIR/NAME.gguf, with weights drawn from
    rng in file order but for q, k and v, drawn before their tensors are
    added; returns the path."""
    arch, biases = spec["arch"], spec["biases"]
    n_embd, n_head, n_ff = spec["n_embd"], spec["n_head"], spec["n_ff"]
    head_dim = n_embd // n_head
    q_dim, kv_dim = n_head * head_dim, spec.get("n_head_kv", n_head) * head_dim
    w, path = open_model(spec, out_dir, arch, script, seed, N_CTX_TRAIN)
    if spec["norm"] == "layer":
        w.add_layer_norm_eps(spec.get("norm_eps", 1e-5))
    else:
        w.add_layer_norm_rms_eps(spec.get("norm_eps", 1e-5))
    if "clamp_kqv" in spec:
        w.add_clamp_kqv(spec["clamp_kqv"])
    if "max_alibi_bias" in spec:
        w.add_max_alibi_bias(spec["max_alibi_bias"])
    if "dimension_count" in spec["rope_keys"]:
        w.add_rope_dimension_count(spec.get("n_rot", head_dim))
    if "freq_base" in spec["rope_keys"]:
        w.add_rope_freq_base(spec.get("freq_base", 10000.0))
    if "parallel_residual" in spec:
        w.add_parallel_residual(spec["parallel_residual"])
    if "sliding_window" in spec:
        w.add_sliding_window(spec["sliding_window"])
    if spec["ffn"] == "experts":
        w.add_expert_count(spec["n_expert"])
        w.add_expert_used_count(spec["n_expert_used"])
    n_vocab = add_vocabulary(w, spec)
    t = Weights(w, rng, spec["type"])

    def bias(kind, name, n, sigma):
        if kind in biases:
            t.vector(f"{name}.bias", n, 0.0, sigma)

    def norm(name):
        """weight ~N(1, 0.1), and a LayerNorm's bias ~N(0, 0.1) if it has one."""
        t.vector(f"{name}.weight", n_embd, 1.0, 0.1)
        if spec["norm"] == "layer":
            bias("norm", name, n_embd, 0.1)

    t.weight("token_embd.weight", n_vocab, n_embd, sigma=0.4)
    if spec.get("position_embd"):
        t.weight("position_embd.weight", N_CTX_TRAIN, n_embd, sigma=0.2)
    if spec.get("token_embd_norm"):
        norm("token_embd_norm")
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        norm(f"{blk}.attn_norm")
        if spec.get("norm_2"):
            norm(f"{blk}.attn_norm_2")
        parts = [("q", t.matrix(q_dim, n_embd, sigma=1.2 / np.sqrt(n_embd))),
                 ("k", t.matrix(kv_dim, n_embd, sigma=1.2 / np.sqrt(n_embd))),
                 ("v", t.matrix(kv_dim, n_embd, sigma=1.0 / np.sqrt(n_embd)))]
        if spec.get("fused_qkv"):
            parts = [("qkv", np.concatenate([m for _, m in parts]))]
        for part, m in parts:
            t.add(f"{blk}.attn_{part}.weight", m)
            bias("qkv", f"{blk}.attn_{part}", m.shape[0], 0.3)
        t.weight(f"{blk}.attn_output.weight", n_embd, q_dim, sigma=0.5 / np.sqrt(q_dim))
        bias("attn_output", f"{blk}.attn_output", n_embd, 0.1)
        if spec.get("ffn_norm", True):
            norm(f"{blk}.ffn_norm")
        if spec["ffn"] == "experts":
            n_expert = spec["n_expert"]
            t.weight(f"{blk}.ffn_gate_inp.weight", n_expert, n_embd, sigma=3.0 / np.sqrt(n_embd))
            # numpy order {n_expert, rows, cols}: ggml's {cols, rows, n_expert}
            t.weight(f"{blk}.ffn_gate_exps.weight", n_expert, n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd))
            t.weight(f"{blk}.ffn_up_exps.weight", n_expert, n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd))
            t.weight(f"{blk}.ffn_down_exps.weight", n_expert, n_embd, n_ff, sigma=0.5 / np.sqrt(n_ff))
        else:
            t.weight(f"{blk}.ffn_up.weight", n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd))
            bias("ffn", f"{blk}.ffn_up", n_ff, 0.3)
            t.weight(f"{blk}.ffn_down.weight", n_embd, n_ff, sigma=0.5 / np.sqrt(n_ff))
            bias("ffn", f"{blk}.ffn_down", n_embd, 0.1)
    norm("output_norm")
    if not spec["tied"]:
        t.weight("output.weight", n_vocab, n_embd, sigma=1.5 / np.sqrt(n_embd))
    if spec.get("output_bias"):
        t.vector("output.bias", n_vocab, 0.0, 0.3)
    close_model(w, spec)
    return path


def write_model(spec, out_dir, rng, script=Path(__file__).name, seed=0):
    """Writes the model of the MODELS entry `spec` (omit_keys drops metadata
    keys, for tests/python/test_cli.py's error tests) by its family's writer
    to OUT_DIR/NAME.gguf with weights drawn from rng, general.description
    naming script and seed; returns the path."""
    spec = {"ffn": "gelu", **FAMILIES[spec.get("family", spec["arch"])], **spec}
    if spec.get("writer") == "llama":
        return make_tiny_models.write_model(prepare(spec), out_dir, rng, script, seed)
    return write_blocks(spec, out_dir, rng, script, seed)


def main():
    ap = argparse.ArgumentParser(description="Writes the tiny models of MODELS (all, or those named).")
    ap.add_argument("names", nargs="*", metavar="NAME", help="a model's name (default: every model)")
    ap.add_argument("--out", type=Path, default=HERE, help="the folder to write into (default: this script's)")
    args = ap.parse_args()
    unknown = set(args.names) - {m["name"] for m in MODELS}
    if unknown:
        ap.error(f"no model {', '.join(sorted(unknown))}; the models: {', '.join(m['name'] for m in MODELS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for spec in MODELS:
        if not args.names or spec["name"] in args.names:
            path = write_model(spec, args.out, np.random.default_rng(spec["seed"]), *spec["made_by"])
            print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
