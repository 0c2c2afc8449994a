#!/usr/bin/env python3
"""Writes the reference fixtures of tests/reference/arch/ (NAME_reference.json)
for the models make_models.py writes, checked by tests/test_tiny_models.c
(and by the offload, flash attention and KV cache tests that reuse them).

Usage: python3 tests/reference/arch/make_references.py [FIXTURE...]
       python3 tests/reference/arch/make_references.py --check
FIXTURE: a key of FIXTURES (default: all of them). Needs numpy, gguf-py and
llama-cpp-python==0.3.36 (tests/reference/tiny/make_tiny_reference.py's
writer, which every fixture goes through, imports it); the gptj fixture also
needs transformers' Flax GPT-J, in this environment (huggingface.co is not
needed, all from PyPI, on the CPU):
  python3 -m venv --system-site-packages /tmp/gptj-venv
  /tmp/gptj-venv/bin/pip install "transformers<4.50" flax==0.7.0 \\
      jax==0.4.13 jaxlib==0.4.13 "numpy<2" gguf
  /tmp/gptj-venv/bin/python tests/reference/arch/make_references.py gptj
(transformers 4.49.0 was used: its Flax models need flax <= 0.7 and jax
<= 0.4.13; the system site packages give llama-cpp-python). Run
make_models.py first. The fixtures are committed, so nothing here runs in CI.

FIXTURES is the table: one entry per JSON file, a dict of
  models   the names of its models (make_models.py's MODELS), in file order
  seed     model i's token sequence is drawn from seed + 1000 + i
  ref      who computes the logits: "llama.cpp" (make_tiny_reference.py's
           reference(), through llama-cpp-python), "numpy" (the
           sliding-window pass below) or "gptj" (transformers' GPT-J)
  greedy   llama.cpp's greedy continuation too (make_tiny_reference.py's
           add_greedy(): GREEDY_N tokens after the sequence's first
           GREEDY_PROMPT, each fed back), which hearth's must equal token
           for token; the numpy and gptj references always have one
  long_n_ctx  the last model run again at this n_ctx (a model entry of its
           own with "n_ctx")
Each fixture is a file of its own, so that regenerating one leaves the
others' records as they were. Every fixture decodes its models' sequence of
N_TOKENS = 90 tokens (bos, then ids drawn from the vocabulary; longer than
every model's sliding window and than 64 positions) as
make_tiny_reference.py's reference() does, with n_ctx N_CTX = 128: the
whole sequence in one batch; one token per call with records after 1, 21,
64 and 90 tokens; two chunks of 40 and 50 (the second batch starts at
position 40, with its window reaching back before it). flash_attn is off and
the SWA cache full-size (llama-cpp-python's default swa_full), so
llama.cpp's attention is the plain path over the F16 cache with masked
positions at -inf. Logits are rounded to 6 significant digits. Each model
entry has "file", "arch", "type", "n_vocab", "tokens", "records", then
"tokenize" (llama.cpp's tokenization of make_tiny_reference.py's TEXTS;
not for the numpy and gptj references: the vocabulary is the tiny BPE the
others check) and "greedy" where it has one.

The fixtures:
  arch     llama's variants, qwen2, qwen3, gemma3
  yarn     the YaRN models (normal and NEOX pairs), a file of its own
           because it was made on another machine than arch_reference.json
           (AVX2, not AVX-512: llama.cpp's F32/F16 products add in another
           order there, see test_tiny_models.c's YARN_MAX_DIFF)
  phi3     fused QKV and gate/up, LongRoPE's long and short factors with the
           attention factor, partial rotary; n_ctx 128, which llama.cpp pads
           to 256 before it chooses the long or short factors; tinyphi-q8_0
           again at n_ctx 512, past its original context of 256, so there
           it takes the long factors
  classic  the LayerNorm families gpt2, starcoder2, gptneox
  alibi    mpt (with and without biases and clamp_kqv), bloom
  falcon   one and two norms per block, multi-query and grouped attention
  moe      Mixtral-style llama: softmax routing, top-2 of 4, renormalized
  window   llama and starcoder2 files that set a sliding window, which
           llama.cpp 0.3.36 ignores (past the window it computes another
           model than the file describes): the numpy pass below
  gptj     llama.cpp 0.3.36 has no gptj loader or graph ("unsupported model
           architecture"): Hugging Face transformers' GPT-J
           (FlaxGPTJForCausalLM, float32 on the CPU) on each file's weights

The numpy and gptj references compute the records' logits from one forward
pass over the whole sequence, at position n_past - 1 (a causal model's
logits there do not depend on later tokens), at the same modes and points
as llama.cpp's so that hearth decodes them the same ways, and the greedy
tokens by a pass per token.

The numpy pass (float64) reads each .gguf with gguf-py (tensors dequantized
by gguf.quants) and runs the architecture as llama.cpp's graphs do
(src/models/llama.cpp, starcoder2.cpp) with the window as Mistral 7B defines
it (Jiang et al. 2023, arXiv:2310.06825, section 2) and Hugging Face
transformers masks it: the query at position p sees the keys at positions
p - n_swa < j <= p. It rounds where ggml's CPU backend rounds, so that it
measures the model and not the roundings: activations to the weight's
vec-dot type before each matrix product (Q8_0 blocks for Q8_0 weights, F16
for F16), the KV cache to F16, queries and softmax probabilities to F16 in
attention (llama.cpp's path without flash attention), GELU through ggml's
F16 table. Validation: `--check` runs the same pass without a window on the
llama.cpp fixtures' models of the same architectures (mistral-q8_0 in
arch_reference.json; starcoder2-f16 and starcoder2-q8_0 in
classic_reference.json; their files set no window) and prints its largest
difference from llama.cpp's logits per model. 2026-11-27 (numpy 2.4.6, gguf
0.19.0): mistral-q8_0 5.2e-6 on the records decoded one token per call and on
the chunk of 40 (llama.cpp's 6 digits), 3.8e-2 on the two of all 90 tokens
(an 8-bit activation rounding that falls the other way in llama.cpp's
batch); starcoder2-f16 2.2e-3; starcoder2-q8_0 3.8e-5; logits up to 18.
A wrong window or rope moves logits by 1..6 (test_tiny_models.c).

The gptj reference reads each .gguf with gguf-py (F16 and Q8_0 tensors
dequantized to float32 by gguf.quants, so it runs the weights the file
holds); the file's keys become a GPTJConfig (gelu_new, no dropout, untied
lm_head) and each Flax parameter takes the tensor that gguf-py's tensor map
for MODEL_ARCH.GPTJ names for it (transformer.h.N.attn.q_proj ->
blk.N.attn_q ...; kernels transposed); every tensor of the file must be
taken.
"""
import argparse
import json
import sys
from pathlib import Path

