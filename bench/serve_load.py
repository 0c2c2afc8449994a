#!/usr/bin/env python3
"""Load test of an OpenAI-compatible completion server (hearth serve,
llama.cpp's llama-server, ...): throughput and latency of streamed generation
with 1, 4, 16 ... clients at once.

For each concurrency level C, C client threads start together; each sends
--requests-per-client requests one after another, each on a new loopback HTTP
connection, to POST /v1/completions (or /v1/chat/completions with --chat) with
`stream: true`, `temperature: 0`, `max_tokens: N` and
`stream_options: {include_usage: true}`. Prompts come from the fixed list
PROMPTS below: client i's request j sends PROMPTS[(i + j) % len(PROMPTS)], so
clients running together send different prompts. The prompts are openings to
continue, chosen so that SmolLM2-135M-Instruct (greedy) writes 128 tokens
after each without reaching its end-of-text token. One warm-up request runs
first and is not counted.

Generation may stop before N tokens (at the end-of-text token: forcing
`ignore_eos` is not portable), so the tokens counted are those generated: the
final usage's completion_tokens, or the number of non-empty content chunks
when the server sends no usage. Per level:
  tok/s      all requests' generated tokens / the level's wall time (first
             request sent -> last response ended)
  TTFT       time to first token: request sent -> first non-empty content
             chunk received; median and 90th percentile over requests
  ITL        inter-token latency: the gaps between consecutive non-empty
             content chunks, median over all requests (a chunk is one token
             on llama-server; a server sending several per chunk shows larger
             gaps, and tok/chunk in --json says so); --json also gives the
             longest gap (itl_max_ms), where stalls show
  errors     requests that failed (HTTP status other than 200, an error event,
             a broken connection or no [DONE]); their tokens are not counted

Usage: python3 bench/serve_load.py URL [--concurrency 1 4 16] [--n-predict 64]
           [--requests-per-client 4] [--api-key KEY] [--model NAME] [--chat]
           [--extra JSON] [--json FILE|-]
   URL: the server's base, e.g. http://127.0.0.1:8080
Python standard library only.
"""
import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse

PROMPTS = [
    "The capital of France is",
    "Here is a short poem about the sea:\n\n",
    "Photosynthesis is the process by which",
    "Ten facts about the Moon:\n1.",
    "Once upon a time, in a small village by the mountains,",
    "The three primary colors are",
    "def fibonacci(n):",
    "To make pancakes, you need",
    "A virus differs from a bacterium in that",
    "Translate to French: The weather is nice today.",
    "The quick brown fox",
    "Summarize the plot of Romeo and Juliet in two sentences.",
    "Spiders have eight legs, and they",
    "Here are five tips for learning a new language:",
    "In 1969, the first humans landed on",
    "Describe your ideal weekend.",
]


