#!/usr/bin/env python3
"""Reference fixtures for hearth_chat_apply_template_json: the tool-capable
chat templates of templates/ rendered by Python jinja2 as transformers'
apply_chat_template(messages, tools=tools) renders them (the environment of
make_chat_fixtures.py: trim_blocks, lstrip_blocks, transformers' tojson,
raise_exception, strftime_now at FIXED_NOW), over conversations with tools,
tool calls and tool results.

Each conversation is stored as an OpenAI client sends it (a tool call's
function.arguments as JSON text, content possibly as text parts), the form
the C test (tests/test_chat_tools.c) passes to hearth_chat_apply_template_json.
jinja2 gets what transformers expects after the conversion vLLM and
llama.cpp make: arguments parsed into dicts, text parts joined with "\\n";
tools absent -> tools=None.

Writes tools.json: {"tools": [...], "conversations": {...}, "cases": [{template,
conversation, with_tools, add_generation_prompt, bos_token, eos_token,
expected | error (+ raised: whether the template called raise_exception)}],
"dates": [[the fixed time's text, its strftime format], ...]}

Usage: python3 tests/reference/chat/make_tool_fixtures.py  (needs jinja2)
"""
import copy
import json
import os
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_chat_fixtures import FIXED_NOW, HERE, TEMPLATES, dump, environment  # noqa: E402

TOOL_TEMPLATES = ["qwen2.5", "qwen3", "qwq", "hermes3-tool-use", "llama3.1", "llama3.2", "llama3.3", "mistral-nemo",
                  "mistral-small-3.2"]

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "The unit"}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Get the local time in a time zone",
        "parameters": {"type": "object", "properties": {
            "zone": {"type": "string", "description": "An IANA zone name"}}, "required": ["zone"]}}},
]


def call(id_, name, args):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}


SYS = {"role": "system", "content": "You are a helpful assistant."}
Q = {"role": "user", "content": "What is the weather in Paris?"}
Q2 = {"role": "user", "content": "Thanks! And in Tokyo, in fahrenheit?"}
CALL1 = {"role": "assistant", "content": "", "tool_calls": [call("a1b2c3d4e", "get_weather", {"city": "Paris"})]}
RESULT1 = {"role": "tool", "tool_call_id": "a1b2c3d4e", "name": "get_weather",
           "content": "{\"temperature\": 21, \"sky\": \"clear\"}"}
CALLS2 = {"role": "assistant", "content": "", "tool_calls": [
    call("a1b2c3d4e", "get_weather", {"city": "Paris", "unit": "celsius"}),
    call("f5g6h7i8j", "get_time", {"zone": "Europe/Paris"})]}
RESULT2 = {"role": "tool", "tool_call_id": "f5g6h7i8j", "name": "get_time", "content": "14:05"}
ANSWER = {"role": "assistant", "content": "It is 21 °C and clear in Paris."}

CONVERSATIONS = {
    "question": [SYS, Q],
    "question_no_system": [Q],
    "call_and_result": [Q, CALL1, RESULT1, ANSWER, Q2],
    "parallel_calls": [SYS, Q, CALLS2, RESULT1, RESULT2],
    "text_parts": [{"role": "user", "content": [{"type": "text", "text": "What is the weather"},
                                                {"type": "text", "text": "in Paris?"}]}],
    "unicode_arguments": [Q, {"role": "assistant", "content": "", "tool_calls": [
        call("k9l8m7n6o", "get_weather", {"city": "Zürich \"Mitte\"", "unit": "celsius"})]},
        {"role": "tool", "tool_call_id": "k9l8m7n6o", "name": "get_weather", "content": "18 °C"}],
}


def for_transformers(messages):
    """The conversion hearth makes: arguments parsed, text parts joined."""
    out = copy.deepcopy(messages)
    for m in out:
        if isinstance(m.get("content"), list):
            m["content"] = "\n".join(part["text"] for part in m["content"])
        for c in m.get("tool_calls") or []:
            c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    return out


def render(env, source, variables):
    raised = []

    def raise_exception(message):
        raised.append(message)
        raise jinja2.exceptions.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    try:
        return {"expected": env.from_string(source).render(**variables)}
    except Exception as e:  # jinja2 errors and Python's (a None iterated ...)
        return {"error": str(e), "raised": bool(raised)}


def main():
    os.environ["TZ"] = "UTC"
    env = environment()
    cases = []
    for name in TOOL_TEMPLATES:
        _, bos, eos = TEMPLATES[name]
        with open(os.path.join(HERE, "templates", name + ".jinja"), encoding="utf-8", newline="") as f:
            source = f.read()
        for conv_name, messages in CONVERSATIONS.items():
            for with_tools in (True, False):
                for gen in (True, False):
                    variables = {"messages": for_transformers(messages), "tools": TOOLS if with_tools else None,
                                 "documents": None, "add_generation_prompt": gen, "bos_token": bos, "eos_token": eos}
                    case = {"template": name, "conversation": conv_name, "with_tools": with_tools,
                            "add_generation_prompt": gen, "bos_token": bos, "eos_token": eos}
                    case.update(render(env, source, variables))
                    cases.append(case)
    # strftime_now's forms in these templates (Mistral Small 3.2, Llama 3.2):
    # the C test renders today's date, so it puts today where these were
    dates = [[FIXED_NOW.strftime(fmt), fmt] for fmt in ("%Y-%m-%d", "%d %b %Y")]
    dump(os.path.join(HERE, "tools.json"), {"dates": dates, "tools": TOOLS, "conversations": CONVERSATIONS,
                                            "cases": cases})
    n_err = sum("error" in c for c in cases)
    print(f"jinja2 {jinja2.__version__}: {len(cases)} cases, {n_err} errors", file=sys.stderr)


if __name__ == "__main__":
    main()
