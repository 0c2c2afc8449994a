#!/usr/bin/env python3
"""Whether idle connections deny service: for each `hearth` binary given,
starts `hearth serve MODEL --port 0`, opens N TCP connections that send
nothing, then times one ordinary request (POST /v1/completions, 4 tokens)
on a new connection, and prints what it got.

Usage: python3 bench/idle_connections.py [--model PATH] [--idle 600] BINARY...
"""
import argparse
import http.client
import json
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def serve(binary, model, log):
    proc = subprocess.Popen([binary, "serve", model, "--port", "0"], stderr=log, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"listening on https?://[^ ]*:(\d+) ", Path(log.name).read_text())
        if m:
            port = int(m.group(1))
            while time.monotonic() < deadline:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    conn.request("GET", "/health")
                    if conn.getresponse().status == 200:
                        return proc, port
                except OSError:
                    pass
                time.sleep(0.1)
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{binary} did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--idle", type=int, default=600)
    args = ap.parse_args()
    for binary in args.binaries:
        with tempfile.NamedTemporaryFile("w") as log:
            proc, port = serve(binary, args.model, log)
            idle = []
            for _ in range(args.idle):
                try:
                    idle.append(socket.create_connection(("127.0.0.1", port), timeout=2))
                except OSError:
                    pass
            time.sleep(1)
            t0 = time.monotonic()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("POST", "/v1/completions", body=json.dumps({"prompt": "Hello", "max_tokens": 4}),
                             headers={"Content-Type": "application/json"})
                got = f"HTTP {conn.getresponse().status} in {time.monotonic() - t0:.2f} s"
            except OSError as e:
                got = f"failed after {time.monotonic() - t0:.2f} s: {e!r}"
            print(f"{binary}: {len(idle)} of {args.idle} idle connections open; a new request: {got}")
            for sock in idle:
                sock.close()
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
