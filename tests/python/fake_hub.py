"""A model registry on loopback for the tests of `hearth pull` (issue 14):
Hugging Face's file listing (/api/models/OWNER/REPO/tree/main, with each
file's LFS sha256) and files (/OWNER/REPO/resolve/main/FILE, with Range,
ETag and X-Linked-Etag as the Hub sends them), and an Ollama registry
(/v2/NS/NAME/manifests/TAG, /v2/NS/NAME/blobs/sha256:HEX). Faults are set
per file: `cut` (close the connection after N bytes of the body, `times`
times), `stall` (send N bytes, then nothing for `seconds`), `flip` (one
byte of the body changed), `status` (answer 401/403/404 ...), `rate`
(bytes per second). `gets` counts the GETs of each file and `ranges` keeps
the Range headers received."""
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeHub:
    def __init__(self):
        self.hf = {}       # "OWNER/REPO" -> {path: bytes}
        self.ollama = {}   # "NS/NAME:TAG" -> bytes
        self.faults = {}   # url path -> dict
        self.gets = {}     # url path -> count
        self.ranges = []   # (url path, Range header)
        self.auth = []     # (url path, Authorization header)
        self.shas = {}     # id(data) -> sha256 hex (big files are hashed once)
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                hub.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def sha(self, data):
        if id(data) not in self.shas:
            self.shas[id(data)] = hashlib.sha256(data).hexdigest()
        return self.shas[id(data)]

    def add_hf(self, repo, path, data):
        """data: bytes, or an mmap of a big file (served without copying)."""
        self.hf.setdefault(repo, {})[path] = data
        return f"/{repo}/resolve/main/{path}"

    def add_ollama(self, name, tag, data, ns="library"):
        self.ollama[f"{ns}/{name}:{tag}"] = data
        return f"/v2/{ns}/{name}/blobs/sha256:{self.sha(data)}"

    # ---------------------------------------------------------------- serving

    def handle(self, h):
        path = h.path.split("?")[0]
        with self.lock:
            self.gets[path] = self.gets.get(path, 0) + 1
            if h.headers.get("Range"):
                self.ranges.append((path, h.headers["Range"]))
            if h.headers.get("Authorization"):
                self.auth.append((path, h.headers["Authorization"]))
        fault = self.faults.get(path, {})
        if fault.get("status"):
            return self.reply(h, fault["status"], b'{"error": "refused"}', "application/json")
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and parts[4:6] == ["tree", "main"]:
            files = self.hf.get("/".join(parts[2:4]))
            if files is None:
                return self.reply(h, 404, b'{"error": "Repository not found"}', "application/json")
            listing = [{"type": "file", "oid": self.sha(d)[:40], "size": len(d), "path": p,
                        "lfs": {"oid": self.sha(d), "size": len(d), "pointerSize": 134}}
                       for p, d in sorted(files.items())]
            listing.append({"type": "file", "oid": "0" * 40, "size": 9, "path": "README.md"})
            return self.reply(h, 200, json.dumps(listing).encode(), "application/json")
        if len(parts) >= 5 and parts[2:4] == ["resolve", "main"]:
            data = self.hf.get("/".join(parts[:2]), {}).get("/".join(parts[4:]))
            if data is None:
                return self.reply(h, 404, b"Entry not found", "text/plain")
            return self.send_file(h, data, fault)
        if parts[:1] == ["v2"] and len(parts) == 5 and parts[3] == "manifests":
            data = self.ollama.get(f"{parts[1]}/{parts[2]}:{parts[4]}")
            if data is None:
                return self.reply(h, 404, b'{"errors": [{"code": "MANIFEST_UNKNOWN"}]}', "application/json")
            manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                        "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                                   "digest": "sha256:" + "1" * 64, "size": 2},
                        "layers": [{"mediaType": "application/vnd.ollama.image.template",
                                    "digest": "sha256:" + "2" * 64, "size": 5},
                                   {"mediaType": "application/vnd.ollama.image.model",
                                    "digest": "sha256:" + self.sha(data), "size": len(data)}]}
            return self.reply(h, 200, json.dumps(manifest).encode(), manifest["mediaType"])
        if parts[:1] == ["v2"] and len(parts) == 5 and parts[3] == "blobs":
            for key, data in self.ollama.items():
                if parts[4] == "sha256:" + self.sha(data):
                    return self.send_file(h, data, fault)
        return self.reply(h, 404, b"not found", "text/plain")

    def reply(self, h, status, body, ctype):
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def send_file(self, h, data, fault):
        sha = self.sha(data)
        if fault.get("flip") is not None:
            i = fault["flip"]
            data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
        start = 0
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                h.send_response(416)
                h.send_header("Content-Range", f"bytes */{len(data)}")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
            h.send_response(206)
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            h.send_response(200)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(len(data) - start))
        h.send_header("ETag", f'"{sha}"')
        h.send_header("X-Linked-Etag", f'"{sha}"')
        h.send_header("Accept-Ranges", "bytes")
        h.end_headers()
        body = data[start:]
        cut = fault.get("cut")
        if cut is not None and fault.get("times", 1) > 0:
            fault["times"] = fault.get("times", 1) - 1
            h.wfile.write(body[:max(0, cut - start)])
            h.wfile.flush()
            h.close_connection = True
            return
        stall = fault.get("stall")
        if stall is not None and fault.get("times", 1) > 0:
            fault["times"] = fault.get("times", 1) - 1
            h.wfile.write(body[:stall])
            h.wfile.flush()
            time.sleep(fault.get("seconds", 5))
            h.close_connection = True
            return
        rate = fault.get("rate")
        step = 16384
        for i in range(0, len(body), step):
            try:
                h.wfile.write(body[i:i + step])
            except OSError:
                return
            if rate:
                time.sleep(step / rate)