import gguf
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tiny"))
from make_models import find  # noqa: E402
from make_tiny_reference import GREEDY_N, GREEDY_PROMPT, add_greedy, reference, rounded, write_references  # noqa: E402

N_CTX = 128
N_TOKENS = 90
SINGLE_AT = [1, 21, 64, 90]
CHUNKS = [40, 50]  # sums to N_TOKENS

FIXTURES = {
    "arch": dict(models=["llama3-f32", "mistral-q8_0", "qwen2-f16", "qwen3-q8_0", "gemma3-q8_0", "gemma3-f16"],
                 seed=20251121, ref="llama.cpp"),
    "yarn": dict(models=["llama-yarn-f32", "qwen2-yarn-f16"], seed=20251221, ref="llama.cpp"),
    "phi3": dict(models=["tinyphi-f16", "tinyphi-q8_0"], seed=20251421, ref="llama.cpp", greedy=True,
                 long_n_ctx=512),
    "classic": dict(models=["gpt2-f16", "gpt2-q8_0", "starcoder2-f16", "starcoder2-q8_0", "gptneox-f16",
                            "gptneox-q8_0"], seed=20261126, ref="llama.cpp"),
    "alibi": dict(models=["mpt-f16", "mpt-q8_0", "bloom-f16", "bloom-q8_0"], seed=20261127, ref="llama.cpp",
                  greedy=True),
    "falcon": dict(models=["falcon-f16", "falcon-q8_0"], seed=20261129, ref="llama.cpp", greedy=True),
    "moe": dict(models=["mixtral-f16", "mixtral-q8_0"], seed=20261127, ref="llama.cpp", greedy=True),
    "window": dict(models=["mistral-window-q8_0", "starcoder2-window-f16"], seed=20261128, ref="numpy"),
    "gptj": dict(models=["gptj-f16", "gptj-q8_0"], seed=20261130, ref="gptj"),
}

