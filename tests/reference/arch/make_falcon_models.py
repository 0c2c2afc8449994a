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

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import FILE_TYPE, vocabulary  # noqa: E402

SEED = 20261129
N_CTX_TRAIN = 128

MODELS = [
    dict(name="falcon-f16", type="F16", n_embd=72, n_head=4, n_head_kv=1, n_ff=200, n_layer=2, tied=False,
         norm_2=False),
    dict(name="falcon-q8_0", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, n_ff=160, n_layer=3, tied=False,
         norm_2=True, freq_base=50000.0, norm_eps=1e-6),
]


def write_model(spec, out_dir, rng, seed):
    """Writes the model `spec` describes (MODELS; omit_keys drops metadata
    keys, for the error tests) to OUT_DIR/NAME.gguf with weights drawn from
    rng; returns the path."""
    tokens, types, merges, eot = vocabulary()
    n_vocab = len(tokens)
    n_embd, n_head, n_head_kv, n_ff = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["n_ff"]
    head_dim = n_embd // n_head
    kv_dim = n_head_kv * head_dim
    qtype = gguf.GGMLQuantizationType[spec["type"]]

    path = out_dir / f"{spec['name']}.gguf"
    w = gguf.GGUFWriter(str(path), "falcon")
    w.add_name(spec["name"])
    w.add_description(f"random weights for hearth's tests ({Path(__file__).name}, seed {seed})")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(n_embd)
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_eps(spec.get("norm_eps", 1e-5))
    w.add_rope_freq_base(spec.get("freq_base", 10000.0))
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

    add_weight("token_embd.weight", matrix(n_vocab, n_embd, 0.4))
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        vector(f"{blk}.attn_norm.weight", n_embd, 1.0, 0.1)
        vector(f"{blk}.attn_norm.bias", n_embd, 0.0, 0.1)
        if spec["norm_2"]:
            vector(f"{blk}.attn_norm_2.weight", n_embd, 1.0, 0.1)
            vector(f"{blk}.attn_norm_2.bias", n_embd, 0.0, 0.1)
        add_weight(f"{blk}.attn_qkv.weight",
                   np.concatenate([matrix(n_embd, n_embd, 1.2 / np.sqrt(n_embd)),
                                   matrix(kv_dim, n_embd, 1.2 / np.sqrt(n_embd)),
                                   matrix(kv_dim, n_embd, 1.0 / np.sqrt(n_embd))]))
        add_weight(f"{blk}.attn_output.weight", matrix(n_embd, n_embd, 0.5 / np.sqrt(n_embd)))
        add_weight(f"{blk}.ffn_up.weight", matrix(n_ff, n_embd, 1.5 / np.sqrt(n_embd)))
        add_weight(f"{blk}.ffn_down.weight", matrix(n_embd, n_ff, 0.5 / np.sqrt(n_ff)))
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
