#!/usr/bin/env python3
"""Writes tiny random-weight Mixtral-style models (GGUF architecture
"llama" with llama.expert_count / expert_used_count) into
tests/reference/arch/, with gguf-py, for the conformance test
tests/test_tiny_models.c; llama.cpp's logits and greedy tokens for them are
recorded by make_moe_reference.py in moe_reference.json.

Each block is llama's (RMSNorm, normal-mode rope, GQA attention) with the
feed-forward replaced by a mixture of experts as llama.cpp's llama loader
asks (llama-model.cpp, src/models/llama.cpp): the router ffn_gate_inp
{n_embd, n_expert} and the stacked experts ffn_gate_exps, ffn_up_exps
{n_embd, n_ff, n_expert}, ffn_down_exps {n_ff, n_embd, n_expert}. Variants:
  mixtral-f16   4 experts, 2 used, n_embd 72, 6 heads of 12 over 2 KV heads
                (GQA 3:1), n_ff 100, 2 layers, untied output
  mixtral-q8_0  4 experts, 2 used, n_embd 64, 4 heads of 16 over 2 KV heads,
                n_ff 96, 2 layers, tied output (Q8_0 rows are multiples of 32)
The router's weights are larger than the others' so that tokens spread over
the experts. The vocabulary is tests/reference/tiny's byte-level BPE.

Usage: python3 tests/reference/arch/make_moe_models.py [OUT_DIR]
(default: the folder of this script; rerun make_moe_reference.py after it)
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import Weights, add_vocabulary, close_model, open_model, write_all  # noqa: E402

SEED = 20261127
N_CTX_TRAIN = 128

MODELS = [
    dict(name="mixtral-f16", type="F16", n_embd=72, n_head=6, n_head_kv=2, n_ff=100, n_layer=2, n_expert=4,
         n_expert_used=2, tied=False),
    dict(name="mixtral-q8_0", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2, n_expert=4,
         n_expert_used=2, tied=True),
]


def write_model(spec, out_dir, rng, script=Path(__file__).name, seed=SEED):
    """Writes the model `spec` describes (MODELS; omit_keys drops metadata
    keys, for the error tests) to OUT_DIR/NAME.gguf with weights drawn from
    rng; returns the path."""
    n_embd, n_head, n_head_kv, n_ff = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["n_ff"]
    n_expert = spec["n_expert"]
    head_dim = n_embd // n_head
    q_dim, kv_dim = n_head * head_dim, n_head_kv * head_dim
    w, path = open_model(spec, out_dir, "llama", script, seed, N_CTX_TRAIN)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_expert_count(n_expert)
    w.add_expert_used_count(spec["n_expert_used"])
    n_vocab = add_vocabulary(w, spec)
    t = Weights(w, rng, spec["type"])

    t.weight("token_embd.weight", n_vocab, n_embd, sigma=0.4)
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        t.vector(f"{blk}.attn_norm.weight", n_embd, 1.0, 0.1)
        t.weight(f"{blk}.attn_q.weight", q_dim, n_embd, sigma=1.2 / np.sqrt(n_embd))
        t.weight(f"{blk}.attn_k.weight", kv_dim, n_embd, sigma=1.2 / np.sqrt(n_embd))
        t.weight(f"{blk}.attn_v.weight", kv_dim, n_embd, sigma=1.0 / np.sqrt(n_embd))
        t.weight(f"{blk}.attn_output.weight", n_embd, q_dim, sigma=0.5 / np.sqrt(q_dim))
        t.vector(f"{blk}.ffn_norm.weight", n_embd, 1.0, 0.1)
        t.weight(f"{blk}.ffn_gate_inp.weight", n_expert, n_embd, sigma=3.0 / np.sqrt(n_embd))
        # numpy order {n_expert, rows, cols}: ggml's {cols, rows, n_expert}
        t.weight(f"{blk}.ffn_gate_exps.weight", n_expert, n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd))
        t.weight(f"{blk}.ffn_up_exps.weight", n_expert, n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd))
        t.weight(f"{blk}.ffn_down_exps.weight", n_expert, n_embd, n_ff, sigma=0.5 / np.sqrt(n_ff))
    t.vector("output_norm.weight", n_embd, 1.0, 0.1)
    if not spec["tied"]:
        t.weight("output.weight", n_vocab, n_embd, sigma=1.5 / np.sqrt(n_embd))
    close_model(w, spec)
    return path


if __name__ == "__main__":
    write_all(MODELS, SEED, __file__, writer=write_model)
