#!/usr/bin/env python3
"""Writes tiny random-weight falcon models into tests/reference/arch/, with
gguf-py, for the conformance test tests/test_tiny_models.c; llama.cpp's
logits and greedy tokens for them are recorded by make_falcon_reference.py in
falcon_reference.json.

Tensors as llama.cpp's falcon loader asks (llama-model.cpp
llama_model_falcon::load_arch_tensors): LayerNorm attn_norm with bias, the
optional attn_norm_2 with bias (Falcon-40B), fused attn_qkv without bias,
attn_output, ffn_up and ffn_down without biases, output_norm with bias,
output.weight unless tied. Rope in NEOX mode over whole heads (llama.cpp
refuses another rope.dimension_count). Variants, with odd sizes where the
type allows (F16 rows need no block multiple; Q8_0 rows are multiples of 32):
  falcon-f16   Falcon-7B's shape: one norm per block, multi-query attention
               (4 heads of 18 over 1 KV head), untied output; n_embd 72,
               n_ff 200, rope base 1e4
  falcon-q8_0  Falcon-40B's: two norms per block (attn_norm_2), grouped
               attention (4 heads of 16 over 2 KV heads), untied output,
               3 layers; n_embd 64, n_ff 160, rope base 5e4, epsilon 1e-6
Both outputs are untied: with output tied to the token embeddings these
models' greedy text repeats one token, with near ties between candidates
(llama.cpp's falcon ties them as every architecture does, TENSOR_DUPLICATED;
gpt2-f16 and starcoder2-q8_0 of make_classic_models.py cover tied output).
SEED is one whose models' greedy tokens after test_opencl_offload.c's
prompt have no near ties (CPU top-2 margins >= 0.015 for F16, 0.24 for
Q8_0), which the OpenCL path's 8-bit activations could break the other way.
The vocabulary is tests/reference/tiny's byte-level BPE ("gpt2"). Weights are
N(0, sigma) as in make_classic_models.py; norm weights ~1, norm biases
~N(0, 0.1).

Usage: python3 tests/reference/arch/make_falcon_models.py [OUT_DIR]
(default: the folder of this script; rerun make_falcon_reference.py after it)
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import Weights, add_vocabulary, close_model, open_model, write_all  # noqa: E402

SEED = 20261129
N_CTX_TRAIN = 128

MODELS = [
    dict(name="falcon-f16", type="F16", n_embd=72, n_head=4, n_head_kv=1, n_ff=200, n_layer=2, tied=False,
         norm_2=False),
    dict(name="falcon-q8_0", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, n_ff=160, n_layer=3, tied=False,
         norm_2=True, freq_base=50000.0, norm_eps=1e-6),
]


def write_model(spec, out_dir, rng, script=Path(__file__).name, seed=SEED):
    """Writes the model `spec` describes (MODELS; omit_keys drops metadata
    keys, for the error tests) to OUT_DIR/NAME.gguf with weights drawn from
    rng; returns the path."""
    n_embd, n_head, n_head_kv, n_ff = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["n_ff"]
    kv_dim = n_head_kv * (n_embd // n_head)
    w, path = open_model(spec, out_dir, "falcon", script, seed, N_CTX_TRAIN)
    w.add_layer_norm_eps(spec.get("norm_eps", 1e-5))
    w.add_rope_freq_base(spec.get("freq_base", 10000.0))
    n_vocab = add_vocabulary(w, spec)
    t = Weights(w, rng, spec["type"])

    t.weight("token_embd.weight", n_vocab, n_embd, sigma=0.4)
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        t.layer_norm(f"{blk}.attn_norm", n_embd)
        if spec["norm_2"]:
            t.layer_norm(f"{blk}.attn_norm_2", n_embd)
        t.add(f"{blk}.attn_qkv.weight",
              np.concatenate([t.matrix(n_embd, n_embd, sigma=1.2 / np.sqrt(n_embd)),
                              t.matrix(kv_dim, n_embd, sigma=1.2 / np.sqrt(n_embd)),
                              t.matrix(kv_dim, n_embd, sigma=1.0 / np.sqrt(n_embd))]))
        t.weight(f"{blk}.attn_output.weight", n_embd, n_embd, sigma=0.5 / np.sqrt(n_embd))
        t.weight(f"{blk}.ffn_up.weight", n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd))
        t.weight(f"{blk}.ffn_down.weight", n_embd, n_ff, sigma=0.5 / np.sqrt(n_ff))
    t.layer_norm("output_norm", n_embd)
    if not spec["tied"]:
        t.weight("output.weight", n_vocab, n_embd, sigma=1.5 / np.sqrt(n_embd))
    close_model(w, spec)
    return path


if __name__ == "__main__":
    write_all(MODELS, SEED, __file__, writer=write_model)