# ---- the numpy pass with a sliding window (the window fixture) ----

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


class WindowModel:
    """A llama or starcoder2 file, run by the numpy pass."""

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


def load_window(path, n_ctx):
    """The numpy pass of the file at `path` with its window, as load_gptj()."""
    m = WindowModel(path)
    assert m.window > 0, f"{path.name} sets no sliding window"
    return (lambda tokens: m.logits(tokens, m.window)), m.n_vocab, m.bos, f"window {m.window}"


def check_window():
    """The numpy pass without a window against llama.cpp's records of the
    models of the same architectures."""
    for fixture, names in (("arch_reference.json", ["mistral-q8_0"]),
                           ("classic_reference.json", ["starcoder2-f16", "starcoder2-q8_0"])):
        for model in json.loads((HERE / fixture).read_text())["models"]:
            if Path(model["file"]).stem not in names:
                continue
            m = WindowModel(HERE / Path(model["file"]).name)
            logits = m.logits(model["tokens"], 0)
            worst = max(np.abs(logits[r["n_past"] - 1] - np.array(r["logits"])).max() for r in model["records"])
            print(f"{model['file']}: max |numpy - llama.cpp| {worst:.3g} over {len(model['records'])} records "
                  f"(max |logit| {np.abs(logits).max():.3g})")


# ---- transformers' GPT-J (the gptj fixture) ----

def load_gptj(path, n_ctx):
    """For the gptj file at `path`: a function from a token list to the
    logits {len(tokens), n_vocab} of one FlaxGPTJForCausalLM forward pass
    over it (padded to n_ctx so that jax compiles one shape per model; a
    causal model's logits do not depend on the padding after them), the
    vocabulary size, the bos id and a note."""
    import jax
    import jax.numpy as jnp
    from flax.traverse_util import flatten_dict, unflatten_dict
    from transformers import FlaxGPTJForCausalLM, GPTJConfig

    r = gguf.GGUFReader(str(path))

    def key(name):
        return r.fields[name].contents()

    n_layer = key("gptj.block_count")
    tensors = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32) for t in r.tensors}
    config = GPTJConfig(vocab_size=tensors["token_embd.weight"].shape[0], n_positions=key("gptj.context_length"),
                        n_embd=key("gptj.embedding_length"), n_layer=n_layer, n_head=key("gptj.attention.head_count"),
                        rotary_dim=key("gptj.rope.dimension_count"), n_inner=key("gptj.feed_forward_length"),
                        layer_norm_epsilon=key("gptj.attention.layer_norm_epsilon"), activation_function="gelu_new",
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=False)
    model = FlaxGPTJForCausalLM(config, seed=0, dtype=jnp.float32)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GPTJ, n_layer)
    params, taken = {}, set()
    for path_, init in flatten_dict(model.params).items():
        module, leaf = ".".join(path_[:-1]), path_[-1]
        name = names.get_name(module) + (".bias" if leaf == "bias" else ".weight")
        value = tensors[name].T if leaf == "kernel" else tensors[name]  # Flax kernels are {in, out}
        assert value.shape == init.shape, (name, value.shape, init.shape)
        params[path_] = jnp.asarray(value)
        taken.add(name)
    assert taken == set(tensors), f"tensors of {path.name} no GPT-J parameter takes: {set(tensors) - taken}"
    model.params = unflatten_dict(params)
    forward = jax.jit(lambda params, ids: model(ids, params=params).logits)

    def all_logits(tokens):
        ids = np.zeros((1, n_ctx), dtype=np.int32)
        ids[0, :len(tokens)] = tokens
        return np.asarray(forward(model.params, ids)[0, :len(tokens)], dtype=np.float32)

    return all_logits, config.vocab_size, key("tokenizer.ggml.bos_token_id"), "gptj"