class Server:
    """Where and how to send requests: base URL, API key, model name, endpoint."""

    def __init__(self, url, api_key=None, model=None, chat=False, extra=None, timeout=600):
        u = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        self.host, self.port, self.base = u.hostname, u.port or 80, u.path.rstrip("/")
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.chat, self.extra, self.timeout = chat, extra or {}, timeout
        self.model = model if model is not None else self.first_model()

    def get(self, path):
        """(status, body) of GET path."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            conn.request("GET", self.base + path, headers=self.headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def first_model(self):
        """The first id of GET /v1/models, or None (then no "model" is sent)."""
        try:
            status, body = self.get("/v1/models")
            return json.loads(body)["data"][0]["id"] if status == 200 else None
        except (OSError, ValueError, KeyError, IndexError, http.client.HTTPException):
            return None

    def body(self, prompt, n_predict):
        b = {"stream": True, "temperature": 0, "max_tokens": n_predict,
             "stream_options": {"include_usage": True}}
        if self.chat:
            b["messages"] = [{"role": "user", "content": prompt}]
        else:
            b["prompt"] = prompt
        if self.model is not None:
            b["model"] = self.model
        b.update(self.extra)
        return json.dumps(b).encode()


def chunk_text(event, chat):
    """The generated text of one streamed event ('' if none)."""
    choices = event.get("choices") or []
    if not choices:
        return ""
    c = choices[0]
    return ((c.get("delta") or {}).get("content") or "") if chat else (c.get("text") or "")


def one_request(server, prompt, n_predict):
    """Sends one streamed request. Returns a dict: ok, error, tokens, chunks,
    ttft (s), gaps (s between content chunks)."""
    r = {"ok": False, "error": None, "tokens": 0, "chunks": 0, "ttft": None, "gaps": []}
    path = server.base + ("/v1/chat/completions" if server.chat else "/v1/completions")
    conn = http.client.HTTPConnection(server.host, server.port, timeout=server.timeout)
    usage, last, done = None, None, False
    try:
        t0 = time.perf_counter()
        conn.request("POST", path, body=server.body(prompt, n_predict), headers=server.headers)
        resp = conn.getresponse()
        if resp.status != 200:
            r["error"] = f"HTTP {resp.status}: {resp.read(300).decode(errors='replace')}"
            return r
        while line := resp.readline():
            line = line.strip()
            if not line.startswith(b"data:"):
                continue  # blank separators, comments, event: lines
            data = line[5:].strip()
            if data == b"[DONE]":
                done = True
                resp.read()  # the rest of the body (the last chunk), so the connection closes cleanly
                break
            event = json.loads(data)
            if "error" in event:
                r["error"] = f"error event: {json.dumps(event['error'])[:300]}"
                return r
            if event.get("usage"):
                usage = event["usage"]
            if chunk_text(event, server.chat):
                now = time.perf_counter()
                if last is None:
                    r["ttft"] = now - t0
                else:
                    r["gaps"].append(now - last)
                last = now
                r["chunks"] += 1
        if not done:
            r["error"] = "stream ended without [DONE]"
            return r
        r["tokens"] = usage["completion_tokens"] if usage and "completion_tokens" in usage else r["chunks"]
        r["ok"] = True
    except (OSError, ValueError, http.client.HTTPException) as e:
        r["error"] = f"{type(e).__name__}: {e}"
    finally:
        conn.close()
    return r


def quantile(xs, q):
    """The q-quantile of xs (linear interpolation), None if empty."""
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    i = int(k)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (k - i)


def run_level(server, concurrency, n_predict, requests_per_client):
    """Runs one concurrency level; returns its summary (times in ms)."""
    results = [[] for _ in range(concurrency)]
    start = threading.Barrier(concurrency + 1)

    def client(i):
        start.wait()
        for j in range(requests_per_client):
            results[i].append(one_request(server, PROMPTS[(i + j) % len(PROMPTS)], n_predict))

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(concurrency)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    reqs = [r for rs in results for r in rs]
    ok = [r for r in reqs if r["ok"]]
    tokens = sum(r["tokens"] for r in ok)
    chunks = sum(r["chunks"] for r in ok)
    ttft = [r["ttft"] for r in ok if r["ttft"] is not None]
    gaps = [g for r in ok for g in r["gaps"]]
    ms = lambda x: None if x is None else 1000 * x  # noqa: E731
    return {"concurrency": concurrency, "requests": len(reqs), "errors": len(reqs) - len(ok),
            "error_examples": sorted({r["error"] for r in reqs if r["error"]})[:3],
            "tokens": tokens, "tok_per_chunk": tokens / chunks if chunks else None,
            "wall_s": wall, "tok_s": tokens / wall,
            "ttft_p50_ms": ms(quantile(ttft, 0.5)), "ttft_p90_ms": ms(quantile(ttft, 0.9)),
            "itl_p50_ms": ms(quantile(gaps, 0.5)), "itl_max_ms": ms(max(gaps, default=None))}


def run(server, levels, n_predict, requests_per_client, warmup=True, log=sys.stderr):
    """Runs every level in turn (after one warm-up request); returns their summaries."""
    if warmup:
        w = one_request(server, PROMPTS[0], min(n_predict, 8))
        if not w["ok"]:
            print(f"warm-up request failed: {w['error']}", file=log)
    out = []
    for c in levels:
        print(f"concurrency {c}: {c * requests_per_client} requests ...", file=log, flush=True)
        out.append(run_level(server, c, n_predict, requests_per_client))
        for e in out[-1]["error_examples"]:
            print(f"  error: {e}", file=log)
    return out


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def print_table(levels, file=sys.stdout):
    print("| concurrency | requests | errors | tokens | wall s | tok/s | TTFT p50 ms | TTFT p90 ms | ITL p50 ms |",
          file=file)
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", file=file)
    for r in levels:
        print(f"| {r['concurrency']} | {r['requests']} | {r['errors']} | {r['tokens']} | {r['wall_s']:.2f} | "
              f"{r['tok_s']:.1f} | {fmt(r['ttft_p50_ms'])} | {fmt(r['ttft_p90_ms'])} | {fmt(r['itl_p50_ms'])} |",
              file=file)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url", help="the server's base URL, e.g. http://127.0.0.1:8080")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--n-predict", type=int, default=64, help="max_tokens of each request (64)")
    ap.add_argument("--requests-per-client", type=int, default=4, help="requests each client sends in turn (4)")
    ap.add_argument("--api-key", default=None, help="sent as Authorization: Bearer KEY")
    ap.add_argument("--model", default=None, help='the "model" field (default: the first of GET /v1/models, if any)')
    ap.add_argument("--chat", action="store_true", help="POST /v1/chat/completions, the prompt as one user message")
    ap.add_argument("--extra", type=json.loads, default=None, metavar="JSON",
                    help="fields merged into every request body, e.g. '{\"cache_prompt\": false}'")
    ap.add_argument("--no-warmup", action="store_true", help="skip the warm-up request")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the summaries as JSON to FILE (- = stdout)")
    args = ap.parse_args()
    server = Server(args.url, args.api_key, args.model, args.chat, args.extra)
    levels = run(server, args.concurrency, args.n_predict, args.requests_per_client, not args.no_warmup)
    print(f"{args.url} ({'chat/completions' if args.chat else 'completions'}, model {server.model}): "
          f"n_predict {args.n_predict}, {args.requests_per_client} requests per client, temperature 0, streamed")
    print_table(levels)
    if args.json == "-":
        json.dump(levels, sys.stdout, indent=1)
        print()
    elif args.json:
        with open(args.json, "w") as f:
            json.dump(levels, f, indent=1)
    sys.exit(1 if any(r["errors"] for r in levels) else 0)


if __name__ == "__main__":
    main()
