"""`hearth chat` and `hearth run --chat` with SmolLM2: multi-turn sessions over
a pipe, how they end, --chat equal to `hearth run` on the prompt jinja2 renders
(tests/reference/chat/templates.json), the KV cache kept between turns giving
the same answer as a fresh run over the whole conversation, and one-line
errors."""
import json

from conftest import ROOT

SYSTEM = "You are a concise assistant."
Q1 = "What is the capital of France?"
Q2 = "And of Italy?"
GREEDY = ("--temp", "0", "-n", "24")


def chatml(messages):
    """SmolLM2's template by hand, for conversations that start with a system message."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return text + "<|im_start|>assistant\n"


def jinja2_prompt(conversation):
    ref = json.loads((ROOT / "tests/reference/chat/templates.json").read_text(encoding="utf-8"))
    return next(c["expected"] for c in ref["cases"] if c["template"] == "smollm2" and
                c["conversation"] == conversation and c["add_generation_prompt"])


def one_line_error(res):
    err = res.stderr.decode().strip()
    assert res.returncode not in (0, -6, -11), (res.returncode, err)
    assert err and "\n" not in err, err
    return err


def test_help(run_hearth):
    res = run_hearth("chat", "--help")
    assert res.returncode == 0
    for opt in ("--system", "--chat-template", "-n", "--temp", "--seed", "-c"):
        assert opt in res.stdout.decode(), opt
    run_help = run_hearth("run", "--help").stdout.decode()
    assert "--chat MESSAGE" in run_help and "--system" in run_help and "--chat-template" in run_help
    assert b"chat MODEL" in run_hearth("--help").stdout


def test_run_chat_equals_rendered_prompt(run_hearth, model_path):
    prompt = jinja2_prompt("system_user")
    assert prompt == chatml([{"role": "system", "content": SYSTEM}, {"role": "user", "content": Q1}])
    chat = run_hearth("run", model_path, "--chat", Q1, "--system", SYSTEM, *GREEDY)
    plain = run_hearth("run", model_path, "-p", prompt, *GREEDY)
    assert chat.returncode == 0 and plain.returncode == 0, chat.stderr.decode()
    assert chat.stdout and chat.stdout == plain.stdout
    # without --system, SmolLM2's template adds its own
    chat = run_hearth("run", model_path, "--chat", Q1, *GREEDY)
    plain = run_hearth("run", model_path, "-p", jinja2_prompt("user"), *GREEDY)
    assert chat.returncode == 0 and chat.stdout == plain.stdout


def test_multi_turn_keeps_the_conversation(run_hearth, model_path):
    res = run_hearth("chat", model_path, "--system", SYSTEM, *GREEDY, input=f"{Q1}\n{Q2}\n/exit\n".encode())
    assert res.returncode == 0, res.stderr.decode()
    first = run_hearth("run", model_path, "--chat", Q1, "--system", SYSTEM, *GREEDY).stdout.decode()
    out = res.stdout.decode()
    assert out.startswith(first + "\n")
    second = out[len(first) + 1:]
    assert second.endswith("\n") and len(second) > 1
    # the second answer, decoded on top of the kept KV cache, equals a fresh run over the whole conversation
    conversation = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": Q1},
                    {"role": "assistant", "content": first}, {"role": "user", "content": Q2}]
    fresh = run_hearth("run", model_path, "-p", chatml(conversation), *GREEDY)
    assert second == fresh.stdout.decode() + "\n"


def test_end_of_input_and_exit(run_hearth, model_path):
    res = run_hearth("chat", model_path, *GREEDY, input=b"Hello\n")
    assert res.returncode == 0 and res.stdout.decode().endswith("\n") and len(res.stdout) > 1
    res = run_hearth("chat", model_path, *GREEDY, input=b"")
    assert res.returncode == 0 and res.stdout == b""
    res = run_hearth("chat", model_path, *GREEDY, input=b"\n/exit\nnot read\n")
    assert res.returncode == 0 and res.stdout == b""


def test_chat_template_override(run_hearth, model_path, tmp_path):
    tmpl = tmp_path / "plain.jinja"
    tmpl.write_text("{% for m in messages %}{{ m.role | upper }}: {{ m.content }}\n{% endfor %}"
                    "{% if add_generation_prompt %}ASSISTANT:{% endif %}")
    chat = run_hearth("run", model_path, "--chat", Q1, "--chat-template", tmpl, *GREEDY)
    plain = run_hearth("run", model_path, "-p", f"USER: {Q1}\nASSISTANT:", *GREEDY)
    assert chat.returncode == 0 and chat.stdout == plain.stdout


def test_errors(run_hearth, model_path, tmp_path):
    err = one_line_error(run_hearth("run", model_path, "--chat", Q1, "--chat-template", tmp_path / "missing.jinja"))
    assert "cannot open chat template" in err
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}\n{{ m.content }}\n{% endfor %}\n{% include 'other.jinja' %}")
    err = one_line_error(run_hearth("run", model_path, "--chat", Q1, "--chat-template", bad))
    assert "line 4" in err and "unsupported Jinja feature 'include'" in err
    raising = tmp_path / "raise.jinja"
    raising.write_text("{% if messages[0].role != 'system' %}{{ raise_exception('a system message is required') }}{% endif %}")
    err = one_line_error(run_hearth("run", model_path, "--chat", Q1, "--chat-template", raising))
    assert err.endswith("a system message is required")
    err = one_line_error(run_hearth("chat", model_path, "--chat-template", raising, input=b"hi\n"))
    assert err.endswith("a system message is required")
    # a conversation longer than the context
    err = one_line_error(run_hearth("chat", model_path, "-c", "32", *GREEDY, input=(Q1 * 8 + "\n").encode()))
    assert "the conversation is" in err and "context holds 32" in err
    err = one_line_error(run_hearth("run", model_path, "--chat", Q1 * 8, "-c", "32"))
    assert "context holds 32" in err
    # options
    res = run_hearth("run", model_path, "--system", SYSTEM, "-p", "x")
    assert res.returncode == 2 and "--chat" in one_line_error(res)
    res = run_hearth("run", model_path, "--chat", Q1, "-p", "x")
    assert res.returncode == 2
    res = run_hearth("chat")
    assert res.returncode == 2 and "MODEL" in one_line_error(res)
    res = run_hearth("chat", model_path, "extra")
    assert res.returncode == 2 and "unexpected argument" in one_line_error(res)


def test_ctrl_c_stops_the_answer(hearth_bin, model_path):
    """SIGINT during an answer ends that answer; the chat goes on and /exit ends it with 0."""
    import signal
    import subprocess
    import time
    proc = subprocess.Popen([str(hearth_bin), "chat", str(model_path), "--temp", "0", "-n", "-1"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write(b"Tell me a very long story about a dragon.\n")
        proc.stdin.flush()
        first = proc.stdout.read1(1)  # the answer has started
        assert first
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(b"/exit\n", timeout=15)  # an answer left to run takes far longer
    finally:
        proc.kill()
    assert proc.returncode == 0, err.decode()
    assert (first + out).endswith(b"\n")
