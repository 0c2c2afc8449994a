#!/usr/bin/env python3
"""Reference logits from llama.cpp (through llama-cpp-python) for the
LayerNorm families of make_classic_models.py (gpt2, starcoder2, gptneox),
checked by tests/test_tiny_models.c against ARCH_MAX_DIFF.

As make_arch_reference.py (the same sequence length of 90 tokens, record
points and chunks, n_ctx 128), into classic_reference.json: a file of its
own, so that regenerating one fixture leaves the others' records as they
were.

Usage: python3 tests/reference/arch/make_classic_reference.py
(needs llama-cpp-python==0.3.36; writes classic_reference.json next to this script)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_arch_reference import CHUNKS, N_CTX, N_TOKENS, SINGLE_AT  # noqa: E402
from make_classic_models import MODELS, SEED  # noqa: E402
from make_tiny_reference import write_references  # noqa: E402

if __name__ == "__main__":
    write_references(MODELS, SEED, __file__, "classic_reference.json",
                     lambda spec: {"arch": spec["arch"], "type": spec["type"]}, N_CTX, N_TOKENS, SINGLE_AT, CHUNKS)
