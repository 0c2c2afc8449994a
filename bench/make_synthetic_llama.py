#!/usr/bin/env python3
"""Writes, with gguf-py, a llama-architecture GGUF with random weights in the
exact shapes of a real model, for speed benchmarks of a model of real size
without downloading one (hearth bench, bench/compare_llama_cpp.py,
bench/gpu/run.sh).

Shapes (--shape; from each model's config.json):
  llama-3.2-1b (default)  n_embd 2048, 16 layers, n_head 32, n_head_kv 8,
      head_dim 64, n_ff 8192, n_vocab 128256, rope base 500000, rms_norm_eps
      1e-5, context 131072, tied embeddings (no output.weight: token_embd is
      also the output matrix). 1.24 B parameters.
  llama-3-8b  n_embd 4096, 32 layers, n_head 32, n_head_kv 8, head_dim 128,
      n_ff 14336, n_vocab 128256, rope base 500000, rms_norm_eps 1e-5, context
      8192, untied output.weight. 8.03 B parameters.
  mixtral-8x7b  Mixtral-8x7B's layers (Jiang et al. 2024): n_embd 4096, 32
      layers, n_head 32, n_head_kv 8, head_dim 128, a mixture of 8 experts of
      n_ff 14336 per layer, 2 used per token (llama.expert_count,
      expert_used_count; ffn_gate_inp F32, as llama-quantize leaves it, and
      the stacked ffn_{gate,up,down}_exps), rope base 1e6, rms_norm_eps 1e-5,
      context 32768, untied output.weight; with the synthetic vocabulary of
      128256 tokens below (Mixtral's has 32000). 46.7 B parameters in the
      layers: take --n-layer 1 or 2 for the CPU (1.4 B each).
--n-layer N keeps only the first N layers (to try the writer quickly).

Left out: Llama 3.2's rope scaling. It uses rope type "llama3" (factor 32,
low/high frequency factors 1 and 4, original context 8192), which hearth does
not support yet (it accepts none and linear); it changes only the rotation
frequencies, not the work per token, so speed is unaffected. Add it here when
hearth supports it.

Weights are N(0, 0.02) (token embeddings too), norm weights 1, all F32 for
the norms. To write at disk speed (an 8B F16 file is 16 GB), the values are
drawn once, as a pool of 2^26 numbers (quantized once per type), and each
tensor is a window of that pool at its own random block-aligned offset (the
pool repeated where a tensor is larger): every tensor is random, tensors are
shifted copies of one another, and the values cost nothing per tensor.

Every 2-D weight has the chosen type (what llama-quantize --pure gives):
F16, Q8_0, Q4_0 or Q4_1, the types gguf.quants.quantize writes. A type is a
recipe in RECIPES: the default tensor type, general.file_type, and per-tensor
overrides by name, so a mix such as Q4_K_M (Q4_K with Q6_K for attn_v /
ffn_down in some layers and for the output) is one more entry once weights of
those types can be written (gguf-py cannot quantize K-quants: write F16 here
and run `hearth quantize`, as bench/gpu/run.sh does, or llama-quantize).

The vocabulary loads in llama.cpp and hearth: byte-level BPE ("gpt2", pre
"llama-bpe") with GPT-2's 256 byte tokens, 127744 synthetic merges (every
pair of byte tokens, then byte-token pairs extended by one more byte token,
most common characters first) making 128000 normal tokens, then Llama 3's 256
special tokens (<|begin_of_text|> = bos 128000, <|end_of_text|> = eos 128001,
<|eot_id|> = eot 128009, reserved ones), so token ids and the output matrix
have Llama 3's sizes. Text tokenizes into pieces of 2-3 bytes (not like a
trained vocabulary; for speed that does not matter).

Usage: python3 bench/make_synthetic_llama.py [--shape llama-3-8b] [--type Q8_0 Q4_0 ...]
           [--n-layer N] [--out DIR] [--seed S]
Writes DIR/synthetic-<shape>-<type>.gguf (default DIR: models/, ignored by
git); a few seconds per GiB written.
"""
import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import gguf
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
T = gguf.GGMLQuantizationType
FT = gguf.LlamaFileType

