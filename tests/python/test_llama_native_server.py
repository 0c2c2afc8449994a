"""`hearth serve`'s llama-server endpoints: POST /completion (its native
fields and answer: content, stop_type, stopping_word, tokens_predicted,
tokens_evaluated, generation_settings, timings, completion_probabilities;
streamed as data frames without [DONE]), its greedy text equal to
/v1/completions' for the same prompt (which test_server.py checks against
`hearth run`, and that against llama.cpp); GET /props; POST
/apply-template; the un-prefixed aliases /chat/completions, /completions
and /models; and the refusal of samplers hearth does not have."""
import http.client
import json
import math
from pathlib import Path

import pytest

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("--alias", "smollm2", "--parallel", "2", "-c", "4096")


def call(server, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, res.getheader("Content-Type"), data


def test_completion_equals_v1(server):
    status, _, data = call(server, "POST", "/completion", {"prompt": PROMPT, "n_predict": 12, "temperature": 0})
    assert status == 200, data
    got = json.loads(data)
    status, _, data = call(server, "POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": 12, "temperature": 0})
    want = json.loads(data)
    assert got["content"] == want["choices"][0]["text"] and got["stop"] is True
    assert got["tokens_predicted"] == 12 and got["tokens_evaluated"] == want["usage"]["prompt_tokens"]
    assert got["stop_type"] == "limit" and got["stopping_word"] == "" and got["prompt"] == PROMPT
    gs = got["generation_settings"]
    assert gs["n_predict"] == 12 and gs["temperature"] == 0 and gs["top_k"] == 40  # llama-server's default top_k
    t = got["timings"]
    assert t["predicted_n"] == 12 and t["prompt_n"] + t["cache_n"] == got["tokens_evaluated"]
    assert t["predicted_ms"] > 0 and t["predicted_per_second"] > 0


def test_completion_stream(server):
    status, _, data = call(server, "POST", "/completion", {"prompt": PROMPT, "n_predict": 12, "temperature": 0})
    whole = json.loads(data)
    status, ctype, data = call(server, "POST", "/completion",
                               {"prompt": PROMPT, "n_predict": 12, "temperature": 0, "stream": True})
    assert status == 200 and ctype.startswith("text/event-stream")
    frames = [json.loads(line[len("data: "):]) for line in data.decode().splitlines() if line.startswith("data: ")]
    assert b"[DONE]" not in data
    assert all(not f["stop"] for f in frames[:-1]) and frames[-1]["stop"] is True
    assert "".join(f["content"] for f in frames) == whole["content"]
    assert frames[-1]["stop_type"] == "limit" and frames[-1]["tokens_predicted"] == 12
    assert all(len(f["tokens"]) == 1 for f in frames[:-1])


def test_stop_word_and_probabilities(server):
    free = json.loads(call(server, "POST", "/completion", {"prompt": PROMPT, "n_predict": 12, "temperature": 0})[2])
    word = free["content"].split()[2]
    got = json.loads(call(server, "POST", "/completion",
                          {"prompt": PROMPT, "n_predict": 12, "temperature": 0, "stop": [word]})[2])
    assert got["stop_type"] == "word" and got["stopping_word"] == word
    assert got["content"] == free["content"][:free["content"].index(word)]
    probs = json.loads(call(server, "POST", "/completion",
                            {"prompt": PROMPT, "n_predict": 4, "temperature": 0, "n_probs": 3})[2])
    cp = probs["completion_probabilities"]
    assert len(cp) == 4
    for p in cp:
        assert len(p["top_logprobs"]) == 3 and p["top_logprobs"][0]["id"] == p["id"]  # greedy: the most likely
        assert bytes(p["bytes"]).decode("utf-8", "replace") == p["token"] or p["bytes"]
        assert p["logprob"] <= 0 and sum(math.exp(t["logprob"]) for t in p["top_logprobs"]) <= 1.0001


def test_props_apply_template_and_aliases(server):
    status, _, data = call(server, "GET", "/props")
    props = json.loads(data)
    assert status == 200 and props["total_slots"] == 2 and props["default_generation_settings"]["n_ctx"] == 2048
    assert "{%" in props["chat_template"] and props["modalities"] == {"vision": False, "audio": False}
    status, _, data = call(server, "POST", "/apply-template", {"messages": [{"role": "user", "content": "hi"}]})
    prompt = json.loads(data)["prompt"]
    assert status == 200 and "<|im_start|>user\nhi<|im_end|>" in prompt and prompt.endswith("<|im_start|>assistant\n")
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6, "temperature": 0}
    a = json.loads(call(server, "POST", "/chat/completions", body)[2])
    b = json.loads(call(server, "POST", "/v1/chat/completions", body)[2])
    assert a["choices"][0]["message"] == b["choices"][0]["message"]
    c = json.loads(call(server, "POST", "/completions", {"prompt": PROMPT, "max_tokens": 4, "temperature": 0})[2])
    assert c["choices"][0]["text"]
    assert json.loads(call(server, "GET", "/models")[2])["data"][0]["id"] == "smollm2"


@pytest.mark.parametrize("field,value", [("mirostat", 2), ("dry_multiplier", 0.8), ("typical_p", 0.5),
                                         ("samplers", ["top_k"]), ("xtc_probability", 0.5), ("bogus", 1)])
def test_refusals(server, field, value):
    status, _, data = call(server, "POST", "/completion", {"prompt": PROMPT, field: value})
    err = json.loads(data)["error"]
    assert status == 400 and field in err["message"] and err["code"] == "unsupported_parameter", err
    # the off values are accepted
    if field in ("mirostat", "dry_multiplier", "xtc_probability"):
        assert call(server, "POST", "/completion", {"prompt": PROMPT, "n_predict": 1, field: 0})[0] == 200


def test_infill_equals_llama_server(start_server, qwen_path):
    """POST /infill on Qwen2.5-Coder: the FIM prompt's length and the greedy text equal llama-server's
    (tests/reference/infill/infill_reference.json, from make_infill_reference.py)."""
    ref = json.loads((Path(__file__).resolve().parents[2] / "tests" / "reference" / "infill" /
                      "infill_reference.json").read_text())
    srv = start_server("--parallel", "1", "-c", "4096", model=qwen_path)
    for case in ref["cases"]:
        body = {k: v for k, v in case.items() if k in ("input_prefix", "input_suffix", "input_extra", "prompt")}
        status, _, data = call(srv, "POST", "/infill", {**body, "n_predict": ref["n_predict"], "temperature": 0,
                                                        "top_k": 1})
        assert status == 200, data
        got = json.loads(data)
        assert got["tokens_evaluated"] == case["tokens_evaluated"], (case["name"], got["tokens_evaluated"])
        assert got["content"] == case["content"], (case["name"], got["content"])
    status, _, data = call(srv, "POST", "/infill", {"input_suffix": "x"})
    assert status == 400 and "input_prefix" in json.loads(data)["error"]["message"]


def test_infill_refused_without_fim_tokens(server):
    status, _, data = call(server, "POST", "/infill", {"input_prefix": "a", "input_suffix": "b"})
    assert status == 501 and "fill-in-the-middle" in json.loads(data)["error"]["message"]
