#!/usr/bin/env python3
"""Reference logits from llama.cpp (through llama-cpp-python) for the phi3
models of make_arch_models.py (PHI3_MODELS: fused QKV and gate/up,
LongRoPE's long and short frequency factors with the attention factor,
partial rotary), checked by tests/test_tiny_models.c against ARCH_MAX_DIFF.

As make_arch_reference.py (the same sequence length, record points and
chunks, n_ctx 128, which llama.cpp pads to 256 before it chooses the long or
short factors), into phi3_reference.json: a file of its own, so that
regenerating one fixture leaves the other's records as they were. Each
model also gets llama.cpp's greedy continuation ("greedy": GREEDY_N tokens
after the sequence's first GREEDY_PROMPT, each fed back), which hearth's
must equal token for token. The last model is run again at n_ctx LONG_N_CTX
(a model entry of its own with "n_ctx"): past its original context of 256,
so there it takes the long factors.

Usage: python3 tests/reference/arch/make_phi3_reference.py
(needs llama-cpp-python==0.3.36; writes phi3_reference.json next to this script)
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tiny"))
from make_arch_models import PHI3_MODELS, SEED  # noqa: E402
from make_arch_reference import CHUNKS, N_CTX, N_TOKENS, SINGLE_AT  # noqa: E402
from make_tiny_reference import add_greedy, reference, write_references  # noqa: E402

LONG_N_CTX = 512


if __name__ == "__main__":
    write_references(PHI3_MODELS, SEED + 300, __file__, "phi3_reference.json",
                     lambda spec: {"arch": spec["arch"], "type": spec["type"]}, N_CTX, N_TOKENS, SINGLE_AT, CHUNKS)
    here = Path(__file__).resolve().parent
    out = here / "phi3_reference.json"
    doc = json.loads(out.read_text())
    spec, last = PHI3_MODELS[-1], doc["models"][-1]
    doc["models"].append({"file": last["file"], "arch": spec["arch"], "type": spec["type"], "n_ctx": LONG_N_CTX,
                          **reference(here / f"{spec['name']}.gguf", SEED + 300 + 1000 + len(PHI3_MODELS),
                                      LONG_N_CTX, N_TOKENS, SINGLE_AT, CHUNKS)})
    out.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    add_greedy(out, N_CTX)
