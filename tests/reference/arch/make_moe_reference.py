#!/usr/bin/env python3
"""Reference logits from llama.cpp (through llama-cpp-python) for the
Mixtral-style models of make_moe_models.py (llama with a mixture of
experts: softmax routing, top-2 of 4, renormalized weights), checked by
tests/test_tiny_models.c. As make_arch_reference.py (the same sequence
length, record points and chunks, n_ctx 128), into moe_reference.json: a
file of its own, so that regenerating one fixture leaves the others'
records as they were. Each model also gets llama.cpp's greedy continuation
(make_tiny_reference.greedy: GREEDY_N tokens after the sequence's first
GREEDY_PROMPT, each fed back), which hearth's must equal token for token.

Usage: python3 tests/reference/arch/make_moe_reference.py
(needs llama-cpp-python==0.3.36; writes moe_reference.json next to this script)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_arch_reference import CHUNKS, N_CTX, N_TOKENS, SINGLE_AT  # noqa: E402
from make_moe_models import MODELS, SEED  # noqa: E402
from make_tiny_reference import add_greedy, write_references  # noqa: E402

if __name__ == "__main__":
    write_references(MODELS, SEED, __file__, "moe_reference.json",
                     lambda spec: {"arch": "llama", "type": spec["type"]}, N_CTX, N_TOKENS, SINGLE_AT, CHUNKS)
    add_greedy(Path(__file__).resolve().parent / "moe_reference.json", N_CTX)
