#!/usr/bin/env python3
"""Reference logits from llama.cpp (through llama-cpp-python) for the YaRN
models of make_arch_models.py (YARN_MODELS: YaRN rope scaling read from the
GGUF's rope.scaling.* keys, normal and NEOX pairs), checked by
tests/test_tiny_models.c against its YARN_MAX_DIFF.

As make_arch_reference.py (the same sequence length, record points and
chunks), into yarn_reference.json. A file of its own because it was made on
another machine than arch_reference.json (AVX2, not AVX-512: llama.cpp's
F32/F16 products add in another order there, see test_tiny_models.c).

Usage: python3 tests/reference/arch/make_yarn_reference.py
(needs llama-cpp-python==0.3.36; writes yarn_reference.json next to this script)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_arch_models import SEED, YARN_MODELS  # noqa: E402
from make_arch_reference import CHUNKS, N_CTX, N_TOKENS, SINGLE_AT  # noqa: E402
from make_tiny_reference import write_references  # noqa: E402

if __name__ == "__main__":
    write_references(YARN_MODELS, SEED + 100, __file__, "yarn_reference.json",
                     lambda spec: {"arch": spec["arch"], "type": spec["type"]}, N_CTX, N_TOKENS, SINGLE_AT, CHUNKS)
