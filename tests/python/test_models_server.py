"""Many models in one server (issue 42, item 5): `hearth serve --models-dir
DIR` or several MODELs; a request's `model` picks one and loads it on demand;
--models-max unloads the least recently used idle one; keep_alive (Ollama's,
per request, and --keep-alive) unloads idle models; a model that fails to
load answers its requests with its reason while the others serve; concurrent
first requests share one load."""
import http.client
import json
import os
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOL = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA = "gemma-3-270m-q4_k_m.gguf"


def post(srv, path, body, timeout=120):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, json.loads(data) if data else None


def get(srv, path):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    conn.request("GET", path)
    res = conn.getresponse()
    data = json.loads(res.read())
    conn.close()
    assert res.status == 200, data
    return data


def chat(srv, model, text="The capital of France is", **kw):
    """A greedy completion (these files need no chat template for it)."""
    return post(srv, "/v1/completions", {"model": model, "prompt": text, "max_tokens": 12, "temperature": 0, **kw})


def loaded(srv):
    return sorted(m["name"] for m in get(srv, "/api/ps")["models"])


def log_count(srv, text):
    return srv.stderr().count(text)


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory, model_path):
    gemma = ROOT / "models" / GEMMA
    if not gemma.exists():
        pytest.skip(f"{gemma} not found: run scripts/fetch_model.sh gemma3")
    folder = tmp_path_factory.mktemp("models")
    os.symlink(model_path, folder / SMOL)
    os.symlink(gemma, folder / GEMMA)
    (folder / "broken.gguf").write_bytes(b"GGUF" + os.urandom(64))  # a cut download
    (folder / "notes.txt").write_text("not a model\n")
    return folder


@pytest.fixture(scope="module")
def single_answers(start_server, model_path):
    """Each model's greedy answer from a server of its own (the reference)."""
    answers = {}
    for name, path in ((SMOL, model_path), (GEMMA, ROOT / "models" / GEMMA)):
        srv = start_server(model=path)
        status, body = chat(srv, name)
        assert status == 200, body
        answers[name] = body["choices"][0]["text"]
        assert srv.stop() == 0
    return answers


def test_the_models_of_a_folder_are_listed_and_load_on_demand(start_server, models_dir, single_answers):
    srv = start_server("--models-dir", models_dir, model="")
    listed = sorted(m["id"] for m in get(srv, "/v1/models")["data"])
    assert listed == sorted([SMOL, GEMMA, "broken.gguf"])
    assert sorted(m["name"] for m in get(srv, "/api/tags")["models"]) == listed
    assert loaded(srv) == []  # nothing loads before a request names it
    for name in (SMOL, GEMMA, SMOL):
        status, body = chat(srv, name)
        assert status == 200, body
        assert body["model"] == name
        assert body["choices"][0]["text"] == single_answers[name]
    assert loaded(srv) == sorted([SMOL, GEMMA])
    assert log_count(srv, f"hearth: loaded {SMOL}") == 1  # kept loaded between its requests
    # a name without ".gguf" names the file too; an unknown one is a 404
    status, body = chat(srv, SMOL[:-5])
    assert status == 200 and body["model"] == SMOL
    status, body = chat(srv, "no-such-model")
    assert status == 404 and body["error"]["code"] == "model_not_found", body
    status, body = post(srv, "/api/chat", {"model": "no-such-model", "messages": [], "stream": False})
    assert status == 404 and "no-such-model" in body["error"], body


def test_a_model_that_fails_to_load_leaves_the_others_serving(start_server, models_dir):
    srv = start_server("--models-dir", models_dir, model="")
    for _ in range(2):  # each request tries again, and is told why
        status, body = chat(srv, "broken.gguf")
        assert status == 500 and body["error"]["code"] == "model_load_failed", body
        assert "broken.gguf" in body["error"]["message"]
    status, body = chat(srv, SMOL)
    assert status == 200, body
    assert loaded(srv) == [SMOL]


def test_models_max_one_switches_models_with_right_answers(start_server, models_dir, single_answers):
    srv = start_server("--models-dir", models_dir, "--models-max", "1", model="")
    order = [SMOL, GEMMA, SMOL, GEMMA]
    for name in order:
        status, body = chat(srv, name)
        assert status == 200, body
        assert body["choices"][0]["text"] == single_answers[name]
        assert loaded(srv) == [name]
    assert log_count(srv, f"hearth: loaded {SMOL}") == 2 and log_count(srv, f"hearth: loaded {GEMMA}") == 2
    assert log_count(srv, f"hearth: unloaded {SMOL}") == 2 and log_count(srv, f"hearth: unloaded {GEMMA}") == 1


def test_concurrent_first_requests_share_one_load(start_server, models_dir):
    srv = start_server("--models-dir", models_dir, "--parallel", "4", model="")
    results = []

    def one():
        results.append(chat(srv, GEMMA))

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(status == 200 for status, _ in results), results
    assert all(body["choices"][0]["text"] for _, body in results)  # (batched: not the single answer to the bit)
    assert log_count(srv, f"hearth: loaded {GEMMA}") == 1


