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

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_tiny_models import FILE_TYPE, vocabulary  # noqa: E402

SEED = 20261127
N_CTX_TRAIN = 128

MODELS = [
    dict(name="mixtral-f16", type="F16", n_embd=72, n_head=6, n_head_kv=2, n_ff=100, n_layer=2, n_expert=4,
         n_expert_used=2, tied=False),
    dict(name="mixtral-q8_0", type="Q8_0", n_embd=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2, n_expert=4,
         n_expert_used=2, tied=True),
]


def write_model(spec, out_dir, rng, seed):
    """Writes the model `spec` describes (MODELS; omit_keys drops metadata
    keys, for the error tests) to OUT_DIR/NAME.gguf with weights drawn from
    rng; returns the path."""
    tokens, types, merges, eot = vocabulary()
    n_vocab = len(tokens)
    n_embd, n_head, n_head_kv, n_ff = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["n_ff"]
    n_expert = spec["n_expert"]
    head_dim = n_embd // n_head
    q_dim, kv_dim = n_head * head_dim, n_head_kv * head_dim
    qtype = gguf.GGMLQuantizationType[spec["type"]]

    path = out_dir / f"{spec['name']}.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(spec["name"])
    w.add_description(f"random weights for hearth's tests ({Path(__file__).name}, seed {seed})")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(n_embd)
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_expert_count(n_expert)
    w.add_expert_used_count(spec["n_expert_used"])
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

    def matrix(*shape, sigma):
        return rng.normal(0.0, sigma, size=shape).astype(np.float32)

    def add_weight(name, data):
        if qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    def vector(name, n, mean, sigma):
        w.add_tensor(name, (mean + rng.normal(0.0, sigma, size=n)).astype(np.float32))

    add_weight("token_embd.weight", matrix(n_vocab, n_embd, sigma=0.4))
    for il in range(spec["n_layer"]):
        blk = f"blk.{il}"
        vector(f"{blk}.attn_norm.weight", n_embd, 1.0, 0.1)
        add_weight(f"{blk}.attn_q.weight", matrix(q_dim, n_embd, sigma=1.2 / np.sqrt(n_embd)))
        add_weight(f"{blk}.attn_k.weight", matrix(kv_dim, n_embd, sigma=1.2 / np.sqrt(n_embd)))
        add_weight(f"{blk}.attn_v.weight", matrix(kv_dim, n_embd, sigma=1.0 / np.sqrt(n_embd)))
        add_weight(f"{blk}.attn_output.weight", matrix(n_embd, q_dim, sigma=0.5 / np.sqrt(q_dim)))
        vector(f"{blk}.ffn_norm.weight", n_embd, 1.0, 0.1)
        add_weight(f"{blk}.ffn_gate_inp.weight", matrix(n_expert, n_embd, sigma=3.0 / np.sqrt(n_embd)))
        # numpy order {n_expert, rows, cols}: ggml's {cols, rows, n_expert}
        add_weight(f"{blk}.ffn_gate_exps.weight", matrix(n_expert, n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd)))
        add_weight(f"{blk}.ffn_up_exps.weight", matrix(n_expert, n_ff, n_embd, sigma=1.5 / np.sqrt(n_embd)))
        add_weight(f"{blk}.ffn_down_exps.weight", matrix(n_expert, n_embd, n_ff, sigma=0.5 / np.sqrt(n_ff)))
    vector("output_norm.weight", n_embd, 1.0, 0.1)
    if not spec["tied"]:
        add_weight("output.weight", matrix(n_vocab, n_embd, sigma=1.5 / np.sqrt(n_embd)))

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
