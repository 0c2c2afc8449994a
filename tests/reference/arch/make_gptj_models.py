#!/usr/bin/env python3
"""Writes tiny random-weight gptj models (GPT-J, Wang & Komatsuzaki 2021)
into tests/reference/arch/, with gguf-py, for the conformance test
tests/test_tiny_models.c; Hugging Face transformers' GPT-J computes their
reference logits and greedy tokens (make_gptj_reference.py, into
gptj_reference.json), since llama.cpp 0.3.36 cannot load gptj files.

Layout: no converter writes gptj files, so these follow gguf-py's tensor map
for MODEL_ARCH.GPTJ (gguf/constants.py, tensor_mapping.py: transformer.wte
-> token_embd, h.N.ln_1 -> attn_norm, attn.q_proj/k_proj/v_proj/out_proj ->
attn_q/k/v/attn_output, mlp.fc_in/fc_out -> ffn_up/ffn_down, ln_f ->
output_norm, lm_head -> output) with the parameters GPT-J has: biases on
the LayerNorms, fc_in, fc_out and lm_head only (none on q/k/v/out_proj), one
LayerNorm per block whose output both the attention and the feed-forward
read. The keys are those llama.cpp reads for its other LayerNorm families:
gptj.context_length, embedding_length, block_count, feed_forward_length,
attention.head_count (and head_count_kv, equal), attention.layer_norm_epsilon
and rope.dimension_count (GPT-J's rotary_dim: the rotary part of each head);
no rope.freq_base (GPT-J's is 10000, not configurable). Variants, with odd
sizes where the type allows (F16 rows need no block multiple; Q8_0 rows are
multiples of 32):
  gptj-f16   n_embd 72, 4 heads of 18, rotary on 8 of them, n_ff 200,
             2 layers, epsilon 1e-5
  gptj-q8_0  n_embd 64, 4 heads of 16, rotary on 6, n_ff 160, 3 layers,
             epsilon 1e-6
The output (lm_head) is never tied: GPT-J's has its own matrix and a bias.
The vocabulary is tests/reference/tiny's byte-level BPE ("gpt2"). Weights are
N(0, sigma) as in make_classic_models.py; norm weights ~1, biases
~N(0, 0.1..0.3).

Usage: python3 tests/reference/arch/make_gptj_models.py [OUT_DIR]
(default: the folder of this script; rerun make_gptj_reference.py after it)
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import Weights, add_vocabulary, close_model, open_model, write_all  # noqa: E402

SEED = 20261130
N_CTX_TRAIN = 128

MODELS = [
    dict(name="gptj-f16", arch="gptj", type="F16", n_embd=72, n_head=4, n_ff=200, n_layer=2, n_rot=8),
    dict(name="gptj-q8_0", arch="gptj", type="Q8_0", n_embd=64, n_head=4, n_ff=160, n_layer=3, n_rot=6,
         norm_eps=1e-6),
]


def write_model(spec, out_dir, rng, script=Path(__file__).name, seed=SEED):
    """Writes the model `spec` describes (MODELS; omit_keys drops metadata
    keys, for the error tests) to OUT_DIR/NAME.gguf with weights drawn from
    rng; returns the path."""
    n_embd, n_ff = spec["n_embd"], spec["n_ff"]
    w, path = open_model(spec, out_dir, "gptj", script, seed, N_CTX_TRAIN)
    w.add_layer_norm_eps(spec.get("norm_eps", 1e-5))
    w.add_rope_dimension_count(spec["n_rot"])
    n_vocab = add_vocabulary(w, spec)
    t = Weights(w, rng, spec["type"])

    t.weight("token_embd.weight", n_vocab, n_embd, sigma=0.4)
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        t.layer_norm(f"{blk}.attn_norm", n_embd)
        t.weight(f"{blk}.attn_q.weight", n_embd, n_embd, sigma=1.2 / np.sqrt(n_embd))
        t.weight(f"{blk}.attn_k.weight", n_embd, n_embd, sigma=1.2 / np.sqrt(n_embd))
        t.weight(f"{blk}.attn_v.weight", n_embd, n_embd, sigma=1.0 / np.sqrt(n_embd))
        t.weight(f"{blk}.attn_output.weight", n_embd, n_embd, sigma=0.5 / np.sqrt(n_embd))
        t.weight(f"{blk}.ffn_up.weight", n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd))
        t.vector(f"{blk}.ffn_up.bias", n_ff, 0.0, 0.3)
        t.weight(f"{blk}.ffn_down.weight", n_embd, n_ff, sigma=0.5 / np.sqrt(n_ff))
        t.vector(f"{blk}.ffn_down.bias", n_embd, 0.0, 0.1)
    t.layer_norm("output_norm", n_embd)
    t.weight("output.weight", n_vocab, n_embd, sigma=1.5 / np.sqrt(n_embd))
    t.vector("output.bias", n_vocab, 0.0, 0.3)
    close_model(w, spec)
    return path


if __name__ == "__main__":
    write_all(MODELS, SEED, __file__, writer=write_model)
