#!/usr/bin/env python3
"""Reference logits and greedy tokens from llama.cpp (through
llama-cpp-python) for the falcon models of make_falcon_models.py (one and two
norms per block, multi-query and grouped attention), checked by
tests/test_tiny_models.c against the tolerance of each weight type.

As make_classic_reference.py (make_arch_reference.py's sequence length of 90
tokens, record points and chunks, n_ctx 128), into falcon_reference.json: a
file of its own, so that regenerating one fixture leaves the others' records
as they were. Each model also gets llama.cpp's greedy continuation
("greedy": make_tiny_reference.py's GREEDY_N tokens after the sequence's
first GREEDY_PROMPT, each fed back), which hearth's must equal token for
token.

Usage: python3 tests/reference/arch/make_falcon_reference.py
(needs llama-cpp-python==0.3.36; writes falcon_reference.json next to this script)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_arch_reference import CHUNKS, N_CTX, N_TOKENS, SINGLE_AT  # noqa: E402
from make_falcon_models import MODELS, SEED  # noqa: E402
from make_tiny_reference import add_greedy, write_references  # noqa: E402

if __name__ == "__main__":
    write_references(MODELS, SEED, __file__, "falcon_reference.json",
                     lambda spec: {"arch": "falcon", "type": spec["type"]}, N_CTX, N_TOKENS, SINGLE_AT, CHUNKS)
    add_greedy(Path(__file__).resolve().parent / "falcon_reference.json", N_CTX)
