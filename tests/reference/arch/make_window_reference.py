#!/usr/bin/env python3
"""Reference logits and greedy tokens for the sliding-window models of
make_window_models.py, from a forward pass in numpy (float64) written for
this test, checked by tests/test_tiny_models.c. llama.cpp 0.3.36, the other
fixtures' reference, ignores `llama.attention.sliding_window` and
`starcoder2.attention.sliding_window`, so past the window it computes
another model than the one the file describes.

The pass reads each .gguf with gguf-py (tensors dequantized by gguf.quants)
and runs the architecture as llama.cpp's graphs do (src/models/llama.cpp,
starcoder2.cpp) with the window as Mistral 7B defines it (Jiang et al.
2023, arXiv:2310.06825, section 2) and Hugging Face transformers masks it:
the query at position p sees the keys at positions p - n_swa < j <= p. It
rounds where ggml's CPU backend rounds, so that it measures the model and
not the roundings: activations to the weight's vec-dot type before each
matrix product (Q8_0 blocks for Q8_0 weights, F16 for F16), the KV cache
to F16, queries and softmax probabilities to F16 in attention (llama.cpp's
path without flash attention), GELU through ggml's F16 table.

Validation: `--check` runs the same pass without a window on the llama.cpp
fixtures' models of the same architectures (mistral-q8_0 in
arch_reference.json; starcoder2-f16 and starcoder2-q8_0 in
classic_reference.json; their files set no window) and prints its largest
difference from llama.cpp's logits per model. 2026-11-27 (numpy 2.4.6, gguf
0.19.0): mistral-q8_0 5.2e-6 on the records decoded one token per call and on
the chunk of 40 (llama.cpp's 6 digits), 3.8e-2 on the two of all 90 tokens
(an 8-bit activation rounding that falls the other way in llama.cpp's
batch); starcoder2-f16 2.2e-3; starcoder2-q8_0 3.8e-5; logits up to 18.
A wrong window or rope moves logits by 1..6 (test_tiny_models.c).

Records as make_gptj_reference.py's: the sequence make_tiny_reference.py's
reference() draws (model i: seed + 1000 + i; 90 tokens), the modes and
points of make_arch_reference.py, every logit from one pass over the whole
sequence (causal: the logits at n_past - 1 do not depend on later tokens);
"greedy": the argmax after the first GREEDY_PROMPT tokens, GREEDY_N times.

Usage: python3 tests/reference/arch/make_window_reference.py [--check]
(needs numpy and gguf; make_tiny_reference.py's imports, llama-cpp-python
0.3.36, for the output writer; writes window_reference.json next to this
script; run make_window_models.py first)
"""
import json
import sys
from pathlib import Path

import gguf
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tiny"))
from make_arch_reference import CHUNKS, N_CTX, N_TOKENS, SINGLE_AT  # noqa: E402
from make_tiny_reference import GREEDY_N, GREEDY_PROMPT, rounded, write_references  # noqa: E402
from make_window_models import MODELS, SEED  # noqa: E402

Q = gguf.GGMLQuantizationType


def f16(x):
    return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)


def q8_0(x):
    """Rows of x as ggml's quantize_row_q8_0 (x86) stores them, dequantized:
    blocks of 32 with d = amax / 127 kept in F16, x * (127 / amax) rounded
    to the nearest integer (even on ties)."""
    b = np.asarray(x, dtype=np.float32).reshape(*x.shape[:-1], -1, 32)
    amax = np.abs(b).max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        inv = np.where(amax > 0, np.float32(127) / amax, np.float32(0)).astype(np.float32)
    q = np.rint(b * inv)
    return (q * f16(amax / np.float32(127))).reshape(x.shape)


ROUND_ACTIVATIONS = {Q.F32: lambda x: x, Q.F16: f16, Q.Q8_0: q8_0}


def gelu(x):
    """ggml_vec_gelu_f32 with GGML_GELU_FP16: the tanh form looked up at
    F16(x) and stored in F16; 0 below -10, x above 10."""
    x16 = f16(x)
    g = f16(0.5 * x16 * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * x16 * (1.0 + 0.044715 * x16 * x16))))
    return np.where(x <= -10.0, 0.0, np.where(x >= 10.0, x, g))


