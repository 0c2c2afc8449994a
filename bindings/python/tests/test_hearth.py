"""Tests of the installed `hearth` package (scripts/test.sh runs them from a
wheel installed in a fresh virtual environment, outside the source tree).

Environment:
  HEARTH_TEST_MODEL      SmolLM2-135M-Instruct.Q4_1.gguf (the default model)
  HEARTH_TEST_REFERENCE  tests/reference/greedy/smollm2.json: llama.cpp's greedy
                         tokens and text on that model (llama-cpp-python 0.3.36,
                         made by tests/reference/greedy/make_greedy_fixtures.py)
  HEARTH_BIN             the `hearth` command, to compare with `hearth run` (optional)
  HEARTH_TEST_TINY       a tiny random llama model (tests/reference/arch/llama3-f32.gguf),
                         for offloading to an OpenCL device such as PoCL's (optional)
  HEARTH_TEST_INSTALLED  1: the package must come from site-packages
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import hearth

MODEL = os.environ.get("HEARTH_TEST_MODEL", "")
REFERENCE = os.environ.get("HEARTH_TEST_REFERENCE", "")
needs_model = pytest.mark.skipif(not os.path.isfile(MODEL), reason="HEARTH_TEST_MODEL is not set to a model file")


@pytest.fixture(scope="module")
def model():
    if not os.path.isfile(MODEL):
        pytest.skip("HEARTH_TEST_MODEL is not set to a model file")
    # llama.cpp's order of operations (no flash attention): its greedy text, bit for bit
    with hearth.Model(MODEL, n_ctx=512, flash_attn=False) as m:
        yield m


@pytest.fixture(scope="module")
def cases():
    if not os.path.isfile(REFERENCE):
        pytest.skip("HEARTH_TEST_REFERENCE is not set to the llama.cpp fixture")
    with open(REFERENCE) as f:
        return json.load(f)["cases"]


def greedy(**kw):
    return dict(temperature=0, **kw)


def test_installed_package():
    if os.environ.get("HEARTH_TEST_INSTALLED") != "1":
        pytest.skip("run from the source tree")
    assert "site-packages" in hearth.__file__, hearth.__file__
    assert hearth._hearth.__file__.endswith(".abi3.so")
    here = os.path.dirname(os.path.abspath(hearth.__file__))
    assert os.path.isfile(os.path.join(here, "py.typed"))


def test_probes_without_gpu():
    """A process told to use no GPU says so; the real probes agree with each other."""
    code = "import hearth; print(hearth.supports_gpu_offload(), hearth.gpu_devices(), hearth.system_info())"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "HEARTH_FORCE_CPU": "1"},
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("False [] hearth "), out
    assert "gpu: none (HEARTH_FORCE_CPU is set" in out, out
    devices = hearth.gpu_devices()
    assert not hearth.supports_gpu_offload() or devices
    for d in devices:
        assert d["total_bytes"] >= d["free_bytes"] > 0 and d["name"]
        assert d["id"].startswith(d["backend"]) and d["backend_label"].lower() == d["backend"]
    assert hearth.system_info().startswith(f"hearth {hearth.__version__}; cpu: ")


def test_offload_to_a_named_device():
    """devices= picks where layers go: every layer on the first OpenCL device
    (PoCL's CPU device in CI) gives the CPU's greedy tokens."""
    tiny = os.environ.get("HEARTH_TEST_TINY", "")
    ocl = [d for d in hearth.gpu_devices() if d["id"].startswith("opencl")]
    if not os.path.isfile(tiny) or not ocl:
        pytest.skip("no OpenCL device or HEARTH_TEST_TINY unset")
    with hearth.Model(tiny, n_ctx=64) as cpu, hearth.Model(tiny, n_ctx=64, n_gpu_layers=-1, devices=ocl[0]["id"]) as dev:
        assert cpu.gpu_layers == 0 and dev.gpu_layers == dev.n_layer + 1
        prompt = [1, 5, 9, 13]
        assert dev.generate(prompt, max_tokens=8, **greedy()) == cpu.generate(prompt, max_tokens=8, **greedy())
    with pytest.raises(hearth.InvalidArgumentError, match="opencl"):
        hearth.Model(tiny, n_gpu_layers=-1, devices="nosuchdevice0")
    with hearth.Model(tiny, n_ctx=64, n_gpu_layers="auto", devices=ocl[0]["id"]) as dev:
        assert dev.gpu_layers == dev.n_layer + 1  # a tiny model fits whole
    with pytest.raises(hearth.InvalidArgumentError, match="n_gpu_layers"):
        hearth.Model(tiny, n_gpu_layers="all")


@needs_model
def test_gpu_layers_auto_leaves_room_for_the_context(monkeypatch):
    """n_gpu_layers="auto" on an OpenCL device limited to 400 MiB: fewer of
    SmolLM2's layers for a longer context (n_ctx * n_seq_max tokens), as
    the library plans them (15 and 8 of 31 in test_opencl_offload)."""
    ocl = [d for d in hearth.gpu_devices() if d["id"].startswith("opencl")]
    if not ocl:
        pytest.skip("no OpenCL device")
    monkeypatch.setenv("HEARTH_OPENCL_MEM_LIMIT", "400")
    layers = []
    for n_ctx in (4096, 8192):
        with hearth.Model(MODEL, n_ctx=n_ctx, n_seq_max=2, n_gpu_layers="auto", devices=ocl[0]["id"]) as m:
            layers.append(m.gpu_layers)
            assert m.generate([1, 5, 9], max_tokens=2, **greedy())  # the context fits beside them
    assert 0 < layers[1] < layers[0] <= 31, layers


@needs_model
def test_model_facts(model):
    assert (model.n_layer, model.n_embd, model.n_vocab, model.n_ctx_train) == (30, 576, 49152, 8192)
    assert model.n_ctx == 512 and model.n_seq_max == 4 and model.gpu_layers == 0
    assert "<|im_start|>" in model.chat_template


@needs_model
def test_metadata_equals_gguf_py(model):
    """Every non-array key with its value as text, as gguf-py reads the file."""
    gguf = pytest.importorskip("gguf")
    want = {}
    for name, field in gguf.GGUFReader(MODEL).fields.items():
        if name.startswith("GGUF.") or field.types[0] == gguf.GGUFValueType.ARRAY:
            continue
        value = field.contents()
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, float):
            value = f"{value:f}"
        want[name] = str(value)
    assert model.metadata == want


@needs_model
def test_tokenize_equals_llama_cpp(model, cases):
    for c in cases:
        assert model.tokenize(c["prompt"]) == c["prompt_ids"]
    assert model.detokenize(model.tokenize("Hello, world! ünïcode")) == "Hello, world! ünïcode"
    assert model.tokenize("<|im_start|>", parse_special=True) == [1]
    assert len(model.tokenize("<|im_start|>", parse_special=False)) > 1


EOG = (0, 2)  # SmolLM2's <|endoftext|> and <|im_end|>


def reference_text(model, case):
    """llama.cpp's greedy text up to its first end-of-generation token (the
    fixture ran 64 tokens past it)."""
    tokens = [s["token"] for s in case["steps"]]
    cut = next((i for i, t in enumerate(tokens) if t in EOG), None)
    if cut is None:
        return case["text"]
    text = model.detokenize(tokens[:cut])
    assert case["text"].startswith(text)
    return text


@needs_model
def test_greedy_equals_llama_cpp(model, cases):
    """llama.cpp's 64 greedy tokens' text for every reference prompt."""
    for c in cases:
        assert model.generate(c["prompt"], max_tokens=64, **greedy()) == reference_text(model, c), c["prompt"]


@needs_model
def test_read_into_memory_same_text(model, cases):
    """use_mmap=False (the file read into huge pages) and use_mlock: llama.cpp's
    greedy text, as the mapped model."""
    c = cases[0]
    with hearth.Model(MODEL, n_ctx=512, flash_attn=False, use_mmap=False, use_mlock=True) as m:
        assert m.generate(c["prompt"], max_tokens=64, **greedy()) == reference_text(model, c)


@needs_model
@pytest.mark.parametrize("flash_attn", ["off", "on"])
def test_greedy_equals_hearth_run(cases, flash_attn):
    exe = os.environ.get("HEARTH_BIN")
    if not exe:
        pytest.skip("HEARTH_BIN is not set")
    prompt = cases[1]["prompt"]
    out = subprocess.run([exe, "run", MODEL, prompt, "-n", "64", "--temp", "0", "-fa", flash_attn],
                         capture_output=True, check=True)
    with hearth.Model(MODEL, n_ctx=512, flash_attn=flash_attn) as m:
        assert m.generate(prompt, max_tokens=64, **greedy()) == out.stdout.decode()
    with pytest.raises(hearth.InvalidArgumentError, match="flash_attn"):
        hearth.Model(MODEL, flash_attn="sometimes")


@needs_model
def test_kv_cache_types(model):
    """type_k / type_v (llama.cpp's --cache-type-k/-v): a q8_0 cache gives
    `hearth run -ctk q8_0 -ctv q8_0`'s greedy text, which starts as the f16
    cache's; bad types and a quantized V cache without flash attention are
    refused, naming the parameter."""
    prompt = "The capital of France is"
    with hearth.Model(MODEL, n_ctx=512, type_k="q8_0", type_v=8) as m:
        text = m.generate(prompt, max_tokens=16, **greedy())
    assert text.split()[0] == model.generate(prompt, max_tokens=16, **greedy()).split()[0] == "Paris."
    exe = os.environ.get("HEARTH_BIN")
    if exe:
        out = subprocess.run([exe, "run", MODEL, prompt, "-n", "16", "--temp", "0", "-ctk", "q8_0", "-ctv", "q8_0"],
                             capture_output=True, check=True)
        assert text == out.stdout.decode()
    for name, value in (("type_k", "q5_0"), ("type_v", 3), ("type_k", True), ("type_v", None)):
        with pytest.raises(hearth.InvalidArgumentError, match=name):
            hearth.Model(MODEL, **{name: value})
    with pytest.raises(hearth.InvalidArgumentError, match="flash_attn"):
        hearth.Model(MODEL, type_v="q4_0", flash_attn=False)


# Model keyword arguments and the `hearth run` flags that mean the same
# (llama.cpp's --rope-* / --yarn-*; SmolLM2's file says rope.freq_base 1e5,
# no scaling, context 8192)
ROPE_OVERRIDES = [
    (dict(rope_freq_scale=0.5), ["--rope-freq-scale", "0.5"]),
    (dict(rope_scaling_type="yarn", rope_freq_scale=0.25, rope_freq_base=50000.0, yarn_orig_ctx=2048,
          yarn_beta_fast=16.0, yarn_beta_slow=2.0),
     ["--rope-scaling", "yarn", "--rope-freq-scale", "0.25", "--rope-freq-base", "50000", "--yarn-orig-ctx", "2048",
      "--yarn-beta-fast", "16", "--yarn-beta-slow", "2"]),
    (dict(rope_scaling_type="linear", rope_freq_scale=0.5, yarn_ext_factor=0.5, yarn_attn_factor=0.9),
     ["--rope-scaling", "linear", "--rope-freq-scale", "0.5", "--yarn-ext-factor", "0.5", "--yarn-attn-factor", "0.9"]),
]


def rope_text(prompt, **kw):
    with hearth.Model(MODEL, n_ctx=512, flash_attn=False, **kw) as m:
        return m.generate(prompt, max_tokens=32, **greedy())


@needs_model
def test_rope_overrides_reach_the_library(model):
    """Each set of overrides changes the greedy text, and gives `hearth run`'s
    with the same flags; the model's own values, or a scale with scaling
    "none", give the plain text; YaRN with no extrapolation is linear scaling."""
    prompt = "The capital of France is"
    plain = model.generate(prompt, max_tokens=32, **greedy())
    exe = os.environ.get("HEARTH_BIN")
    for kw, flags in ROPE_OVERRIDES:
        text = rope_text(prompt, **kw)
        assert text != plain, kw
        if exe:
            out = subprocess.run([exe, "run", MODEL, prompt, "-n", "32", "--temp", "0", "-fa", "off", *flags],
                                 capture_output=True, check=True)
            assert text == out.stdout.decode(), kw
    assert rope_text(prompt, rope_freq_base=100000.0, rope_scaling_type=0, rope_freq_scale=0.5) == plain
    assert rope_text(prompt, rope_scaling_type="yarn", rope_freq_scale=0.25, yarn_ext_factor=0.0) == \
        rope_text(prompt, rope_scaling_type="linear", rope_freq_scale=0.25)


@needs_model
def test_context_shift_goes_past_a_full_context():
    """With n_ctx 64 a generation ends when the context is full, unless
    context_shift drops old tokens (then it runs to max_tokens); `hearth run
    --context-shift --keep 2` gives the same text."""
    prompt = "Once upon a time"
    for shift in (False, True):
        with hearth.Model(MODEL, n_ctx=64, n_seq_max=1, context_shift=shift, n_keep=2) as m:
            text = m.generate(prompt, max_tokens=150, **greedy())
            # without the shift: every cell decoded, then one last token sampled
            n_gen, room = m.stats()["n_generated_tokens"], 64 - len(m.tokenize(prompt)) + 1
        assert n_gen == (150 if shift else room), (shift, n_gen)
    exe = os.environ.get("HEARTH_BIN")
    if exe:
        out = subprocess.run([exe, "run", MODEL, prompt, "-n", "150", "--temp", "0", "-c", "64",
                              "--context-shift", "--keep", "2"], capture_output=True, check=True)
        assert text == out.stdout.decode()


@needs_model
def test_stream_concatenates_to_generate(model, cases):
    prompt = cases[2]["prompt"]
    pieces = list(model.stream(prompt, max_tokens=40, **greedy()))
    assert len(pieces) > 10 and all(pieces)
    assert "".join(pieces) == model.generate(prompt, max_tokens=40, **greedy())


@needs_model
def test_threads_share_the_engine(model, cases):
    """8 threads x 4 requests each on one Model: every text is llama.cpp's."""
    want = {c["prompt"]: model.detokenize([s["token"] for s in c["steps"][:12]]) for c in cases}
    prompts = list(want)
    errors = []

    def worker(i):
        try:
            for j in range(4):
                p = prompts[(i + j) % len(prompts)]
                got = model.generate(p, max_tokens=12, **greedy())
                if got != want[p]:
                    errors.append((p, got))
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors


@needs_model
def test_break_cancels():
    """Leaving a stream frees its slot at once: with one slot, the next
    request runs right away instead of waiting for 4096 tokens."""
    with hearth.Model(MODEL, n_seq_max=1, n_ctx=4096) as m:
        for i, _ in enumerate(m.stream("Tell me a long story.", max_tokens=None, ignore_eos=True, **greedy())):
            if i == 3:
                break
        start = time.monotonic()
        assert m.generate("The capital of France is", max_tokens=4, **greedy()) == " Paris.\n\n"
        assert time.monotonic() - start < 5


@needs_model
def test_slow_reader_is_bounded():
    """A reader that stops reading pauses its own request once about 1 KiB
    waits unread (memory stays bounded); the model's other requests go on."""
    with hearth.Model(MODEL, n_seq_max=2, n_ctx=2048) as m:
        slow = m.stream("Tell me a long story.", max_tokens=None, ignore_eos=True, **greedy())
        first = next(slow)
        assert m.generate("The capital of France is", max_tokens=8, **greedy()).startswith(" Paris.")
        deadline = time.monotonic() + 120
        generated = -1
        while m.stats()["n_generated_tokens"] != generated:  # until it stops: paused
            generated = m.stats()["n_generated_tokens"]
            time.sleep(1)
            assert time.monotonic() < deadline, "the unread stream was never paused"
        backlog = next(slow)
        assert first and 1024 <= len(backlog.encode()) < 1024 + 256, len(backlog)
        more = [next(slow) for _ in range(3)]  # resumed
        assert all(more)


@needs_model
def test_sampling_is_seeded(model):
    a = model.generate("Once upon a time", max_tokens=16, seed=42)
    assert a == model.generate("Once upon a time", max_tokens=16, seed=42)
    stop = a.split()[2]
    assert model.generate("Once upon a time", max_tokens=16, seed=42, stop=stop) == a[:a.index(stop)]


@needs_model
def test_chat_shapes(model):
    msgs = [{"role": "system", "content": "You are brief."}, {"role": "user", "content": "What is 2+2?"}]
    out = model.chat(msgs, max_tokens=24, **greedy())
    choice = out["choices"][0]
    assert out["object"] == "chat.completion" and choice["message"]["role"] == "assistant"
    assert choice["finish_reason"] in ("stop", "length") and choice["message"]["content"]
    usage = out["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] and usage["prompt_tokens"] > 10
    chunks = list(model.chat(msgs, stream=True, max_tokens=24, **greedy()))
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "logprobs": None,
                                        "finish_reason": choice["finish_reason"]}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == choice["message"]["content"]
    # text parts reach the template joined with newlines (the library's rule, vLLM's and llama.cpp's)
    parts = [{"role": "user", "content": [{"type": "text", "text": "What is"}, {"type": "text", "text": "2+2?"}]}]
    joined = {"role": "user", "content": "What is\n2+2?"}
    assert model.chat([msgs[0], *parts], max_tokens=24, **greedy())["choices"][0] == \
        model.chat([msgs[0], joined], max_tokens=24, **greedy())["choices"][0]


@needs_model
def test_async(model, cases):
    prompt = cases[0]["prompt"]

    async def run():
        ticks = 0
        stop = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        t = asyncio.create_task(ticker())
        texts = await asyncio.gather(*[model.agenerate(prompt, max_tokens=48, temperature=0) for _ in range(3)])
        pieces = []
        async for piece in model.astream(prompt, max_tokens=48, temperature=0):
            pieces.append(piece)
            if len(pieces) == 5:
                break
        reply = await model.achat([{"role": "user", "content": "Hi"}], max_tokens=8, temperature=0)
        stop.set()
        await t
        return texts, pieces, reply, ticks

    texts, pieces, reply, ticks = asyncio.run(run())
    want = model.generate(prompt, max_tokens=48, **greedy())
    assert texts == [want] * 3
    assert "".join(pieces) == want[:len("".join(pieces))] and len(pieces) == 5
    assert reply["object"] == "chat.completion"
    assert ticks > 20  # the loop kept running while hearth generated


def test_bad_files(tmp_path):
    with pytest.raises(hearth.ModelFileError, match="No such file"):
        hearth.Model(tmp_path / "missing.gguf")
    with pytest.raises(hearth.ModelFileError):
        hearth.Model(tmp_path)
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"this is not a GGUF file at all" * 10)
    with pytest.raises(hearth.ModelFormatError) as e:
        hearth.Model(garbage)
    assert "\n" not in str(e.value) and e.value.status == 3
    if os.path.isfile(MODEL):
        cut = tmp_path / "cut.gguf"
        with open(MODEL, "rb") as f:
            cut.write_bytes(f.read(1 << 20))
        with pytest.raises(hearth.ModelFormatError):
            hearth.Model(cut)