SHAPES = {
    "llama-3.2-1b": dict(name="Llama-3.2-1B", n_embd=2048, n_layer=16, n_head=32, n_head_kv=8, head_dim=64,
                         n_ff=8192, n_ctx_train=131072, rope_base=500000.0, norm_eps=1e-5, tied=True),
    "llama-3-8b": dict(name="Llama-3-8B", n_embd=4096, n_layer=32, n_head=32, n_head_kv=8, head_dim=128,
                       n_ff=14336, n_ctx_train=8192, rope_base=500000.0, norm_eps=1e-5, tied=False),
    "mixtral-8x7b": dict(name="Mixtral-8x7B", n_embd=4096, n_layer=32, n_head=32, n_head_kv=8, head_dim=128,
                         n_ff=14336, n_ctx_train=32768, rope_base=1e6, norm_eps=1e-5, tied=False,
                         n_expert=8, n_expert_used=2),
}
POOL = 1 << 26  # values drawn once; a multiple of every block size
N_NORMAL_TOKENS = 128000
N_SPECIAL_TOKENS = 256
SIGMA = 0.02


@dataclass
class Recipe:
    """Tensor types of one model type: `default` for every 2-D weight unless a
    name in `overrides` (a substring of the tensor name) says otherwise."""
    default: T
    file_type: FT
    overrides: dict = field(default_factory=dict)

    def type_of(self, name):
        for part, t in self.overrides.items():
            if part in name:
                return t
        return self.default


RECIPES = {
    "F16": Recipe(T.F16, FT.MOSTLY_F16),
    "Q8_0": Recipe(T.Q8_0, FT.MOSTLY_Q8_0),
    "Q4_0": Recipe(T.Q4_0, FT.MOSTLY_Q4_0),
    "Q4_1": Recipe(T.Q4_1, FT.MOSTLY_Q4_1),
}


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


def byte_tokens_by_frequency(b2u):
    """The 256 byte tokens, the characters of English text first."""
    common = b" etaoinshrdlcumwfgypbvkjxqz" + b"ETAOINSHRDLCUMWFGYPBVKJXQZ" + b"0123456789" + b".,'\"-:;!?()\n"
    order = list(dict.fromkeys(list(common) + list(range(256))))
    return [b2u[b] for b in order]


def special_tokens():
    """Llama 3's 256 special tokens, ids 128000..128255."""
    named = {0: "<|begin_of_text|>", 1: "<|end_of_text|>", 4: "<|finetune_right_pad_id|>", 6: "<|start_header_id|>",
             7: "<|end_header_id|>", 8: "<|eom_id|>", 9: "<|eot_id|>", 10: "<|python_tag|>"}
    out, reserved = [], 0
    for i in range(N_SPECIAL_TOKENS):
        if i in named:
            out.append(named[i])
        else:
            out.append(f"<|reserved_special_token_{reserved}|>")
            reserved += 1
    return out


def vocabulary():
    """tokens, token types, merges ("a b"); see the module docstring."""
    b2u = bytes_to_unicode()
    chars = byte_tokens_by_frequency(b2u)
    tokens = [b2u[b] for b in range(256)]
    merges = []
    # every pair of byte tokens, the most common characters first
    rank = {c: i for i, c in enumerate(chars)}
    pairs = sorted(((a, b) for a in chars for b in chars), key=lambda p: (max(rank[p[0]], rank[p[1]]), rank[p[0]], rank[p[1]]))
    for a, b in pairs:
        merges.append((a, b))
        tokens.append(a + b)
    # then pairs extended by one byte token, in the same order
    for a, b in pairs:
        for c in chars:
            if len(tokens) == N_NORMAL_TOKENS:
                break
            merges.append((a + b, c))
            tokens.append(a + b + c)
        if len(tokens) == N_NORMAL_TOKENS:
            break
    types = [gguf.TokenType.NORMAL] * len(tokens)
    tokens += special_tokens()
    types += [gguf.TokenType.CONTROL] * N_SPECIAL_TOKENS
    assert len(set(tokens)) == len(tokens) == N_NORMAL_TOKENS + N_SPECIAL_TOKENS
    return tokens, [int(t) for t in types], [f"{a} {b}" for a, b in merges]


