#!/usr/bin/env python3
"""Time to compile a JSON schema: hearth_json_schema_to_grammar (schema ->
GBNF) and hearth_grammar_check (GBNF parsed and checked, as a sampler
compiles it), through ctypes over a shared libhearth, for each pydantic model
of tests/python/test_structured.py. The median of --reps runs each, in
microseconds, as a markdown table with the machine and date (the token trie
a model's first grammar builds is not part of it: once per model).

Usage: python3 bench/schema_compile_time.py [--lib build-shared/libhearth.so] [--reps 200]
Needs: the shared library (cmake -B build-shared -DBUILD_SHARED_LIBS=ON; target hearth_shared).
"""
import argparse
import ctypes
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "bench"))
from compare_serve import machine  # noqa: E402
from test_structured import MODELS  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default=str(ROOT / "build-shared" / "libhearth.so"))
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    lib = ctypes.CDLL(args.lib)
    lib.hearth_json_schema_to_grammar.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hearth_grammar_check.argtypes = [ctypes.c_char_p]
    lib.hearth_grammar_free_text.argtypes = [ctypes.c_void_p]
    lib.hearth_last_error.restype = ctypes.c_char_p
    print("# Time to compile a JSON schema\n")
    print(f"- machine: {machine()}")
    print(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"- command: python3 bench/schema_compile_time.py --reps {args.reps}; medians, one thread\n")
    print("| schema (pydantic model) | schema bytes | GBNF bytes | to GBNF µs | parse + check µs | total µs |")
    print("| --- | --- | --- | --- | --- | --- |")
    for model, _ in MODELS:
        schema = json.dumps(model.model_json_schema()).encode()
        out = ctypes.c_void_p()
        conv, check = [], []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            if lib.hearth_json_schema_to_grammar(schema, ctypes.byref(out)) != 0:
                sys.exit(f"{model.__name__}: {lib.hearth_last_error().decode()}")
            t1 = time.perf_counter()
            gbnf = ctypes.string_at(out.value)
            t2 = time.perf_counter()
            if lib.hearth_grammar_check(gbnf) != 0:
                sys.exit(f"{model.__name__}: {lib.hearth_last_error().decode()}")
            t3 = time.perf_counter()
            lib.hearth_grammar_free_text(out)
            conv.append((t1 - t0) * 1e6)
            check.append((t3 - t2) * 1e6)
        c, k = statistics.median(conv), statistics.median(check)
        print(f"| {model.__name__} | {len(schema)} | {len(gbnf)} | {c:.0f} | {k:.0f} | {c + k:.0f} |")


if __name__ == "__main__":
    main()
