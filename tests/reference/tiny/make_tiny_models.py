#!/usr/bin/env python3
"""Writes the tiny random-weight llama models of tests/reference/tiny/ with
gguf-py, one per weight type hearth computes (F32, F16, BF16, Q4_0, Q4_1,
Q8_0), each also covering a hyperparameter variant (grouped-query and
multi-head attention, tied and untied output, linear rope scaling, a head size
other than n_embd / n_head, another rope base and norm epsilon).

tests/test_tiny_models.c runs them through hearth and compares the logits with
llama.cpp's, recorded by make_tiny_reference.py in tiny_reference.json. The
.gguf files are committed, so neither script runs in CI; rerun both (this one
first) after changing a model here.

Every 2-D weight, token_embd and output included, has the model's type; norm
vectors are F32 (~1 + small noise). Weights are N(0, sigma) with sigma about
1 / sqrt(fan_in) or less (token embeddings 0.4), so the activations stay in a
sane range and logits are of order 1..25. The
vocabulary is byte-level BPE ("gpt2"): the 256 byte tokens of GPT-2's byte to
unicode map, tokens made by a few dozen merges learnt from a short text, and
<|endoftext|> (bos = eos, a control token).

llama.cpp's llama architecture asserts rope.dimension_count == head size
(n_embd_head == n_rot in its graph build), so partial rope is not a variant.

Usage: python3 tests/reference/tiny/make_tiny_models.py [OUT_DIR]
(default: the folder of this script)
"""
import re
import sys
from pathlib import Path

import gguf
import numpy as np

SEED = 20240611
N_MERGES = 40
N_CTX_TRAIN = 256

# name, weight type, hyperparameters and variants
MODELS = [
    # F32: GQA 2:1 on a 32-wide model (small enough in 4-byte weights), tied output
    dict(name="tiny-f32", type="F32", n_embd=32, n_head=2, n_head_kv=1, n_ff=96, n_layer=2, tied=True,
         pre="gpt-2"),
    # F16: multi-head attention (n_head_kv = n_head), 3 layers, untied output
    dict(name="tiny-f16", type="F16", n_embd=32, n_head=2, n_head_kv=2, n_ff=160, n_layer=3, tied=False,
         pre="default"),
    # BF16: GQA 2:1, linear rope scaling with factor 2, tied output
    dict(name="tiny-bf16", type="BF16", n_embd=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2, tied=True,
         pre="gpt-2", rope_scaling=("linear", 2.0)),
    # Q4_0: head size 32 != n_embd / n_head = 16 (attention.key_length and
    # value_length), GQA 2:1, untied output
    dict(name="tiny-q4_0", type="Q4_0", n_embd=64, n_head=4, n_head_kv=2, head_dim=32, n_ff=160, n_layer=3,
         tied=False, pre="gpt-2"),
    # Q4_1: GQA 4:1, rope base 500000, norm eps 1e-6, tied output
    dict(name="tiny-q4_1", type="Q4_1", n_embd=64, n_head=4, n_head_kv=1, n_ff=96, n_layer=2, tied=True,
         pre="gpt-2", freq_base=500000.0, norm_eps=1e-6),
    # Q8_0: multi-head attention, 3 layers, untied output, rope scaling linear 2
    dict(name="tiny-q8_0", type="Q8_0", n_embd=64, n_head=4, n_head_kv=4, n_ff=160, n_layer=3, tied=False,
         pre="default", rope_scaling=("linear", 2.0)),
]

# the text the merges are learnt from (the tokenizer check in the C test uses
# words from it, so some merges fire, and others, so some do not)
MERGE_TEXT = ("the quick brown fox jumps over the lazy dog. the cat sat on the mat; the dog ate the hat. "
              "hello world, hello hearth! there is the thing that the other one thought through. ") * 3


def bytes_to_unicode():
    """GPT-2's byte -> printable unicode character map (openai/gpt-2 encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def learn_merges(text, n_merges):
    """A plain BPE trainer over GPT-2-style words (ASCII approximation of its
    pre-tokenizer regex); ties broken by the pair's text so it is deterministic."""
    b2u = bytes_to_unicode()
    words = re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+", text)
    counts = {}
    for w in words:
        key = tuple(b2u[b] for b in w.encode())
        counts[key] = counts.get(key, 0) + 1
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for w, c in counts.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        new_counts = {}
        for w, c in counts.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_counts[tuple(out)] = new_counts.get(tuple(out), 0) + c
        counts = new_counts
    return merges


def vocabulary():
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    types = [gguf.TokenType.NORMAL] * 256
    merges = learn_merges(MERGE_TEXT, N_MERGES)
    for a, b in merges:
        tokens.append(a + b)
        types.append(gguf.TokenType.NORMAL)
    eot = len(tokens)
    tokens.append("<|endoftext|>")
    types.append(gguf.TokenType.CONTROL)
    return tokens, types, [f"{a} {b}" for a, b in merges], eot


