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
  starcoder2-q8_0  fused attn_qkv with bias, GQA 2:1, tied output, a
                   sliding_window of 16 in the metadata (llama.cpp ignores it)
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

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import FILE_TYPE, vocabulary  # noqa: E402

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
         n_layer=2, tied=True, fused_qkv=True, sliding_window=16),
    dict(name="gptneox-f16", arch="gptneox", type="F16", n_embd=72, n_head=3, n_ff=200, n_layer=2, tied=False,
         fused_qkv=True, n_rot=6, parallel_residual=True),
    dict(name="gptneox-q8_0", arch="gptneox", type="Q8_0", n_embd=64, n_head=4, n_ff=160, n_layer=3, tied=False,
         fused_qkv=True, n_rot=8, parallel_residual=False),
]


def write_model(spec, out_dir, rng, seed):
    """Writes the model `spec` describes (MODELS; omit_keys drops metadata
    keys, for the error tests) to OUT_DIR/NAME.gguf with weights drawn from
    rng; returns the path."""
    tokens, types, merges, eot = vocabulary()
    n_vocab = len(tokens)
    arch = spec["arch"]
    n_embd, n_head, n_ff = spec["n_embd"], spec["n_head"], spec["n_ff"]
    n_head_kv = spec.get("n_head_kv", n_head)
    head_dim = n_embd // n_head
    q_dim, kv_dim = n_head * head_dim, n_head_kv * head_dim
    qtype = gguf.GGMLQuantizationType[spec["type"]]

    path = out_dir / f"{spec['name']}.gguf"
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(spec["name"])
    w.add_description(f"random weights for hearth's tests ({Path(__file__).name}, seed {seed})")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(n_embd)
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_eps(spec.get("norm_eps", 1e-5))
    if arch != "gpt2":
        w.add_rope_dimension_count(spec.get("n_rot", head_dim))
        w.add_rope_freq_base(spec.get("freq_base", 10000.0))
    if "parallel_residual" in spec:
        w.add_parallel_residual(spec["parallel_residual"])
    if "sliding_window" in spec:
        w.add_sliding_window(spec["sliding_window"])
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
        if qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    def vector(name, n, mean, sigma):
        w.add_tensor(name, (mean + rng.normal(0.0, sigma, size=n)).astype(np.float32))

    add_weight("token_embd.weight", matrix(n_vocab, n_embd, 0.4))
    if arch == "gpt2":
        add_weight("position_embd.weight", matrix(N_CTX_TRAIN, n_embd, 0.2))
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        vector(f"{blk}.attn_norm.weight", n_embd, 1.0, 0.1)
        vector(f"{blk}.attn_norm.bias", n_embd, 0.0, 0.1)
        qkv = [matrix(q_dim, n_embd, 1.2 / np.sqrt(n_embd)), matrix(kv_dim, n_embd, 1.2 / np.sqrt(n_embd)),
               matrix(kv_dim, n_embd, 1.0 / np.sqrt(n_embd))]
        if spec["fused_qkv"]:
            add_weight(f"{blk}.attn_qkv.weight", np.concatenate(qkv))
            vector(f"{blk}.attn_qkv.bias", q_dim + 2 * kv_dim, 0.0, 0.3)
        else:
            for part, m, n in zip("qkv", qkv, (q_dim, kv_dim, kv_dim)):
                add_weight(f"{blk}.attn_{part}.weight", m)
                vector(f"{blk}.attn_{part}.bias", n, 0.0, 0.3)
        add_weight(f"{blk}.attn_output.weight", matrix(n_embd, q_dim, 0.5 / np.sqrt(q_dim)))
        vector(f"{blk}.attn_output.bias", n_embd, 0.0, 0.1)
        vector(f"{blk}.ffn_norm.weight", n_embd, 1.0, 0.1)
        vector(f"{blk}.ffn_norm.bias", n_embd, 0.0, 0.1)
        add_weight(f"{blk}.ffn_up.weight", matrix(n_ff, n_embd, 1.5 / np.sqrt(n_embd)))
        vector(f"{blk}.ffn_up.bias", n_ff, 0.0, 0.3)
        add_weight(f"{blk}.ffn_down.weight", matrix(n_embd, n_ff, 0.5 / np.sqrt(n_ff)))
        vector(f"{blk}.ffn_down.bias", n_embd, 0.0, 0.1)
    vector("output_norm.weight", n_embd, 1.0, 0.1)
    vector("output_norm.bias", n_embd, 0.0, 0.1)
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