def add_metadata(w, hp, type_name, recipe, seed, n_vocab):
    w.add_name(f"synthetic {hp['name']} shape {type_name}")
    w.add_description(f"random weights N(0, {SIGMA}) in {hp['name']}'s shapes ({Path(__file__).name}, seed {seed}); "
                      "for speed measurements only")
    w.add_context_length(hp["n_ctx_train"])
    w.add_embedding_length(hp["n_embd"])
    w.add_block_count(hp["n_layer"])
    w.add_feed_forward_length(hp["n_ff"])
    w.add_head_count(hp["n_head"])
    w.add_head_count_kv(hp["n_head_kv"])
    w.add_key_length(hp["head_dim"])
    w.add_value_length(hp["head_dim"])
    w.add_layer_norm_rms_eps(hp["norm_eps"])
    w.add_rope_dimension_count(hp["head_dim"])
    w.add_rope_freq_base(hp["rope_base"])
    w.add_vocab_size(n_vocab)
    w.add_file_type(int(recipe.file_type))
    if hp.get("n_expert"):
        w.add_expert_count(hp["n_expert"])
        w.add_expert_used_count(hp["n_expert_used"])


def add_vocabulary(w):
    tokens, types, merges = vocabulary()
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(N_NORMAL_TOKENS)
    w.add_eos_token_id(N_NORMAL_TOKENS + 1)
    w.add_eot_token_id(N_NORMAL_TOKENS + 9)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    return len(tokens)