FILE_TYPE = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "BF16": 32}


def open_model(spec, out_dir, arch, script, seed, n_ctx_train):
    """A GGUFWriter for OUT_DIR/NAME.gguf holding the keys every tiny model's
    metadata starts with (n_head_kv: n_head unless the spec gives it), and its
    path; the caller adds its architecture's keys, then add_vocabulary()."""
    path = out_dir / f"{spec['name']}.gguf"
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(spec["name"])
    w.add_description(f"random weights for hearth's tests ({script}, seed {seed})")
    w.add_context_length(n_ctx_train)
    w.add_embedding_length(spec["n_embd"])
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(spec["n_ff"])
    w.add_head_count(spec["n_head"])
    w.add_head_count_kv(spec.get("n_head_kv", spec["n_head"]))
    return w, path


def add_vocabulary(w, spec):
    """The vocabulary size, file type and byte-level BPE tokenizer
    (vocabulary(); pre-tokenizer spec["pre"], default gpt-2); returns n_vocab."""
    tokens, types, merges, eot = vocabulary()
    w.add_vocab_size(len(tokens))
    w.add_file_type(FILE_TYPE[spec["type"]])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(spec.get("pre", "gpt-2"))
    w.add_token_list(tokens)
    w.add_token_types([int(t) for t in types])
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    return len(tokens)


class Weights:
    """Tensors drawn from rng into w: matrices N(0, sigma) in the model's type
    (numpy shapes, the reverse of GGUF's), F32 vectors mean + N(0, sigma)."""

    def __init__(self, w, rng, type_name):
        self.w, self.rng, self.qtype = w, rng, gguf.GGMLQuantizationType[type_name]

    def matrix(self, *shape, sigma):
        return self.rng.normal(0.0, sigma, size=shape).astype(np.float32)

    def add(self, name, data):
        """A matrix in the model's type."""
        if self.qtype == gguf.GGMLQuantizationType.F32:
            self.w.add_tensor(name, data)
        else:
            self.w.add_tensor(name, gguf.quants.quantize(data, self.qtype), raw_dtype=self.qtype)

    def weight(self, name, *shape, sigma):
        self.add(name, self.matrix(*shape, sigma=sigma))

    def vector(self, name, n, mean, sigma):
        self.w.add_tensor(name, (mean + self.rng.normal(0.0, sigma, size=n)).astype(np.float32))

    def layer_norm(self, name, n):
        """A LayerNorm's NAME.weight ~N(1, 0.1) and NAME.bias ~N(0, 0.1)."""
        self.vector(f"{name}.weight", n, 1.0, 0.1)
        self.vector(f"{name}.bias", n, 0.0, 0.1)


