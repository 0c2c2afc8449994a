#!/usr/bin/env python3
"""Writes gemma3.json, the reference that tests/test_tokenizer_spm.c compares
hearth's SentencePiece tokenizer (tokenizer.ggml.model = "llama") against.

The reference is llama.cpp, through llama-cpp-python (vocab_only load of
Gemma 3 270M, models/gemma-3-270m-q4_k_m.gguf, fetched by
scripts/fetch_model.sh). For every string of corpus.json (the same corpus as
the BPE fixture) it records the ids with add_special=true under parse_special
true and false, llama.cpp's detokenization (llama_detokenize, special tokens
not rendered) of the plain ids, and of the parse_special ids with special
tokens rendered.

Gemma's file sets tokenizer.ggml.add_space_prefix = false; llama.cpp's default
for SentencePiece is true (Llama 2, Mistral). To cover that path with the same
vocabulary, it also writes a vocab-only copy with the key set to true and
records its ids, with add_special true and (for parse_special true) false;
the C test builds the same vocabulary in memory.

Finally it records a checksum of token_to_piece over the whole vocabulary
(special true and false), so every piece is checked without storing them.

Usage: python3 make_spm_fixtures.py [gemma-3-270m-q4_k_m.gguf]
"""
import ctypes
import json
import os
import sys
import tempfile

import gguf
import llama_cpp

from make_tokenizer_fixtures import HERE, corpus_inputs, is_utf8, load_vocab, pieces_checksum

DEFAULT_MODEL = os.path.join(HERE, "..", "..", "..", "models", "gemma-3-270m-q4_k_m.gguf")
ADD_SPACE_PREFIX = gguf.Keys.Tokenizer.ADD_PREFIX  # "tokenizer.ggml.add_space_prefix"


def detokenize(vocab, ids, remove_special, unparse_special):
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    size = 64 + 16 * len(ids)
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, size, remove_special, unparse_special)
        if n >= 0:
            return buf.raw[:n]
        size = -n


def write_prefix_variant(reader, path):
    """A vocab-only copy of the model with add_space_prefix = true."""
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(path, arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        value = True if field.name == ADD_SPACE_PREFIX else field.contents()
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

    cases = []
    for data in inputs:
        special = llm.tokenize(data, add_bos=True, special=True)
        plain = llm.tokenize(data, add_bos=True, special=False)
        cases.append({"hex": data.hex(), "utf8": is_utf8(data), "special": special, "plain": plain,
                      "detok": detokenize(vocab, plain, False, False).hex(),
                      "detok_special": detokenize(vocab, special, False, True).hex()})

    reader = gguf.GGUFReader(model)
    prefix = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "vocab-space-prefix.gguf")
        write_prefix_variant(reader, path)
        variant = load_vocab(path)
        for data in inputs:
            prefix.append({"special": variant.tokenize(data, add_bos=True, special=True),
                           "plain": variant.tokenize(data, add_bos=True, special=False),
                           "no_bos": variant.tokenize(data, add_bos=False, special=True)})
        del variant

    fixture = {
        "generator": "make_spm_fixtures.py, llama-cpp-python " + llama_cpp.__version__,
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
        "space_prefix": prefix,
    }
    out = os.path.join(HERE, "gemma3.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s: %d inputs" % (out, len(inputs)))


if __name__ == "__main__":
    main()
