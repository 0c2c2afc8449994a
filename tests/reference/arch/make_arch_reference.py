#!/usr/bin/env python3
"""Reference logits from llama.cpp (through llama-cpp-python) for the models
of make_arch_models.py, checked by tests/test_tiny_models.c.

As tests/reference/tiny/make_tiny_reference.py (whose reference() this
uses), with a sequence of N_TOKENS = 90 tokens, longer than every model's
sliding window and than 64 positions: the whole sequence in one batch; one
token per call with records after 1, 21, 64 and 90 tokens; and two chunks
of 40 and 50 (the second batch starts at position 40, with its window
reaching back before it). flash_attn is off and the SWA cache full-size
(llama-cpp-python's default swa_full), so llama.cpp's attention is the plain
path over the F16 cache with masked positions at -inf.

Usage: python3 tests/reference/arch/make_arch_reference.py
(needs llama-cpp-python==0.3.36; writes arch_reference.json next to this script)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_arch_models import MODELS, SEED  # noqa: E402
from make_tiny_reference import write_references  # noqa: E402

N_CTX = 128
N_TOKENS = 90
SINGLE_AT = [1, 21, 64, 90]
CHUNKS = [40, 50]  # sums to N_TOKENS


if __name__ == "__main__":
    write_references(MODELS, SEED, __file__, "arch_reference.json",
                     lambda spec: {"arch": spec["arch"], "type": spec["type"]}, N_CTX, N_TOKENS, SINGLE_AT, CHUNKS)