def close_model(w, spec):
    """Drops the spec's omit_keys (for the error tests) and writes the file."""
    for key in spec.get("omit_keys", ()):
        del w.kv_data[0][key]
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_model(spec, out_dir, rng, script=Path(__file__).name, seed=SEED):
    """Writes the model `spec` describes (MODELS here, or ../arch/make_models.py's:
    arch, sliding_window, swa_pattern, freq_base_swa, rope_freqs (the
    frequency factors), yarn_orig_ctx and rope_attn_factor (rope.scaling.
    original_context_length and attn_factor), bias, qk_norm and post_norms
    are optional; so are phi3's: n_ctx_train, n_rot (rope.dimension_count
    below the head size), fused_qkv (attn_qkv.weight: the q, k and v rows in
    that order, and attn_qkv.bias with bias), fused_up (ffn_up.weight: the
    gate rows, then the up rows; no ffn_gate), rope_factors ((long, short):
    rope_factors_long/short.weight); omit_keys drops metadata keys, for the
    error tests) to
    OUT_DIR/NAME.gguf with weights drawn from rng; returns the path."""
    n_embd, n_head, n_head_kv, n_ff = spec["n_embd"], spec["n_head"], spec["n_head_kv"], spec["n_ff"]
    head_dim = spec.get("head_dim", n_embd // n_head)
    q_dim, kv_dim = n_head * head_dim, n_head_kv * head_dim
    w, path = open_model(spec, out_dir, spec.get("arch", "llama"), script, seed, spec.get("n_ctx_train", N_CTX_TRAIN))
    if head_dim != n_embd // n_head:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(spec.get("norm_eps", 1e-5))
    w.add_rope_dimension_count(spec.get("n_rot", head_dim))
    w.add_rope_freq_base(spec.get("freq_base", 10000.0))
    if "rope_scaling" in spec:
        kind, factor = spec["rope_scaling"]
        w.add_rope_scaling_type(gguf.RopeScalingType(kind))
        w.add_rope_scaling_factor(factor)
    if "yarn_orig_ctx" in spec:
        w.add_rope_scaling_orig_ctx_len(spec["yarn_orig_ctx"])
    if "rope_attn_factor" in spec:
        w.add_rope_scaling_attn_factors(spec["rope_attn_factor"])
    if "sliding_window" in spec:
        w.add_sliding_window(spec["sliding_window"])
    if "swa_pattern" in spec:
        w.add_sliding_window_pattern(spec["swa_pattern"])
    if "freq_base_swa" in spec:
        w.add_rope_freq_base_swa(spec["freq_base_swa"])
    n_vocab = add_vocabulary(w, spec)
    t = Weights(w, rng, spec["type"])

    def weight(name, rows, cols, sigma):
        """A [rows, cols] matrix (GGUF shape {cols, rows}) in the model's type."""
        t.weight(name, rows, cols, sigma=sigma)

    vector = t.vector

    def fused(on, name, parts):
        """parts' rows, drawn in order, as one matrix `name` (on) or each its own."""
        if not on:
            for part in parts:
                weight(*part)
            return
        t.add(name, np.concatenate([t.matrix(rows, cols, sigma=sigma) for _, rows, cols, sigma in parts]))

    # embeddings of rms 0.4 rather than ~0.02 as trained models have: with a
    # tiny residual stream, rms_norm would amplify every rounding difference
    # (F16 / 8-bit activations, F16 KV cache) tenfold and the comparison
    # would measure chaos rather than arithmetic
    weight("token_embd.weight", n_vocab, n_embd, 0.4)
    if "rope_freqs" in spec:
        w.add_tensor("rope_freqs.weight", spec["rope_freqs"])
    if "rope_factors" in spec:
        w.add_tensor("rope_factors_long.weight", spec["rope_factors"][0])
        w.add_tensor("rope_factors_short.weight", spec["rope_factors"][1])
    for il in range(spec["n_layer"]):
        vector(f"blk.{il}.attn_norm.weight", n_embd, 1.0, 0.1)
        fused(spec.get("fused_qkv"), f"blk.{il}.attn_qkv.weight",
              [(f"blk.{il}.attn_q.weight", q_dim, n_embd, 1.2 / np.sqrt(n_embd)),
               (f"blk.{il}.attn_k.weight", kv_dim, n_embd, 1.2 / np.sqrt(n_embd)),
               (f"blk.{il}.attn_v.weight", kv_dim, n_embd, 1.0 / np.sqrt(n_embd))])
        if spec.get("bias") and spec.get("fused_qkv"):
            vector(f"blk.{il}.attn_qkv.bias", q_dim + 2 * kv_dim, 0.0, 0.3)
        elif spec.get("bias"):
            vector(f"blk.{il}.attn_q.bias", q_dim, 0.0, 0.3)
            vector(f"blk.{il}.attn_k.bias", kv_dim, 0.0, 0.3)
            vector(f"blk.{il}.attn_v.bias", kv_dim, 0.0, 0.3)
        if spec.get("qk_norm"):
            vector(f"blk.{il}.attn_q_norm.weight", head_dim, 1.0, 0.2)
            vector(f"blk.{il}.attn_k_norm.weight", head_dim, 1.0, 0.2)
        weight(f"blk.{il}.attn_output.weight", n_embd, q_dim, 0.5 / np.sqrt(q_dim))
        if spec.get("post_norms"):
            vector(f"blk.{il}.post_attention_norm.weight", n_embd, 1.0, 0.1)
        vector(f"blk.{il}.ffn_norm.weight", n_embd, 1.0, 0.1)
        fused(spec.get("fused_up"), f"blk.{il}.ffn_up.weight",
              [(f"blk.{il}.ffn_gate.weight", n_ff, n_embd, 1.0 / np.sqrt(n_embd)),
               (f"blk.{il}.ffn_up.weight", n_ff, n_embd, 1.0 / np.sqrt(n_embd))])
        weight(f"blk.{il}.ffn_down.weight", n_embd, n_ff, 0.5 / np.sqrt(n_ff))
        if spec.get("post_norms"):
            vector(f"blk.{il}.post_ffw_norm.weight", n_embd, 1.0, 0.1)
    vector("output_norm.weight", n_embd, 1.0, 0.1)
    if not spec["tied"]:
        weight("output.weight", n_vocab, n_embd, 1.5 / np.sqrt(n_embd))
    close_model(w, spec)
    return path


def write_all(models, seed, script, prepare=lambda spec: spec, writer=write_model):
    """The scripts' main: each model of `models` (through `prepare`) into
    argv[1] or the script's folder by writer(spec, out_dir, rng, script's
    name, seed), model i drawn from seed + i."""
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(script).resolve().parent
    out_dir.mkdir(parents=True, exist_ok=True)
    for i, spec in enumerate(models):
        rng = np.random.default_rng(seed + i)
        path = writer(prepare(spec), out_dir, rng, Path(script).name, seed)
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    write_all(MODELS, SEED, __file__)
