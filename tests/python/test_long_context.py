"""Long contexts from the command line: the RoPE overrides (llama.cpp's names)
on run, chat, serve and bench; `hearth run --context-shift` going past a full
context and its clear stop without; `hearth chat` dropping its oldest turns
when the next one would not fit; the server with and without context shift;
and the YaRN flags against llama.cpp's greedy text on Qwen2.5-Coder 0.5B."""
import http.client
import json
import re
import subprocess

import pytest
from conftest import ROOT

ROPE_OPTIONS = ["--rope-scaling", "--rope-scale", "--rope-freq-base", "--rope-freq-scale", "--yarn-orig-ctx",
                "--yarn-ext-factor", "--yarn-attn-factor", "--yarn-beta-fast", "--yarn-beta-slow"]
YARN_TINY = ROOT / "tests" / "reference" / "arch" / "llama-yarn-f32.gguf"
WINDOW_TINY = ROOT / "tests" / "reference" / "arch" / "mistral-window-q8_0.gguf"  # llama, sliding window 8
YARN_FIXTURE = ROOT / "tests" / "reference" / "yarn" / "qwen2_yarn.json"
QWEN2 = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
GREEDY = ["--temp", "0", "-t", "2"]


def one_line_error(res):
    err = res.stderr.decode().strip()
    assert res.returncode not in (0, -6, -11), (res.returncode, err)
    assert err and "\n" not in err, err
    return err


@pytest.mark.parametrize("cmd", ["run", "chat", "serve", "bench"])
def test_help_lists_the_rope_options(run_hearth, cmd):
    res = run_hearth(cmd, "--help")
    assert res.returncode == 0
    for opt in ROPE_OPTIONS:
        assert opt in res.stdout.decode(), opt


@pytest.mark.parametrize("args, needle", [
    (["--rope-scaling", "ntk"], "none, linear or yarn"),
    (["--rope-scale", "0"], "--rope-scale"),
    (["--rope-freq-base", "-1"], "--rope-freq-base"),
    (["--yarn-orig-ctx", "-3"], "--yarn-orig-ctx"),
    (["--yarn-beta-fast"], "needs a value"),
])
def test_bad_rope_options(run_hearth, args, needle):
    assert needle in one_line_error(run_hearth("run", YARN_TINY, "hello", *args))


def test_bench_takes_the_rope_options(run_hearth):
    res = run_hearth("bench", YARN_TINY, "--rope-scaling", "yarn", "--rope-scale", "2", "-p", "16", "-n", "4", "-r", "1")
    assert res.returncode == 0 and b"pp16" in res.stdout, res.stderr.decode()
    assert "unknown option '--rope-foo'" in one_line_error(run_hearth("bench", YARN_TINY, "--rope-foo", "1"))
    assert "none, linear or yarn" in one_line_error(run_hearth("bench", YARN_TINY, "--rope-scaling", "x"))


def sampled_text(run_hearth, *args, model=YARN_TINY):
    """Sampled at temperature 1 with a fixed seed: the text follows the whole
    distribution, so it changes with the logits (the tiny model's greedy text
    repeats one token)."""
    res = run_hearth("run", model, "the quick brown fox", "-n", "48", "--temp", "1", "--top-k", "0", "--top-p", "1",
                     "--min-p", "0", "--seed", "7", "-t", "2", *args)
    assert res.returncode == 0, res.stderr.decode()
    return res.stdout


def test_rope_options_reach_the_model(run_hearth):
    # the tiny model's file says YaRN, factor 4 over 64 tokens, attn_factor 1.25
    default = sampled_text(run_hearth)
    assert sampled_text(run_hearth, "--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-orig-ctx", "64",
                       "--rope-freq-base", "10000", "--yarn-beta-fast", "32", "--yarn-beta-slow", "1") == default
    assert sampled_text(run_hearth, "--rope-freq-scale", "0.25") == default
    # with YaRN on, llama.cpp replaces the attention factor by YaRN's own
    assert sampled_text(run_hearth, "--yarn-attn-factor", "2") == default
    for args in (["--rope-scaling", "none"], ["--rope-scaling", "linear"], ["--rope-scale", "2"],
                 ["--yarn-orig-ctx", "4096"], ["--yarn-ext-factor", "0"], ["--yarn-beta-fast", "2"],
                 ["--rope-freq-base", "500"]):
        assert sampled_text(run_hearth, *args) != default, args


