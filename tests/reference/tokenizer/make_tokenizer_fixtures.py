#!/usr/bin/env python3
"""Writes smollm2.json, the reference token ids that tests/test_tokenizer.c
compares hearth's byte-level BPE tokenizer against.

The reference is llama.cpp, through llama-cpp-python (vocab_only load of the
default model). For every string of corpus.json (texts, and byte strings given
in hex that are not valid UTF-8) it records the ids with add_special=true under
parse_special true and false, llama.cpp's detokenization of the plain ids, and
whether the input is valid UTF-8 (then it must round-trip).

To cover the other pre-tokenizers with the same vocabulary, it also writes
vocab-only copies of the model whose tokenizer.ggml.pre is changed (gpt-2,
llama-bpe, qwen2, default) and records their ids; the C test builds the same
vocabularies in memory.

Finally it records a checksum of token_to_piece over the whole vocabulary
(special true and false), so every piece is checked without storing them.

Usage: python3 make_tokenizer_fixtures.py [model.gguf]
"""
import ctypes
import json
import os
import sys
import tempfile

import gguf
import llama_cpp
from llama_cpp import Llama

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODEL = os.path.join(HERE, "..", "..", "..", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
PRE_VARIANTS = ["gpt-2", "llama-bpe", "qwen2", "default"]


def load_vocab(path):
    return Llama(model_path=path, vocab_only=True, verbose=False)


def piece(vocab, token, special):
    buf = ctypes.create_string_buffer(1024)
    n = llama_cpp.llama_token_to_piece(vocab, token, buf, len(buf), 0, special)
    assert 0 <= n <= len(buf), n
    return buf.raw[:n]


def detokenize(vocab, ids):
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    size = 64 + 16 * len(ids)
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, size, False, False)
        if n >= 0:
            return buf.raw[:n]
        size = -n


def fnv1a64(data, h):
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def pieces_checksum(vocab, n_tokens, special):
    """FNV-1a 64 over (4-byte little-endian length, bytes) of every piece."""
    h = 0xCBF29CE484222325
    for t in range(n_tokens):
        p = piece(vocab, t, special)
        h = fnv1a64(len(p).to_bytes(4, "little") + p, h)
    return "%016x" % h


def corpus_inputs():
    with open(os.path.join(HERE, "corpus.json"), encoding="utf-8") as f:
        corpus = json.load(f)
    inputs = [t.encode("utf-8") for t in corpus["texts"]]
    inputs += [bytes.fromhex(h) for h in corpus["byte_strings_hex"]]
    return inputs


def is_utf8(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def tokenize_all(llm, inputs):
    return [{"special": llm.tokenize(b, add_bos=True, special=True),
             "plain": llm.tokenize(b, add_bos=True, special=False)} for b in inputs]


def write_pre_variant(reader, pre, path):
    """A vocab-only copy of the model with tokenizer.ggml.pre set to `pre`."""
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(path, arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        value = pre if field.name == gguf.Keys.Tokenizer.PRE else field.contents()
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, field.types[0], sub_type=sub_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()


def main():
    model = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL)
    inputs = corpus_inputs()
    llm = load_vocab(model)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    n_tokens = llama_cpp.llama_vocab_n_tokens(vocab)

    cases = tokenize_all(llm, inputs)
    for case, data in zip(cases, inputs):
        case["hex"] = data.hex()
        case["utf8"] = is_utf8(data)
        case["detok"] = detokenize(vocab, case["plain"]).hex()

    fixture = {
        "generator": "make_tokenizer_fixtures.py, llama-cpp-python " + llama_cpp.__version__,
        "model": os.path.basename(model),
        "n_tokens": n_tokens,
        "bos": llama_cpp.llama_vocab_bos(vocab),
        "eos": llama_cpp.llama_vocab_eos(vocab),
        "eot": llama_cpp.llama_vocab_eot(vocab),
        "eog": [t for t in range(n_tokens) if llama_cpp.llama_vocab_is_eog(vocab, t)],
        "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
        "add_eos": bool(llama_cpp.llama_vocab_get_add_eos(vocab)),
        "pieces_fnv1a64": {"special": pieces_checksum(vocab, n_tokens, True),
                           "plain": pieces_checksum(vocab, n_tokens, False)},
        "cases": cases,
        "pre_variants": {},
    }

    reader = gguf.GGUFReader(model)
    with tempfile.TemporaryDirectory() as tmp:
        for pre in PRE_VARIANTS:
            path = os.path.join(tmp, "vocab-%s.gguf" % pre)
            write_pre_variant(reader, pre, path)
            variant = load_vocab(path)
            fixture["pre_variants"][pre] = tokenize_all(variant, inputs)
            del variant

    out = os.path.join(HERE, "smollm2.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s: %d inputs, %d pre variants" % (out, len(inputs), len(PRE_VARIANTS)))


if __name__ == "__main__":
    main()