def test_keep_alive_unloads_idle_models(start_server, models_dir):
    srv = start_server("--models-dir", models_dir, "--keep-alive", "2s", model="")
    assert chat(srv, SMOL)[0] == 200
    status, body = post(srv, "/api/generate", {"model": GEMMA, "prompt": "Hi", "raw": True, "stream": False,
                                               "options": {"num_predict": 2}, "keep_alive": 0})
    assert status == 200, body
    assert loaded(srv) == [SMOL]  # keep_alive 0: unloaded as soon as its request ended
    ps = get(srv, "/api/ps")["models"][0]
    assert ps["expires_at"] < "2300"  # an expiry, not "never"
    deadline = time.monotonic() + 10
    while loaded(srv) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert loaded(srv) == []  # idle past --keep-alive
    # Ollama's load request: a generate without a prompt loads the model and keeps it (-1: forever)
    status, body = post(srv, "/api/generate", {"model": GEMMA, "keep_alive": -1, "stream": False})
    assert status == 200 and body["done"], body
    time.sleep(3)
    assert loaded(srv) == [GEMMA]


def test_several_model_arguments(start_server, model_path):
    gemma = ROOT / "models" / GEMMA
    if not gemma.exists():
        pytest.skip(f"{gemma} not found")
    srv = start_server(gemma, model=model_path)  # MODEL first, then another
    assert sorted(m["id"] for m in get(srv, "/v1/models")["data"]) == sorted([SMOL, GEMMA])
    status, body = post(srv, "/v1/completions", {"prompt": "Once", "max_tokens": 2})  # no model: the first
    assert status == 200 and body["model"] == SMOL, body


def test_bad_model_options_are_refused(run_hearth, model_path, tmp_path):
    empty = run_hearth("serve", "--models-dir", tmp_path, "--port", "0")
    assert empty.returncode == 2 and b"needs a MODEL" in empty.stderr
    other = tmp_path / "other"
    other.mkdir()
    os.symlink(ROOT / "models" / GEMMA, other / SMOL)  # another file of the same name
    two = run_hearth("serve", model_path, other / SMOL, "--port", "0")
    assert two.returncode == 2 and b"two models are named" in two.stderr
    alias = run_hearth("serve", model_path, ROOT / "models" / GEMMA, "--alias", "x", "--port", "0")
    assert alias.returncode == 2 and b"--alias names one model" in alias.stderr
    keep = run_hearth("serve", model_path, "--keep-alive", "soon", "--port", "0")
    assert keep.returncode == 2 and b"--keep-alive" in keep.stderr


def test_embedding_clients_beside_generating_ones(start_server, model_path, single_answers):
    """Issue 41: 16 embedding clients on an embedding model while generation
    runs on another model of the same server: the vectors are llama.cpp's and
    the greedy text is the one the generation model gives alone."""
    np = pytest.importorskip("numpy")
    minilm = ROOT / "models" / "all-minilm-l6-v2-f16.gguf"
    if not minilm.exists():
        pytest.skip(f"{minilm} not found: run scripts/fetch_model.sh minilm")
    cases = json.loads((ROOT / "tests" / "reference" / "embedding_reference.json").read_text())["texts"]
    srv = start_server(minilm, "--parallel", "4", model=model_path)
    texts, worst, errors, lock = [], [1.0], [], threading.Lock()

    def generate():
        for _ in range(4):
            status, body = chat(srv, SMOL)
            with lock:
                texts.append(body["choices"][0]["text"] if status == 200 else f"error {status}: {body}")

    def embed(k):
        for i in range(6):
            case = cases[(i + k) % len(cases)]
            status, body = post(srv, "/v1/embeddings", {"model": minilm.name, "input": case["text"]})
            if status != 200:
                with lock:
                    errors.append(body)
                continue
            got = np.asarray(body["data"][0]["embedding"])
            want = np.asarray(case["llama_cpp"]) / np.linalg.norm(case["llama_cpp"])
            with lock:
                worst[0] = min(worst[0], float(got @ want))

    threads = [threading.Thread(target=generate) for _ in range(2)]
    threads += [threading.Thread(target=embed, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert worst[0] >= 0.9999, worst
    assert texts == [single_answers[SMOL]] * 8, texts
    assert loaded(srv) == sorted([SMOL, minilm.name])


def test_a_model_that_does_not_fit_is_refused_with_the_bytes_needed(start_server, models_dir):
    # a KV cache of 16M tokens per model: hearth_context_memory_plan's figure is over MemAvailable
    srv = start_server("--models-dir", models_dir, "-c", "16000000", "--parallel", "1", model="")
    status, body = chat(srv, SMOL)
    assert status == 500 and body["error"]["code"] == "model_load_failed", body
    message = body["error"]["message"]
    assert "GiB" in message and "available" in message and "lower n_ctx" in message, message
    assert loaded(srv) == []