@pytest.fixture
def file_server(tmp_path):
    """An HTTP server on loopback over a folder (tmp_path/www)."""
    import functools
    import http.server
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield www, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_download_progress(tmp_path, monkeypatch, file_server):
    """A URL downloads into the store with progress reports; a callable that
    returns False cancels, one that raises propagates, and neither leaves a
    file under the final name."""
    tiny = os.environ.get("HEARTH_TEST_TINY", "")
    if not os.path.isfile(tiny):
        pytest.skip("HEARTH_TEST_TINY unset")
    www, url = file_server
    (www / "tiny.gguf").write_bytes(open(tiny, "rb").read())
    monkeypatch.setenv("HEARTH_MODELS", str(tmp_path / "store"))
    with pytest.raises(hearth.CancelledError):
        hearth.Model(f"{url}/tiny.gguf", progress=lambda p: False)
    with pytest.raises(ZeroDivisionError):
        hearth.Model(f"{url}/tiny.gguf", progress=lambda p: 1 / 0)
    assert not [p for p in (tmp_path / "store").rglob("tiny.gguf")]
    reports = []
    with hearth.Model(f"{url}/tiny.gguf", progress=reports.append) as m:
        assert m.n_layer > 0
    last = reports[-1]
    assert last["finished"] and last["done"] == last["total"] == os.path.getsize(tiny), last
    assert last["what"].endswith("tiny.gguf")


