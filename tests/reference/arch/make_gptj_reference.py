#!/usr/bin/env python3
"""Reference logits and greedy tokens for the gptj models of
make_gptj_models.py from Hugging Face transformers' GPT-J
(FlaxGPTJForCausalLM, float32 on the CPU), checked by
tests/test_tiny_models.c. llama.cpp 0.3.36, the other fixtures' reference,
has no gptj loader or graph ("unsupported model architecture"), so this one
is the model's own implementation run on each file's weights.

Each .gguf is read with gguf-py (GGUFReader; F16 and Q8_0 tensors
dequantized to float32 by gguf.quants, so the reference runs the weights the
file holds), its keys become a GPTJConfig (gelu_new, no dropout, untied
lm_head) and each Flax parameter takes the tensor that gguf-py's tensor map
for MODEL_ARCH.GPTJ names for it (transformer.h.N.attn.q_proj ->
blk.N.attn_q ...; kernels transposed); every tensor of the file must be
taken. The token sequence is the one make_tiny_reference.py's reference()
draws (model i: seed + 1000 + i, bos first; make_arch_reference.py's 90
tokens), and the records have its modes and points (batch 90; single 1, 21,
64, 90; chunks 40, 90) so that hearth decodes it the same ways; their
logits all come from one forward pass over the whole sequence, at position
n_past - 1 (a causal model's logits there do not depend on later tokens).
"greedy": the argmax after the sequence's first GREEDY_PROMPT tokens,
GREEDY_N times, each appended. Logits are rounded to 6 significant digits.
No "tokenize" records: llama.cpp cannot open a gptj file, and the vocabulary
is the tiny BPE the other fixtures check.

The environment (only to regenerate this fixture; the tests need none of
it): huggingface.co is not needed, all from PyPI, on the CPU:
  python3 -m venv --system-site-packages /tmp/gptj-venv
  /tmp/gptj-venv/bin/pip install "transformers<4.50" flax==0.7.0 \\
      jax==0.4.13 jaxlib==0.4.13 "numpy<2" gguf
(transformers 4.49.0 was used: its Flax models need flax <= 0.7 and jax
<= 0.4.13; the system site packages give make_tiny_reference.py's
imports).

Usage: /tmp/gptj-venv/bin/python tests/reference/arch/make_gptj_reference.py
(writes gptj_reference.json next to this script; run make_gptj_models.py first)
"""
import sys
from pathlib import Path

import gguf
import jax
import jax.numpy as jnp
import numpy as np
import transformers
from flax.traverse_util import flatten_dict, unflatten_dict
from transformers import FlaxGPTJForCausalLM, GPTJConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_arch_reference import CHUNKS, N_CTX, N_TOKENS, SINGLE_AT  # noqa: E402
from make_gptj_models import MODELS, SEED  # noqa: E402
from make_tiny_reference import GREEDY_N, GREEDY_PROMPT, rounded, write_references  # noqa: E402


def load(path):
    """The FlaxGPTJForCausalLM of the gptj file at `path` and its bos id."""
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
    return model, key("tokenizer.ggml.bos_token_id")


def all_logits(model, tokens, n_ctx):
    """The logits {len(tokens), n_vocab} of one forward pass over `tokens`,
    padded to n_ctx so that jax compiles one shape per model (a causal
    model's logits do not depend on the padding after them)."""
    if not hasattr(model, "forward"):
        model.forward = jax.jit(lambda params, ids: model(ids, params=params).logits)
    ids = np.zeros((1, n_ctx), dtype=np.int32)
    ids[0, :len(tokens)] = tokens
    return np.asarray(model.forward(model.params, ids)[0, :len(tokens)], dtype=np.float32)


def reference(path, seq_seed, n_ctx, n_tokens, single_at, chunks):
    """make_tiny_reference.py's reference() (the same sequence and points),
    from transformers' GPT-J, with its greedy continuation."""
    model, bos = load(path)
    n_vocab = model.config.vocab_size
    rng = np.random.default_rng(seq_seed)  # as make_tiny_reference.py's reference()
    tokens = [bos] + [int(t) for t in rng.integers(0, n_vocab, size=n_tokens - 1)]
    logits = all_logits(model, tokens, n_ctx)
    points = [("batch", n_tokens)] + [("single", n) for n in single_at] + [("chunks", n) for n in np.cumsum(chunks)]
    records = [{"mode": mode, "n_past": int(n), "logits": rounded(logits[n - 1])} for mode, n in points]
    seq = tokens[:GREEDY_PROMPT]
    for _ in range(GREEDY_N):
        seq.append(int(np.argmax(all_logits(model, seq, n_ctx)[-1])))
    greedy = {"n_prompt": GREEDY_PROMPT, "tokens": seq[GREEDY_PROMPT:]}
    return {"n_vocab": n_vocab, "tokens": tokens, "records": records, "greedy": greedy}


if __name__ == "__main__":
    write_references(MODELS, SEED, __file__, "gptj_reference.json",
                     lambda spec: {"arch": spec["arch"], "type": spec["type"]}, N_CTX, N_TOKENS, SINGLE_AT, CHUNKS,
                     make=reference,
                     generator=f"transformers {transformers.__version__} FlaxGPTJForCausalLM "
                               f"(jax {jax.__version__}, CPU, float32)")
