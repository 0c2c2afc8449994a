"""Ollama's POST /api/pull and DELETE /api/delete on `hearth serve`, with the
official `ollama` client, against the loopback Ollama registry of
fake_hub.py serving SmolLM2's GGUF: a streamed pull's progress lines in
Ollama's order (totals and completed bytes growing, ending in success), a
whole pull, the pulled model served at once (/api/tags; chat and generate
greedy text equal to the same file served directly), delete (the store's file
gone, no longer listed, refused while a stream holds it), the refusals (an
unknown model: the registry's 404; a path; a model outside the store), and
a client leaving mid-pull: the server stays healthy and the next pull
resumes the partial file."""
import http.client
import json
import os
import time

import pytest

from conftest import ROOT
from fake_hub import FakeHub

ollama = pytest.importorskip("ollama")

MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
GREEDY = {"temperature": 0, "num_predict": 16, "repeat_penalty": 1.0}
STEPS = ["pulling manifest", "verifying sha256 digest", "writing manifest", "success"]


@pytest.fixture(scope="module")
def data():
    if not MODEL.exists():
        pytest.skip(f"{MODEL} not found: run scripts/fetch_model.sh")
    return MODEL.read_bytes()


@pytest.fixture(scope="module")
def hub(data):
    h = FakeHub()
    h.blob = h.add_ollama("smol", "latest", data)
    for name, tag in (("smol2", "v1"), ("busy", "latest")):
        h.add_ollama(name, tag, data)
    h.slow_blob = h.add_ollama("slow", "latest", data[:8 << 20])  # another digest, for its own fault
    yield h
    h.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return tmp_path_factory.mktemp("pull")


@pytest.fixture(scope="module")
def server(start_server, hub, store):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEARTH_", "HF_", "OLLAMA_", "XDG_"))}
    env.update(HOME=str(store / "home"), HEARTH_MODELS=str(store / "store"), HF_ENDPOINT=hub.url,
               OLLAMA_REGISTRY=hub.url, OLLAMA_MODELS=str(store / "ollama"), HEARTH_RETRIES="0")
    return start_server("--alias", "smollm2", "--strict-model", "-c", "2048", env=env)


@pytest.fixture(scope="module")
def client(server):
    return ollama.Client(host=server.url)


def stored(store, name, tag="latest"):
    return store / "store" / "ollama" / "library" / name / f"{tag}.gguf"


def tags(client):
    return [m.model for m in client.list().models]


def chat(client, model):
    return client.chat(model=model, messages=[{"role": "user", "content": "Name a color."}],
                       options=GREEDY).message.content


def test_streamed_pull_reports_progress_then_the_model_serves(client, hub, store, data):
    hub.faults[hub.blob] = {"rate": 40e6}  # about 2.5 s: many reports
    try:
        parts = list(client.pull("smol", stream=True))
    finally:
        hub.faults.pop(hub.blob)
    statuses = [p.status for p in parts]
    progress = parts[1:-3]
    assert statuses == STEPS[:1] + ["pulling smol:latest"] * len(progress) + STEPS[1:], statuses
    assert len(progress) >= 3, statuses
    assert all(p.total == len(data) for p in progress)
    done = [p.completed for p in progress]
    assert done == sorted(done) and done[0] < len(data) and done[-1] == len(data), done
    assert stored(store, "smol").read_bytes() == data
    assert "smol" in tags(client)
    assert chat(client, "smol") == chat(client, "smollm2") != ""
    g = [client.generate(model=m, prompt="Once upon a time", options=GREEDY).response for m in ("smol", "smollm2")]
    assert g[0] == g[1] != ""


def test_pulling_a_model_the_store_has_reports_it_whole(client, data):
    parts = list(client.pull("smol", stream=True))
    assert [p.status for p in parts] == STEPS[:1] + ["pulling smol"] + STEPS[1:]
    assert parts[1].total == parts[1].completed == len(data)


def test_whole_pull_then_delete(client, store, data):
    assert client.pull("smol2:v1", stream=False).status == "success"
    assert stored(store, "smol2", "v1").stat().st_size == len(data)
    assert "smol2:v1" in tags(client)
    assert chat(client, "smol2:v1") == chat(client, "smollm2")
    assert client.delete("smol2:v1").status == "success"
    assert not stored(store, "smol2", "v1").exists()
    assert "smol2:v1" not in tags(client)
    with pytest.raises(ollama.ResponseError) as e:
        chat(client, "smol2:v1")
    assert e.value.status_code == 404


def test_delete_waits_for_the_streams_that_hold_the_model(server, client, store):
    assert client.pull("busy", stream=False).status == "success"
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/api/generate", json.dumps(
        {"model": "busy", "prompt": "Tell a long story.", "options": {"num_predict": 2000}}))
    res = conn.getresponse()
    assert res.status == 200 and json.loads(res.readline())["model"] == "busy"
    with pytest.raises(ollama.ResponseError) as e:
        client.delete("busy")
    assert e.value.status_code == 409 and "in use" in str(e.value)
    assert stored(store, "busy").exists()
    conn.close()
    deadline = time.monotonic() + 10
    while True:  # the stream lets go of its model once the server sees the client gone
        try:
            assert client.delete("busy").status == "success"
            break
        except ollama.ResponseError as err:
            assert err.status_code == 409 and time.monotonic() < deadline
            time.sleep(0.1)
    assert not stored(store, "busy").exists() and "busy" not in tags(client)


def test_refusals(server, client):
    with pytest.raises(ollama.ResponseError) as e:
        client.pull("nosuch", stream=False)
    assert e.value.status_code == 404 and "404" in str(e.value)
    with pytest.raises(ollama.ResponseError) as e:
        list(client.pull("nosuch:7b", stream=True))
    assert "404" in str(e.value)
    with pytest.raises(ollama.ResponseError) as e:
        client.pull("/etc/passwd", stream=False)
    assert e.value.status_code == 400 and "path" in str(e.value)
    with pytest.raises(ollama.ResponseError) as e:
        client.delete("nosuch")
    assert e.value.status_code == 404 and "model 'nosuch' not found" in str(e.value)
    with pytest.raises(ollama.ResponseError) as e:
        client.delete("smollm2")  # the file given on the command line
    assert e.value.status_code == 400 and "not in hearth's store" in str(e.value)
    assert MODEL.exists()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/api/pull", json.dumps({"stream": False}))
    res = conn.getresponse()
    assert res.status == 400 and "'model' is required" in json.loads(res.read())["error"]


def test_a_client_leaving_mid_pull_cancels_it_and_the_next_pull_resumes(server, client, hub, store):
    hub.faults[hub.slow_blob] = {"rate": 1e6}
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/api/pull", json.dumps({"model": "slow"}))
    res = conn.getresponse()
    assert res.status == 200
    while True:
        line = json.loads(res.readline())
        if line.get("completed", 0) > 0:
            break
    conn.close()
    partial = stored(store, "slow").with_name("latest.gguf.partial")
    size, deadline = -1, time.monotonic() + 10
    while size != partial.stat().st_size:  # the download stops
        size = partial.stat().st_size
        time.sleep(0.5)
        assert time.monotonic() < deadline
    assert 0 < size < 8 << 20
    assert server.health()[0] == 200
    hub.faults.pop(hub.slow_blob)
    assert client.pull("slow", stream=False).status == "success"
    assert (hub.slow_blob, f"bytes={size}-") in hub.ranges
    assert stored(store, "slow").stat().st_size == 8 << 20
    assert "slow" in tags(client) and chat(client, "smollm2") != ""
