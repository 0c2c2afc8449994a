#!/usr/bin/env python3
"""Writes tests/reference/infill/infill_reference.json: llama-server's
answers to POST /infill on Qwen2.5-Coder 0.5B Instruct Q4_K_M
(models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf, scripts/fetch_model.sh
qwen2), greedy (temperature 0, top_k 1), for the CASES below: each case's
content and tokens_evaluated (the FIM prompt's length, as llama.cpp's
format_prompt_infill builds it). tests/python/test_llama_native_server.py
checks hearth serve's /infill against it.

Usage: python3 tests/reference/infill/make_infill_reference.py [--llama-server PATH] [--model FILE]
llama-server is llama-cpp-python 0.3.36's vendored llama.cpp
(ggml-org/llama.cpp@0c1e57098), built by bench/build_llama_cpp.sh
llama-server (CPU, native), run as
  llama-server -m MODEL -c 4096 -np 1 -b 2048 -ub 512 -t 2 --port PORT
(a slot of 4096 tokens and llama-server's default batch of 2048, which
hearth serve -c 4096 --parallel 1 matches). The fixture is committed, so
nothing here runs in CI."""
import argparse
import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
N_PREDICT = 24
CASES = [
    {"name": "function_body",
     "input_prefix": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
     "input_suffix": "\n\nprint(fibonacci(10))\n"},
    {"name": "with_prompt",
     "input_prefix": "import math\n\ndef circle_area(r):\n", "input_suffix": "\n", "prompt": "    return"},
    {"name": "with_extra_files",
     "input_prefix": "from shapes import Square\n\ns = Square(3)\nprint(", "input_suffix": ")\n",
     "input_extra": [{"filename": "shapes.py",
                      "text": "class Square:\n    def __init__(self, side):\n        self.side = side\n\n"
                              "    def area(self):\n        return self.side * self.side\n"}]},
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/infill", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-server", default=None)
    ap.add_argument("--model", default=str(ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    args = ap.parse_args()
    server = args.llama_server or subprocess.run([str(ROOT / "bench" / "build_llama_cpp.sh"), "llama-server"],
                                                 capture_output=True, text=True, check=True).stdout.strip()
    port = free_port()
    cmd = [server, "-m", args.model, "-c", "4096", "-np", "1", "-b", "2048", "-ub", "512", "-t", "2",
           "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except Exception:
                time.sleep(0.5)
        out = []
        for case in CASES:
            body = {k: v for k, v in case.items() if k != "name"}
            res = post(port, {**body, "n_predict": N_PREDICT, "temperature": 0, "top_k": 1, "cache_prompt": False})
            out.append({**case, "content": res["content"], "tokens_evaluated": res["tokens_evaluated"],
                        "tokens_predicted": res["tokens_predicted"]})
    finally:
        proc.terminate()
        proc.wait()
    shown = ["llama-server", "-m", Path(args.model).name] + cmd[3:-2]  # no local paths or port
    doc = {"description": __doc__.split("\n\n")[0], "command": " ".join(shown),
           "n_predict": N_PREDICT, "cases": out}
    (Path(__file__).parent / "infill_reference.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
