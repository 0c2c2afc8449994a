#!/usr/bin/env python3
"""Writes tiny random-weight models of the LayerNorm families hearth runs
(gpt2, starcoder2, gptneox) into tests/reference/arch/, with gguf-py, for the
conformance test tests/test_tiny_models.c; llama.cpp's logits for them are
recorded by make_classic_reference.py in classic_reference.json.

Their blocks share LayerNorm with weight and bias (epsilon
attention.layer_norm_epsilon), biases on every projection and a tanh-GELU
feed-forward (up, GELU, down; no gate), with tensor names as llama.cpp's
loaders ask (llama-model.cpp, src/models/<arch>.cpp). Variants, with odd
sizes where the type allows (F32/F16 rows need no block multiple; Q8_0 rows
are multiples of 32):
  gpt2-f16         learned positions (position_embd, context_length 128
                   rows), fused attn_qkv with bias, tied output; n_embd 72,
                   3 heads of 24, n_ff 200
  gpt2-q8_0        the same, untied output, 3 layers, 4 heads of 16
  starcoder2-f16   NEOX rope over whole heads (base 1e5), separate attn_q/k/v
                   with biases, GQA 3:1, untied output; n_embd 72, n_ff 136
  starcoder2-q8_0  fused attn_qkv with bias, GQA 2:1, tied output (no
                   sliding_window: llama.cpp ignores one, hearth applies it;
                   make_window_models.py has the models with windows)
  gptneox-f16      parallel residual, NEOX rope on 6 of the 24 dimensions of a
                   head (Pythia's 25%), untied output
  gptneox-q8_0     sequential residual (use_parallel_residual false), rope on
                   8 of 16 dimensions, 3 layers
The vocabulary is tests/reference/tiny's byte-level BPE ("gpt2"). Weights are
N(0, sigma) as in make_tiny_models.py; norm weights ~1, biases ~N(0, 0.1..0.3).

Usage: python3 tests/reference/arch/make_classic_models.py [OUT_DIR]
(default: the folder of this script; rerun make_classic_reference.py after it)
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import Weights, add_vocabulary, close_model, open_model, write_all  # noqa: E402

SEED = 20261126
N_CTX_TRAIN = 128

MODELS = [
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
    dict(name="gptneox-q8_0", arch="gptneox", type="Q8_0", n_embd=64, n_head=4, n_ff=160, n_layer=3, tied=False,
         fused_qkv=True, n_rot=8, parallel_residual=False),
]


def write_model(spec, out_dir, rng, script=Path(__file__).name, seed=SEED):
    """Writes the model `spec` describes (MODELS; omit_keys drops metadata
    keys, for the error tests) to OUT_DIR/NAME.gguf with weights drawn from
    rng; returns the path."""
    arch = spec["arch"]
    n_embd, n_head, n_ff = spec["n_embd"], spec["n_head"], spec["n_ff"]
    n_head_kv = spec.get("n_head_kv", n_head)
    head_dim = n_embd // n_head
    q_dim, kv_dim = n_head * head_dim, n_head_kv * head_dim
    w, path = open_model(spec, out_dir, arch, script, seed, N_CTX_TRAIN)
    w.add_layer_norm_eps(spec.get("norm_eps", 1e-5))
    if arch != "gpt2":
        w.add_rope_dimension_count(spec.get("n_rot", head_dim))
        w.add_rope_freq_base(spec.get("freq_base", 10000.0))
    if "parallel_residual" in spec:
        w.add_parallel_residual(spec["parallel_residual"])
    if "sliding_window" in spec:
        w.add_sliding_window(spec["sliding_window"])
    n_vocab = add_vocabulary(w, spec)
    t = Weights(w, rng, spec["type"])

    t.weight("token_embd.weight", n_vocab, n_embd, sigma=0.4)
    if arch == "gpt2":
        t.weight("position_embd.weight", N_CTX_TRAIN, n_embd, sigma=0.2)
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        t.layer_norm(f"{blk}.attn_norm", n_embd)
        qkv = [t.matrix(q_dim, n_embd, sigma=1.2 / np.sqrt(n_embd)),
               t.matrix(kv_dim, n_embd, sigma=1.2 / np.sqrt(n_embd)),
               t.matrix(kv_dim, n_embd, sigma=1.0 / np.sqrt(n_embd))]
        if spec["fused_qkv"]:
            t.add(f"{blk}.attn_qkv.weight", np.concatenate(qkv))
            t.vector(f"{blk}.attn_qkv.bias", q_dim + 2 * kv_dim, 0.0, 0.3)
        else:
            for part, m, n in zip("qkv", qkv, (q_dim, kv_dim, kv_dim)):
                t.add(f"{blk}.attn_{part}.weight", m)
                t.vector(f"{blk}.attn_{part}.bias", n, 0.0, 0.3)
        t.weight(f"{blk}.attn_output.weight", n_embd, q_dim, sigma=0.5 / np.sqrt(q_dim))
        t.vector(f"{blk}.attn_output.bias", n_embd, 0.0, 0.1)
        t.layer_norm(f"{blk}.ffn_norm", n_embd)
        t.weight(f"{blk}.ffn_up.weight", n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd))
        t.vector(f"{blk}.ffn_up.bias", n_ff, 0.0, 0.3)
        t.weight(f"{blk}.ffn_down.weight", n_embd, n_ff, sigma=0.5 / np.sqrt(n_ff))
        t.vector(f"{blk}.ffn_down.bias", n_embd, 0.0, 0.1)
    t.layer_norm("output_norm", n_embd)
    if not spec["tied"]:
        t.weight("output.weight", n_vocab, n_embd, sigma=1.5 / np.sqrt(n_embd))
    close_model(w, spec)
    return path


if __name__ == "__main__":
    write_all(MODELS, SEED, __file__, writer=write_model)
