#!/usr/bin/env python3
"""Writes tiny random-weight models whose files set a sliding window for an
architecture that llama.cpp 0.3.36 runs without one (llama as Mistral-style
files write it, starcoder2), with gguf-py, into tests/reference/arch/, for
the conformance test tests/test_tiny_models.c. hearth applies the window
(each query sees the keys of the window's positions up to its own), so
llama.cpp is no reference past the window: make_window_reference.py
records a numpy forward pass instead, in window_reference.json.

  mistral-window-q8_0    llama, llama.attention.sliding_window 8, head size
                         32 from attention.key_length (n_embd 64, 4 heads),
                         GQA 2:1, untied output
  starcoder2-window-f16  starcoder2, starcoder2.attention.sliding_window 16,
                         fused attn_qkv with bias, GQA 3:1, untied output;
                         n_embd 72, n_ff 136

The reference sequence (90 tokens) and the greedy continuation (past
position 21) reach far past both windows. The writers, vocabulary and weight
distributions are make_tiny_models.py's (llama) and make_classic_models.py's
(starcoder2).

Usage: python3 tests/reference/arch/make_window_models.py [OUT_DIR]
(default: the folder of this script; rerun make_window_reference.py after it)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
import make_classic_models  # noqa: E402
import make_tiny_models  # noqa: E402

SEED = 20261128

MODELS = [
    dict(name="mistral-window-q8_0", arch="llama", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, head_dim=32,
         n_ff=160, n_layer=2, tied=False, sliding_window=8),
    dict(name="starcoder2-window-f16", arch="starcoder2", type="F16", n_embd=72, n_head=3, n_head_kv=1, n_ff=136,
         n_layer=2, tied=False, fused_qkv=True, sliding_window=16),
]


def write_model(spec, out_dir, rng, script, seed):
    """The model `spec` describes, by its architecture's writer."""
    writer = make_classic_models.write_model if spec["arch"] == "starcoder2" else make_tiny_models.write_model
    return writer(spec, out_dir, rng, script, seed)


if __name__ == "__main__":
    make_tiny_models.write_all(MODELS, SEED, __file__, writer=write_model)
