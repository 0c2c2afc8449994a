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

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import FILE_TYPE, vocabulary  # noqa: E402

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


def write_model(spec, out_dir, rng, seed):
    """Writes the model `spec` describes (MODELS; omit_keys drops metadata
    keys, for the error tests) to OUT_DIR/NAME.gguf with weights drawn from
    rng; returns the path."""
    tokens, types, merges, eot = vocabulary()
    n_vocab = len(tokens)
    arch = spec["arch"]
    n_embd, n_head, n_ff = spec["n_embd"], spec["n_head"], spec["n_ff"]
    qtype = gguf.GGMLQuantizationType[spec["type"]]
    biases = spec["biases"]

    path = out_dir / f"{spec['name']}.gguf"
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(spec["name"])
    w.add_description(f"random weights for hearth's tests ({Path(__file__).name}, seed {seed})")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(n_embd)
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_layer_norm_eps(spec.get("norm_eps", 1e-5))
    if "clamp_kqv" in spec:
        w.add_clamp_kqv(spec["clamp_kqv"])
    if "max_alibi_bias" in spec:
        w.add_max_alibi_bias(spec["max_alibi_bias"])
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

    def matrix(rows, cols, sigma):
        return rng.normal(0.0, sigma, size=(rows, cols)).astype(np.float32)

    def add_weight(name, data):
        w.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    def vector(name, n, mean, sigma):
        w.add_tensor(name, (mean + rng.normal(0.0, sigma, size=n)).astype(np.float32))

    def bias(name, n, sigma):
        if biases:
            vector(name, n, 0.0, sigma)

    add_weight("token_embd.weight", matrix(n_vocab, n_embd, 0.4))
    if arch == "bloom":
        vector("token_embd_norm.weight", n_embd, 1.0, 0.1)
        vector("token_embd_norm.bias", n_embd, 0.0, 0.1)
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        vector(f"{blk}.attn_norm.weight", n_embd, 1.0, 0.1)
        bias(f"{blk}.attn_norm.bias", n_embd, 0.1)
        add_weight(f"{blk}.attn_qkv.weight", np.concatenate(
            [matrix(n_embd, n_embd, 1.2 / np.sqrt(n_embd)), matrix(n_embd, n_embd, 1.2 / np.sqrt(n_embd)),
             matrix(n_embd, n_embd, 1.0 / np.sqrt(n_embd))]))
        bias(f"{blk}.attn_qkv.bias", 3 * n_embd, 0.3)
        add_weight(f"{blk}.attn_output.weight", matrix(n_embd, n_embd, 0.5 / np.sqrt(n_embd)))
        bias(f"{blk}.attn_output.bias", n_embd, 0.1)
        vector(f"{blk}.ffn_norm.weight", n_embd, 1.0, 0.1)
        bias(f"{blk}.ffn_norm.bias", n_embd, 0.1)
        add_weight(f"{blk}.ffn_up.weight", matrix(n_ff, n_embd, 1.5 / np.sqrt(n_embd)))
        bias(f"{blk}.ffn_up.bias", n_ff, 0.3)
        add_weight(f"{blk}.ffn_down.weight", matrix(n_embd, n_ff, 0.5 / np.sqrt(n_ff)))
        bias(f"{blk}.ffn_down.bias", n_embd, 0.1)
    vector("output_norm.weight", n_embd, 1.0, 0.1)
    bias("output_norm.bias", n_embd, 0.1)
    if not spec["tied"]:
        add_weight("output.weight", matrix(n_vocab, n_embd, 1.5 / np.sqrt(n_embd)))

    for key in spec.get("omit_keys", ()):
        del w.kv_data[0][key]
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


if __name__ == "__main__":
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    out_dir.mkdir(parents=True, exist_ok=True)
    for i, spec in enumerate(MODELS):
        path = write_model(spec, out_dir, np.random.default_rng(SEED + i), SEED)
        print(f"wrote {path} ({path.stat().st_size} bytes)")