def test_offline_name_not_in_store(tmp_path, monkeypatch):
    """A model name resolves through the library's store; offline and absent,
    the error says how to get it."""
    monkeypatch.setenv("HEARTH_MODELS", str(tmp_path))
    monkeypatch.setenv("HEARTH_OFFLINE", "1")
    with pytest.raises(hearth.ModelFileError, match="offline") as e:
        hearth.Model("smollm2:135m")
    assert "hearth pull smollm2:135m" in str(e.value) and "\n" not in str(e.value)


@needs_model
def test_bad_arguments(model):
    with pytest.raises(hearth.InvalidArgumentError):
        hearth.Model(MODEL, n_batch=0)
    with pytest.raises(hearth.InvalidArgumentError, match="n_ubatch"):
        hearth.Model(MODEL, n_ubatch=0)
    for name, value in (("yarn_orig_ctx", -1), ("yarn_orig_ctx", 2**31), ("rope_freq_scale", -0.5),
                        ("rope_freq_base", "1e4"), ("yarn_beta_fast", float("nan")), ("yarn_ext_factor", float("inf")),
                        ("rope_scaling_type", "ntk"), ("rope_scaling_type", 3), ("n_keep", -2)):
        with pytest.raises(hearth.InvalidArgumentError, match=name):
            hearth.Model(MODEL, **{name: value})
    with pytest.raises(hearth.InvalidArgumentError):
        model.generate("x", top_p=0)
    with pytest.raises(hearth.InvalidArgumentError):
        model.generate([model.n_vocab + 5])
    with pytest.raises(hearth.InvalidArgumentError):
        model.chat([])
    with pytest.raises(hearth.ContextFullError, match="prompt"):
        model.generate("word " * 600)
    with pytest.raises(TypeError):
        asyncio.run(model.agenerate("x", no_such_option=1))