# ---- the references ----

def one_pass_reference(load):
    """A make= for write_references(): make_tiny_reference.py's reference()
    (the same sequence and points) from the logits of one pass over the
    whole sequence by load(path, n_ctx)'s model, with its greedy
    continuation."""
    def make(path, seq_seed, n_ctx, n_tokens, single_at, chunks):
        logits_of, n_vocab, bos, note = load(path, n_ctx)
        rng = np.random.default_rng(seq_seed)  # as make_tiny_reference.py's reference()
        tokens = [bos] + [int(t) for t in rng.integers(0, n_vocab, size=n_tokens - 1)]
        logits = logits_of(tokens)
        points = [("batch", n_tokens)] + [("single", n) for n in single_at] + \
            [("chunks", int(n)) for n in np.cumsum(chunks)]
        records = [{"mode": mode, "n_past": n, "logits": rounded(logits[n - 1])} for mode, n in points]
        seq, gaps = tokens[:GREEDY_PROMPT], []
        for _ in range(GREEDY_N):
            last = logits_of(seq)[-1]
            top2 = np.sort(last)[-2:]
            gaps.append(top2[1] - top2[0])
            seq.append(int(np.argmax(last)))
        print(f"{path.name}: {note}, smallest greedy margin {min(gaps):.3g}")
        greedy = {"n_prompt": GREEDY_PROMPT, "tokens": seq[GREEDY_PROMPT:]}
        return {"n_vocab": n_vocab, "tokens": tokens, "records": records, "greedy": greedy}
    return make


def generator(ref):
    """The "generator" of a fixture of reference `ref` (but this script's
    name, which write_references() adds), and the make= for it."""
    if ref == "numpy":
        return f"numpy {np.__version__} float64 forward pass with ggml's roundings", one_pass_reference(load_window)
    if ref == "gptj":
        import jax
        import transformers
        return (f"transformers {transformers.__version__} FlaxGPTJForCausalLM (jax {jax.__version__}, CPU, float32)",
                one_pass_reference(load_gptj))
    from llama_cpp import __version__ as llama_cpp_version
    return f"llama-cpp-python {llama_cpp_version}", reference


def write_fixture(name):
    """Writes NAME_reference.json as FIXTURES[name] says."""
    fx = FIXTURES[name]
    models = [find(m) for m in fx["models"]]
    out = HERE / f"{name}_reference.json"
    gen, make = generator(fx["ref"])
    write_references(models, fx["seed"], __file__, out.name, lambda spec: {"arch": spec["arch"], "type": spec["type"]},
                     N_CTX, N_TOKENS, SINGLE_AT, CHUNKS, make=make, generator=gen)
    if "long_n_ctx" in fx:
        doc = json.loads(out.read_text())
        spec, last = models[-1], doc["models"][-1]
        doc["models"].append({"file": last["file"], "arch": spec["arch"], "type": spec["type"],
                              "n_ctx": fx["long_n_ctx"],
                              **reference(HERE / f"{spec['name']}.gguf", fx["seed"] + 1000 + len(models),
                                          fx["long_n_ctx"], N_TOKENS, SINGLE_AT, CHUNKS)})
        out.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    if fx.get("greedy"):
        add_greedy(out, N_CTX)


def main():
    ap = argparse.ArgumentParser(description="Writes the reference fixtures of FIXTURES (all, or those named).")
    ap.add_argument("fixtures", nargs="*", metavar="FIXTURE", help=f"one of {', '.join(FIXTURES)} (default: all)")
    ap.add_argument("--check", action="store_true",
                    help="compare the numpy pass without a window with llama.cpp's fixtures, and write nothing")
    args = ap.parse_args()
    unknown = set(args.fixtures) - set(FIXTURES)
    if unknown:
        ap.error(f"no fixture {', '.join(sorted(unknown))}; the fixtures: {', '.join(FIXTURES)}")
    if args.check:
        check_window()
        return
    for name in args.fixtures or FIXTURES:
        write_fixture(name)


if __name__ == "__main__":
    main()