class Model:
    def __init__(self, path):
        r = gguf.GGUFReader(str(path))
        self.arch = r.fields["general.architecture"].contents()

        def key(name, default=None):
            f = r.fields.get(f"{self.arch}.{name}")
            return f.contents() if f is not None else default

        self.n_layer, self.n_embd = key("block_count"), key("embedding_length")
        self.n_head = key("attention.head_count")
        self.n_head_kv = key("attention.head_count_kv", self.n_head)
        self.head_dim = key("attention.key_length", self.n_embd // self.n_head)
        self.n_rot = key("rope.dimension_count", self.head_dim)
        self.freq_base = key("rope.freq_base", 10000.0)
        self.window = key("attention.sliding_window", 0)
        self.eps = key("attention.layer_norm_rms_epsilon" if self.arch == "llama" else "attention.layer_norm_epsilon")
        self.bos = r.fields["tokenizer.ggml.bos_token_id"].contents()
        self.t = {t.name: (gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64), t.tensor_type)
                  for t in r.tensors}
        self.n_vocab = self.t["token_embd.weight"][0].shape[0]

    def has(self, name):
        return name in self.t

    def w(self, name):
        return self.t[name][0]

    def matmul(self, name, x):
        """x {n, in} times the weight {out, in}, activations rounded as ggml's
        vec-dot type for that weight rounds them; plus the bias if any."""
        w, qtype = self.t[name + ".weight"]
        y = ROUND_ACTIVATIONS[qtype](x) @ w.T
        return y + self.w(name + ".bias") if self.has(name + ".bias") else y

    def norm(self, name, x):
        """RMSNorm (llama) or LayerNorm with bias (starcoder2), then the weight."""
        if self.arch == "llama":
            y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)
        else:
            c = x - x.mean(axis=-1, keepdims=True)
            y = c / np.sqrt(np.mean(c * c, axis=-1, keepdims=True) + self.eps)
        y = y * self.w(name + ".weight")
        return y + self.w(name + ".bias") if self.has(name + ".bias") else y

    def rope(self, x, n_heads):
        """Rotary embeddings (Su et al. 2021, arXiv:2104.09864) on x {n,
        n_heads * head_dim} at positions 0..n-1: pairs (2i, 2i+1) for llama,
        (i, i + n_rot/2) for starcoder2 (NEOX); angle p * base^(-2i/n_rot),
        its powers taken in float32 as ggml's rope cache takes them."""
        n = x.shape[0]
        scale = np.float32(self.freq_base) ** np.float32(-2.0 / self.n_rot)
        theta = np.zeros((n, self.n_rot // 2), dtype=np.float32)
        theta[:, 0] = np.arange(n, dtype=np.float32)
        for i in range(1, self.n_rot // 2):
            theta[:, i] = theta[:, i - 1] * scale
        cos, sin = np.cos(theta.astype(np.float64)), np.sin(theta.astype(np.float64))
        h = x.reshape(n, n_heads, self.head_dim).copy()
        if self.arch == "llama":
            i0, i1 = np.arange(0, self.n_rot, 2), np.arange(1, self.n_rot, 2)
        else:
            i0, i1 = np.arange(self.n_rot // 2), np.arange(self.n_rot // 2, self.n_rot)
        a, b = h[:, :, i0].copy(), h[:, :, i1].copy()
        h[:, :, i0] = a * cos[:, None, :] - b * sin[:, None, :]
        h[:, :, i1] = a * sin[:, None, :] + b * cos[:, None, :]
        return h.reshape(x.shape)

    def attention(self, q, k, v, window):
        """Softmax attention over an F16 cache, query head h on KV head
        h / (n_head / n_head_kv); the query at p sees keys j <= p, and only
        p - j < window when window > 0."""
        n, hd = q.shape[0], self.head_dim
        q = f16(q).reshape(n, self.n_head, hd)
        k = f16(k).reshape(n, self.n_head_kv, hd)
        v = f16(v).reshape(n, self.n_head_kv, hd)
        p, j = np.arange(n)[:, None], np.arange(n)[None, :]
        masked = (j > p) | ((window > 0) & (p - j >= window))
        out = np.zeros((n, self.n_head, hd))
        for h in range(self.n_head):
            g = h // (self.n_head // self.n_head_kv)
            s = np.where(masked, -np.inf, (q[:, h] @ k[:, g].T) / np.sqrt(hd))
            e = np.exp(s - s.max(axis=1, keepdims=True))
            out[:, h] = f16(e / e.sum(axis=1, keepdims=True)) @ v[:, g]
        return out.reshape(n, self.n_head * hd)

    def qkv(self, blk, x):
        if self.has(f"{blk}.attn_qkv.weight"):
            y = self.matmul(f"{blk}.attn_qkv", x)
            q_dim, kv_dim = self.n_head * self.head_dim, self.n_head_kv * self.head_dim
            return y[:, :q_dim], y[:, q_dim:q_dim + kv_dim], y[:, q_dim + kv_dim:]
        return (self.matmul(f"{blk}.attn_{p}", x) for p in "qkv")

    def ffn(self, blk, x):
        if self.arch == "llama":  # SwiGLU
            g = self.matmul(f"{blk}.ffn_gate", x)
            return self.matmul(f"{blk}.ffn_down", g / (1.0 + np.exp(-g)) * self.matmul(f"{blk}.ffn_up", x))
        return self.matmul(f"{blk}.ffn_down", gelu(self.matmul(f"{blk}.ffn_up", x)))

    def logits(self, tokens, window):
        """The logits {len(tokens), n_vocab} at positions 0.. of `tokens`."""
        x = self.w("token_embd.weight")[tokens]
        for il in range(self.n_layer):
            blk = f"blk.{il}"
            q, k, v = self.qkv(blk, self.norm(f"{blk}.attn_norm", x))
            att = self.attention(self.rope(q, self.n_head), self.rope(k, self.n_head_kv), v, window)
            x = x + self.matmul(f"{blk}.attn_output", att)
            x = x + self.ffn(blk, self.norm(f"{blk}.ffn_norm", x))
        out = "output" if self.has("output.weight") else "token_embd"
        return self.matmul(out, self.norm("output_norm", x))


def points(n_tokens, single_at, chunks):
    return [("batch", n_tokens)] + [("single", n) for n in single_at] + [("chunks", int(n)) for n in np.cumsum(chunks)]


def reference(path, seq_seed, n_ctx, n_tokens, single_at, chunks):
    """make_tiny_reference.py's reference() (the same sequence and points)
    from the numpy pass with the file's window, and its greedy continuation."""
    m = Model(path)
    assert m.window > 0, f"{path.name} sets no sliding window"
    rng = np.random.default_rng(seq_seed)  # as make_tiny_reference.py's reference()
    tokens = [m.bos] + [int(t) for t in rng.integers(0, m.n_vocab, size=n_tokens - 1)]
    logits = m.logits(tokens, m.window)
    records = [{"mode": mode, "n_past": n, "logits": rounded(logits[n - 1])}
               for mode, n in points(n_tokens, single_at, chunks)]
    seq, gaps = tokens[:GREEDY_PROMPT], []
    for _ in range(GREEDY_N):
        top2 = np.sort(m.logits(seq, m.window)[-1])[-2:]
        gaps.append(top2[1] - top2[0])
        seq.append(int(np.argmax(m.logits(seq, m.window)[-1])))
    print(f"{path.name}: window {m.window}, smallest greedy margin {min(gaps):.3g}")
    greedy = {"n_prompt": GREEDY_PROMPT, "tokens": seq[GREEDY_PROMPT:]}
    return {"n_vocab": m.n_vocab, "tokens": tokens, "records": records, "greedy": greedy}


def check():
    """The pass without a window against llama.cpp's records of the models
    of the same architectures."""
    for fixture, names in (("arch_reference.json", ["mistral-q8_0"]),
                           ("classic_reference.json", ["starcoder2-f16", "starcoder2-q8_0"])):
        for model in json.loads((HERE / fixture).read_text())["models"]:
            if Path(model["file"]).stem not in names:
                continue
            m = Model(HERE / Path(model["file"]).name)
            logits = m.logits(model["tokens"], 0)
            worst = max(np.abs(logits[r["n_past"] - 1] - np.array(r["logits"])).max() for r in model["records"])
            print(f"{model['file']}: max |numpy - llama.cpp| {worst:.3g} over {len(model['records'])} records "
                  f"(max |logit| {np.abs(logits).max():.3g})")


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        check()
    else:
        write_references(MODELS, SEED, __file__, "window_reference.json",
                         lambda spec: {"arch": spec["arch"], "type": spec["type"]}, N_CTX, N_TOKENS, SINGLE_AT,
                         CHUNKS, make=reference,
                         generator=f"numpy {np.__version__} float64 forward pass with ggml's roundings")