class Pool:
    """POOL values N(0, SIGMA) drawn once, and their encoding in each weight
    type (quantized once, on first use); window() hands out block-aligned
    windows of it (see the module docstring)."""

    def __init__(self, rng):
        self.rng = rng
        self.values = rng.standard_normal(POOL, dtype=np.float32)
        self.values *= SIGMA
        self.encoded = {}

    def encode(self, qtype):
        """The pool in qtype as a flat uint8 array, and its bytes per element block."""
        if qtype not in self.encoded:
            if qtype == T.F32:
                raw = self.values.view(np.uint8)
            elif qtype == T.F16:
                raw = self.values.astype(np.float16).view(np.uint8)
            else:
                raw = gguf.quants.quantize(self.values.reshape(-1, 256), qtype).reshape(-1)
            self.encoded[qtype] = raw
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        return self.encoded[qtype], block, size

    def window(self, qtype, rows, cols):
        """[rows, cols] weights of qtype as raw bytes, shape (rows, bytes per row),
        starting at a random block-aligned offset of the pool (wrapping)."""
        raw, block, size = self.encode(qtype)
        assert cols % block == 0, f"a row of {cols} is not a whole number of {qtype.name} blocks"
        n_bytes = rows * cols // block * size
        start = int(self.rng.integers(0, POOL // block)) * size
        if start + n_bytes <= raw.size:
            out = raw[start:start + n_bytes]
        else:  # wrap around, the pool repeated as often as needed
            reps = (start + n_bytes + raw.size - 1) // raw.size
            out = np.tile(raw, reps)[start:start + n_bytes]
        return out.reshape(rows, cols // block * size)


def add_weights(w, hp, recipe, pool, n_vocab):
    n_embd, n_ff = hp["n_embd"], hp["n_ff"]
    q_dim, kv_dim = hp["n_head"] * hp["head_dim"], hp["n_head_kv"] * hp["head_dim"]

    def weight(name, rows, cols, n_expert=0, qtype=None):
        """A [rows, cols] matrix (GGUF shape {cols, rows}) of the recipe's type,
        or n_expert of them stacked (GGUF shape {cols, rows, n_expert})."""
        qtype = qtype or recipe.type_of(name)
        raw = pool.window(qtype, max(n_expert, 1) * rows, cols)
        w.add_tensor(name, raw.reshape(n_expert, rows, -1) if n_expert else raw, raw_dtype=qtype)

    def norm(name):
        w.add_tensor(name, np.ones(n_embd, dtype=np.float32))

    weight("token_embd.weight", n_vocab, n_embd)  # tied: also the output matrix
    for il in range(hp["n_layer"]):
        norm(f"blk.{il}.attn_norm.weight")
        weight(f"blk.{il}.attn_q.weight", q_dim, n_embd)
        weight(f"blk.{il}.attn_k.weight", kv_dim, n_embd)
        weight(f"blk.{il}.attn_v.weight", kv_dim, n_embd)
        weight(f"blk.{il}.attn_output.weight", n_embd, q_dim)
        norm(f"blk.{il}.ffn_norm.weight")
        if hp.get("n_expert"):
            n_expert = hp["n_expert"]
            weight(f"blk.{il}.ffn_gate_inp.weight", n_expert, n_embd, qtype=T.F32)
            weight(f"blk.{il}.ffn_gate_exps.weight", n_ff, n_embd, n_expert)
            weight(f"blk.{il}.ffn_up_exps.weight", n_ff, n_embd, n_expert)
            weight(f"blk.{il}.ffn_down_exps.weight", n_embd, n_ff, n_expert)
            continue
        weight(f"blk.{il}.ffn_gate.weight", n_ff, n_embd)
        weight(f"blk.{il}.ffn_up.weight", n_ff, n_embd)
        weight(f"blk.{il}.ffn_down.weight", n_embd, n_ff)
    norm("output_norm.weight")
    if not hp["tied"]:
        weight("output.weight", n_vocab, n_embd)


def write_model(shape, hp, type_name, out_dir, pool, seed):
    """Writes the file under a temporary name and renames it when complete."""
    recipe = RECIPES[type_name]
    path = out_dir / f"synthetic-{shape}-{type_name.lower()}.gguf"
    part = path.with_name(path.name + ".part")
    w = gguf.GGUFWriter(str(part), "llama")
    add_metadata(w, hp, type_name, recipe, seed, N_NORMAL_TOKENS + N_SPECIAL_TOKENS)
    n_vocab = add_vocabulary(w)
    add_weights(w, hp, recipe, pool, n_vocab)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    part.rename(path)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="llama-3.2-1b", choices=list(SHAPES), help="model shape (default llama-3.2-1b)")
    ap.add_argument("--type", nargs="+", default=["Q8_0"], choices=list(RECIPES), help="weight types (default Q8_0)")
    ap.add_argument("--n-layer", type=int, default=None, help="keep only the first N layers (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "models", help="output folder (default models/)")
    ap.add_argument("--seed", type=int, default=1234, help="random seed (default 1234)")
    args = ap.parse_args()
    hp = dict(SHAPES[args.shape])
    if args.n_layer is not None:
        if not 1 <= args.n_layer <= hp["n_layer"]:
            ap.error(f"--n-layer must be 1..{hp['n_layer']} for {args.shape}")
        hp["n_layer"] = args.n_layer
    shape = args.shape if args.n_layer is None else f"{args.shape}-{args.n_layer}l"
    args.out.mkdir(parents=True, exist_ok=True)
    pool = Pool(np.random.default_rng(args.seed))
    for type_name in args.type:
        t0 = time.monotonic()
        path = write_model(shape, hp, type_name, args.out, pool, args.seed)
        print(f"wrote {path} ({path.stat().st_size / 2**30:.2f} GiB, {time.monotonic() - t0:.0f} s)", file=sys.stderr)
        print(path)


if __name__ == "__main__":
    main()
