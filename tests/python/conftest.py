"""Shared fixtures for the Python-side tests: the built `hearth` binary, the
default model, the reference fixtures folder, and `hearth serve` servers."""
import http.client
import os
import re
import signal
import ssl
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def hearth_bin():
    path = Path(os.environ.get("HEARTH_BIN", ROOT / "build" / "hearth"))
    if not path.exists():
        pytest.fail(f"{path} not found: build first (scripts/build.sh) or set HEARTH_BIN")
    return path


@pytest.fixture(scope="session")
def model_path():
    path = Path(os.environ.get("HEARTH_MODEL", ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    if not path.exists():
        pytest.skip(f"{path} not found: run scripts/fetch_model.sh")
    return path


def grammar_check_bin():
    """tests/grammar_check (the grammar and JSON-schema matcher as a program)
    of $HEARTH_BUILD_DIR (default build/); the test skips without it."""
    path = Path(os.environ.get("HEARTH_BUILD_DIR", ROOT / "build")) / "tests" / "grammar_check"
    if not path.exists():
        pytest.skip(f"{path} not found: build the grammar_check target (tests/CMakeLists.txt) or set HEARTH_BUILD_DIR")
    return path


@pytest.fixture(scope="session")
def qwen_path():
    """Qwen2.5-Coder 0.5B Instruct: a chat template that takes tools (Hermes-style <tool_call>)."""
    path = Path(os.environ.get("HEARTH_MODEL_QWEN2", ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    if not path.exists():
        pytest.skip(f"{path} not found: run scripts/fetch_model.sh qwen2")
    return path


@pytest.fixture(scope="session")
def run_hearth(hearth_bin):
    """Runs hearth with arguments; never hangs (60 s limit)."""
    def run(*args, **kw):
        return subprocess.run([str(hearth_bin), *map(str, args)], capture_output=True, timeout=60, **kw)
    return run


class Server:
    """A `hearth serve` process on a free loopback port (--port 0: the port is
    read from its "listening on" line), ready once /health answers 200. Its
    stderr goes to a file, so a chatty server never blocks on a full pipe;
    env: its environment (None: the tests')."""

    def __init__(self, binary, model, args, log_path, env=None):
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen([str(binary), "serve", *([str(model)] if model else []), "--port", "0",
                                      *map(str, args)],
                                     stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        self.port = None
        deadline = time.monotonic() + 60
        while self.port is None:
            match = re.search(rb"listening on (https?)://[^ ]*:(\d+) ", log_path.read_bytes())
            if match:
                self.scheme, self.port = match.group(1).decode(), int(match.group(2))
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"hearth serve did not start: {self.stderr()}")
            else:
                time.sleep(0.02)
        self.url = f"{self.scheme}://127.0.0.1:{self.port}"
        while self.health()[0] != 200:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"hearth serve did not become ready: {self.stderr()}")
            time.sleep(0.02)

    def health(self):
        try:
            conn = (http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10,
                                                context=ssl._create_unverified_context())
                    if self.scheme == "https" else http.client.HTTPConnection("127.0.0.1", self.port, timeout=10))
            conn.request("GET", "/health")
            res = conn.getresponse()
            return res.status, res.read()
        except OSError:
            return None, b""

    def stderr(self):
        return self.log_path.read_bytes().decode(errors="replace")

    def rss_kib(self):
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Signals the server and returns its exit status (it must exit by itself)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                pytest.fail(f"hearth serve did not exit {timeout} s after signal {sig}")
        self.log.close()
        return self.proc.returncode


@pytest.fixture(scope="session")
def server_bin(hearth_bin):
    """The binary serving: $HEARTH_SERVER_BIN (e.g. the ASan build's), else hearth_bin."""
    path = Path(os.environ.get("HEARTH_SERVER_BIN", hearth_bin))
    if not path.exists():
        pytest.fail(f"{path} not found: build first or fix HEARTH_SERVER_BIN")
    return path


@pytest.fixture(scope="session")
def start_server(server_bin, model_path, tmp_path_factory):
    """start_server(*args, model=None, env=None) runs `hearth serve MODEL --port 0 *args`
    (MODEL: the default model unless given; "" for none, as with --models-dir) and waits until it is ready; every server still running at the end is stopped and must
    exit 0. env: the server's environment (None: the tests')."""
    servers = []

    def start(*args, model=None, env=None):
        log = tmp_path_factory.mktemp("serve") / "stderr.txt"
        server = Server(server_bin, model_path if model is None else model, args, log, env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.proc.poll() is None:
            rc = server.stop()
            assert rc == 0, f"hearth serve exited {rc}: {server.stderr()[-4000:]}"
