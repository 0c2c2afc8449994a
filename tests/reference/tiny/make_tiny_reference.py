#!/usr/bin/env python3
"""Reference logits and tokenizations from llama.cpp (through llama-cpp-python)
for the tiny models of this folder (written by make_tiny_models.py), checked by
tests/test_tiny_models.c.

For each model, one fixed sequence of N_TOKENS token ids (bos, then ids drawn
from the vocabulary with a fixed seed) is decoded three ways, each from an empty
KV cache, and the full logits of the last token of a decode call are recorded
(rounded to 6 significant digits):
  - "batch":  the whole sequence in one call (one ubatch: n_batch = n_ctx);
  - "single": one token per call; logits after tokens 1, 8, 16 and 24;
  - "chunks": calls of CHUNKS tokens (a batch that starts at a position > 0).
Logits come from llama_get_logits_ith(ctx, -1): llm.scores is only filled with
logits_all. flash_attn is off (llama-cpp-python's default), so llama.cpp's
attention is the plain path with an F16 KV cache.

It also records llama.cpp's tokenization of a few strings (add_special true,
parse_special as given).

Usage: python3 tests/reference/tiny/make_tiny_reference.py
(needs llama-cpp-python==0.3.36; writes tiny_reference.json next to this script)
"""
import json
from pathlib import Path

import llama_cpp
import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version

from make_tiny_models import MODELS, SEED

N_CTX = 64
N_TOKENS = 24
SINGLE_AT = [1, 8, 16, 24]  # record after this many tokens, decoded one at a time
CHUNKS = [10, 14]           # sums to N_TOKENS

TEXTS = [
    # (text, parse_special)
    ("hello world, the quick brown fox jumps over the lazy dog!", False),
    ("There is hearth: 12345 things\n\n  thought   through\ttabs?", False),
    ("the cat<|endoftext|>sat on the mat", True),
    ("the cat<|endoftext|>sat on the mat", False),
]


def last_logits(llm):
    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


def rounded(x):
    return [float(f"{v:.6g}") for v in x]


def reference(path, seq_seed, n_ctx=N_CTX, n_tokens=N_TOKENS, single_at=SINGLE_AT, chunks=CHUNKS):
    """The records and tokenizations of one model (../arch/make_references.py
    calls it with its own sequence length and record points)."""
    llm = Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, n_threads=2, logits_all=False,
                flash_attn=False, verbose=False)
    n_vocab = llm.n_vocab()
    bos = llm.token_bos()
    rng = np.random.default_rng(seq_seed)
    tokens = [bos] + [int(t) for t in rng.integers(0, n_vocab, size=n_tokens - 1)]
    records = []

    llm.reset()
    llm.eval(tokens)
    records.append({"mode": "batch", "n_past": n_tokens, "logits": rounded(last_logits(llm))})

    llm.reset()
    for i, t in enumerate(tokens):
        llm.eval([t])
        if i + 1 in single_at:
            records.append({"mode": "single", "n_past": i + 1, "logits": rounded(last_logits(llm))})

    llm.reset()
    done = 0
    for c in chunks:
        llm.eval(tokens[done:done + c])
        done += c
        records.append({"mode": "chunks", "n_past": done, "logits": rounded(last_logits(llm))})

    texts = [{"text": text, "parse_special": special,
              "ids": llm.tokenize(text.encode(), add_bos=True, special=special)} for text, special in TEXTS]
    return {"n_vocab": n_vocab, "tokens": tokens, "records": records, "tokenize": texts}


def write_references(models, seed, script, out_name, fields, n_ctx=N_CTX, n_tokens=N_TOKENS, single_at=SINGLE_AT,
                     chunks=CHUNKS, make=reference, generator=f"llama-cpp-python {llama_cpp_version}"):
    """The scripts' main: make() (llama.cpp's reference() unless another
    implementation's, which `generator` then names) of each model of
    `models` in the folder of `script` (model i's sequence drawn from seed +
    1000 + i), with the fields(spec) keys, into OUT_NAME there."""
    here = Path(script).resolve().parent
    models_out = []
    for i, spec in enumerate(models):
        path = here / f"{spec['name']}.gguf"
        ref = make(path, seed + 1000 + i, n_ctx, n_tokens, single_at, chunks)
        models_out.append({"file": f"reference/{here.name}/{path.name}", **fields(spec), **ref})
        print(f"{path.name}: {len(ref['records'])} logit records")
    out = here / out_name
    doc = {"generator": f"{generator}, {Path(script).name}",
           "n_ctx": n_ctx, "chunks": chunks, "models": models_out}
    out.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)")



GREEDY_PROMPT = 21  # the first tokens of a model's sequence, then
GREEDY_N = 32       # llama.cpp's greedy tokens after them


def greedy(path, prompt, n_ctx):
    """llama.cpp's argmax after `prompt`, GREEDY_N times, each fed back."""
    llm = Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, n_threads=2, logits_all=False,
                flash_attn=False, verbose=False)
    llm.eval(prompt)
    out = []
    for _ in range(GREEDY_N):
        out.append(int(np.argmax(last_logits(llm))))
        llm.eval(out[-1:])
    return out


def add_greedy(out, n_ctx):
    """Adds to every model of the fixture OUT (a path) llama.cpp's greedy
    continuation ("greedy": GREEDY_N tokens after the first GREEDY_PROMPT of
    its sequence, at the model's own n_ctx or else n_ctx), which hearth's must
    equal token for token, and writes the fixture back."""
    doc = json.loads(out.read_text())
    for model in doc["models"]:
        model["greedy"] = {"n_prompt": GREEDY_PROMPT,
                           "tokens": greedy(out.parents[2] / model["file"], model["tokens"][:GREEDY_PROMPT],
                                            model.get("n_ctx", n_ctx))}
    out.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {out} with greedy continuations")

if __name__ == "__main__":
    write_references(MODELS, SEED, __file__, "tiny_reference.json", lambda spec: {"type": spec["type"]})
