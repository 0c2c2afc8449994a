#!/usr/bin/env python3
"""Writes tiny random-weight models of the ALiBi families hearth runs (mpt,
bloom) into tests/reference/arch/, with gguf-py, for the conformance test
tests/test_tiny_models.c; llama.cpp's logits and greedy tokens for them are
recorded by make_alibi_reference.py in alibi_reference.json.

Neither has a position embedding: ALiBi (Press, Smith & Lewis 2022,
arXiv:2108.12409) biases each head's scores by its slope times the distance,
with head counts that are no power of two here (5, 6, 12: ggml's second run
of slopes). Blocks are pre-norm LayerNorm, fused attn_qkv, a tanh-GELU
feed-forward (up, GELU, down), tensor names as llama.cpp's loaders ask
(src/models/mpt.cpp, bloom.cpp). Variants (F16 rows need no block multiple;
Q8_0 rows are multiples of 32):
  mpt-f16     no biases at all (MPT-7B's no_bias), clamp_kqv 0.5 (it bites:
              the q/k/v values reach past it), max_alibi_bias 8, tied output;
              n_embd 80, 5 heads of 16, n_ff 216
  mpt-q8_0    every LayerNorm and projection bias, no clamp_kqv,
              max_alibi_bias 4, untied output, 3 layers; n_embd 96, 12 heads
              of 8, n_ff 160
  bloom-f16   token_embd_norm, biases everywhere (as llama.cpp requires),
              tied output; n_embd 72, 6 heads of 12, n_ff 200 (llama.cpp sets
              bloom's max_alibi_bias to 8 itself)
  bloom-q8_0  the same, untied output, 3 layers; n_embd 96, 6 heads of 16,
              n_ff 160
The vocabulary is tests/reference/tiny's byte-level BPE ("gpt2"). Weights are
N(0, sigma) as in make_classic_models.py; norm weights ~1, biases ~N(0, 0.1..0.3).

Usage: python3 tests/reference/arch/make_alibi_models.py [OUT_DIR]
(default: the folder of this script; rerun make_alibi_reference.py after it)
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import Weights, add_vocabulary, close_model, open_model, write_all  # noqa: E402

SEED = 20261127
N_CTX_TRAIN = 128

MODELS = [
    dict(name="mpt-f16", arch="mpt", type="F16", n_embd=80, n_head=5, n_ff=216, n_layer=2, tied=True,
         biases=False, clamp_kqv=0.5, max_alibi_bias=8.0),
    dict(name="mpt-q8_0", arch="mpt", type="Q8_0", n_embd=96, n_head=12, n_ff=160, n_layer=3, tied=False,
         biases=True, max_alibi_bias=4.0),
    dict(name="bloom-f16", arch="bloom", type="F16", n_embd=72, n_head=6, n_ff=200, n_layer=2, tied=True,
         biases=True),
    dict(name="bloom-q8_0", arch="bloom", type="Q8_0", n_embd=96, n_head=6, n_ff=160, n_layer=3, tied=False,
         biases=True, norm_eps=1e-6),
]


def write_model(spec, out_dir, rng, script=Path(__file__).name, seed=SEED):
    """Writes the model `spec` describes (MODELS; omit_keys drops metadata
    keys, for the error tests) to OUT_DIR/NAME.gguf with weights drawn from
    rng; returns the path."""
    arch = spec["arch"]
    n_embd, n_ff = spec["n_embd"], spec["n_ff"]
    w, path = open_model(spec, out_dir, arch, script, seed, N_CTX_TRAIN)
    w.add_layer_norm_eps(spec.get("norm_eps", 1e-5))
    if "clamp_kqv" in spec:
        w.add_clamp_kqv(spec["clamp_kqv"])
    if "max_alibi_bias" in spec:
        w.add_max_alibi_bias(spec["max_alibi_bias"])
    n_vocab = add_vocabulary(w, spec)
    t = Weights(w, rng, spec["type"])

    def bias(name, n, sigma):
        if spec["biases"]:
            t.vector(name, n, 0.0, sigma)

    t.weight("token_embd.weight", n_vocab, n_embd, sigma=0.4)
    if arch == "bloom":
        t.layer_norm("token_embd_norm", n_embd)
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        t.vector(f"{blk}.attn_norm.weight", n_embd, 1.0, 0.1)
        bias(f"{blk}.attn_norm.bias", n_embd, 0.1)
        t.add(f"{blk}.attn_qkv.weight", np.concatenate(
            [t.matrix(n_embd, n_embd, sigma=1.2 / np.sqrt(n_embd)),
             t.matrix(n_embd, n_embd, sigma=1.2 / np.sqrt(n_embd)),
             t.matrix(n_embd, n_embd, sigma=1.0 / np.sqrt(n_embd))]))
        bias(f"{blk}.attn_qkv.bias", 3 * n_embd, 0.3)
        t.weight(f"{blk}.attn_output.weight", n_embd, n_embd, sigma=0.5 / np.sqrt(n_embd))
        bias(f"{blk}.attn_output.bias", n_embd, 0.1)
        t.vector(f"{blk}.ffn_norm.weight", n_embd, 1.0, 0.1)
        bias(f"{blk}.ffn_norm.bias", n_embd, 0.1)
        t.weight(f"{blk}.ffn_up.weight", n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd))
        bias(f"{blk}.ffn_up.bias", n_ff, 0.3)
        t.weight(f"{blk}.ffn_down.weight", n_embd, n_ff, sigma=0.5 / np.sqrt(n_ff))
        bias(f"{blk}.ffn_down.bias", n_embd, 0.1)
    t.vector("output_norm.weight", n_embd, 1.0, 0.1)
    bias("output_norm.bias", n_embd, 0.1)
    if not spec["tied"]:
        t.weight("output.weight", n_vocab, n_embd, sigma=1.5 / np.sqrt(n_embd))
    close_model(w, spec)
    return path


if __name__ == "__main__":
    write_all(MODELS, SEED, __file__, writer=write_model)