@needs_model
def test_close():
    m = hearth.Model(MODEL, n_ctx=256)
    pieces = []
    errors = []

    def reader():
        try:
            for p in m.stream("Tell me a story.", max_tokens=None, ignore_eos=True, **greedy()):
                pieces.append(p)
        except hearth.HearthError as e:
            errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    while len(pieces) < 3 and t.is_alive():
        time.sleep(0.01)
    m.close()
    t.join(10)
    assert not t.is_alive() and len(errors) == 1 and "closed" in str(errors[0])
    with pytest.raises(hearth.InvalidArgumentError, match="closed"):
        m.generate("x")
    m.close()  # twice is fine


@needs_model
def test_ctrl_c_interrupts_generate():
    """SIGINT during generate raises KeyboardInterrupt promptly, and the
    model still works afterwards."""
    code = textwrap.dedent(f"""
        import sys, time, hearth
        m = hearth.Model({MODEL!r}, n_ctx=4096, n_seq_max=1)
        print("ready", flush=True)
        t = time.monotonic()
        try:
            m.generate("Tell me a long story.", max_tokens=None, ignore_eos=True, temperature=0)
            print("finished without interrupt")
        except KeyboardInterrupt:
            print("interrupted after", round(time.monotonic() - t, 2), flush=True)
        print(repr(m.generate("The capital of France is", max_tokens=4, temperature=0)), flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    line = p.stdout.readline()
    assert line.startswith("interrupted after"), line
    assert time.monotonic() - sent < 2
    assert p.stdout.readline().strip() == repr(" Paris.\n\n")
    assert p.wait(30) == 0