def test_rope_options_reach_windowed_layers(run_hearth):
    # every layer of a Mistral-style window runs the full layers' rope, the
    # context's overrides included (only gemma3's windowed layers keep their own)
    default = sampled_text(run_hearth, model=WINDOW_TINY)
    assert sampled_text(run_hearth, "--rope-freq-base", "10000", model=WINDOW_TINY) == default
    assert sampled_text(run_hearth, "--rope-freq-base", "500", model=WINDOW_TINY) != default


def summary(res):
    m = re.search(r"prompt (\d+) tokens.*generated (\d+) tokens", res.stderr.decode())
    assert m, res.stderr.decode()
    return int(m.group(1)), int(m.group(2))


def test_run_stops_clearly_when_the_context_is_full(run_hearth, model_path):
    res = run_hearth("run", model_path, "Once upon a time", "-n", "-1", "-c", "64", *GREEDY)
    assert res.returncode == 0
    n_prompt, n_gen = summary(res)
    assert n_prompt + n_gen == 64  # every cell used (the last token is sampled, not decoded)
    assert "the context is full (64 tokens)" in res.stderr.decode() and "--context-shift" in res.stderr.decode()


def test_run_context_shift_goes_on(run_hearth, model_path):
    res = run_hearth("run", model_path, "Once upon a time", "-n", "200", "-c", "64", "--context-shift", "--keep", "2",
                     *GREEDY)
    assert res.returncode == 0, res.stderr.decode()
    assert summary(res)[1] == 200 and "context is full" not in res.stderr.decode()
    # the whole prompt kept and no room left to drop: a clear stop
    res = run_hearth("run", model_path, "word " * 62, "-n", "200", "-c", "64", "--context-shift", "--keep", "-1",
                     *GREEDY)
    assert res.returncode == 0 and "leaves nothing to drop" in res.stderr.decode()


def test_chat_drops_the_oldest_turns_once(run_hearth, model_path):
    lines = [f"Tell me one fact about the number {i}." for i in range(8)]
    res = run_hearth("chat", model_path, "-c", "192", "-n", "24", "--system", "You answer in one sentence.", *GREEDY,
                     input=("\n".join(lines) + "\n").encode())
    err = res.stderr.decode()
    assert res.returncode == 0, err
    assert err.count("dropping its oldest turns") == 1, err
    assert res.stdout.decode().count("\n") >= len(lines)


def post(server, path, body):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    res = conn.getresponse()
    return res.status, json.loads(res.read())


@pytest.mark.parametrize("shift", [False, True])
def test_server_at_the_end_of_a_slot(start_server, shift):
    server = start_server("-c", "64", "--parallel", "1", "-t", "2", *(["--context-shift"] if shift else []))
    body = {"prompt": "Once upon a time", "max_tokens": 120, "temperature": 0, "ignore_eos": True}
    status, out = post(server, "/v1/completions", body)
    assert status == 200, out
    choice = out["choices"][0]
    if shift:
        assert out["usage"]["completion_tokens"] == 120 and choice["finish_reason"] == "length"
    else:
        assert choice["finish_reason"] == "length"
        assert out["usage"]["prompt_tokens"] + out["usage"]["completion_tokens"] == 64 + 1


@pytest.mark.skipif(not QWEN2.exists() or not YARN_FIXTURE.exists(), reason="Qwen2.5-Coder 0.5B not fetched")
def test_yarn_flags_give_llama_cpp_text(hearth_bin):
    ref = json.loads(YARN_FIXTURE.read_text())
    res = subprocess.run([str(hearth_bin), "run", str(QWEN2), "-f", str(YARN_FIXTURE.parent / ref["prompt_file"]),
                          "--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-orig-ctx", "32768",
                          "-n", str(len(ref["steps"])), "-c", str(ref["n_ctx"]), "-fa", "off", "--temp", "0",
                          "--top-k", "1", "-t", "2"], capture_output=True, timeout=600)
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.decode() == ref["text"]
