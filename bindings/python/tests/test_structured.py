"""Structured outputs and tool calling through the `hearth` package: JSON
Schemas (dicts, JSON text, pydantic classes, OpenAI's response_format) whose
output parses and validates (the `jsonschema` package), json_object, GBNF
grammars, logit_bias, and OpenAI-shaped tool calls on Qwen2.5-Coder 0.5B
Instruct (Hermes-style <tool_call>, chosen by the library from its chat
template): required and named choices give calls whose arguments validate,
streamed deltas put together equal the whole answer, a history with a tool
result is accepted; the library's errors come back as InvalidArgumentError
with its message.

Environment (as test_hearth.py): HEARTH_TEST_MODEL, the default model;
HEARTH_TEST_QWEN, qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (default: beside
the default model).
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

import hearth

MODEL = os.environ.get("HEARTH_TEST_MODEL", "")
QWEN = os.environ.get("HEARTH_TEST_QWEN",
                      os.path.join(os.path.dirname(MODEL), "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))

PERSON = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 20},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "city": {"type": "string", "enum": ["Paris", "Rome", "Tokyo"]}},
    "required": ["name", "age", "city"], "additionalProperties": False}

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 40, "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
ADD = {"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"], "additionalProperties": False}}}
TOOLS = [WEATHER, ADD]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


@pytest.fixture(scope="module")
def model():
    if not os.path.isfile(MODEL):
        pytest.skip("HEARTH_TEST_MODEL is not set to a model file")
    with hearth.Model(MODEL, n_ctx=1024) as m:
        yield m


@pytest.fixture(scope="module")
def qwen():
    if not os.path.isfile(QWEN):
        pytest.skip(f"{QWEN} is absent (set HEARTH_TEST_QWEN to Qwen2.5-Coder 0.5B Instruct's GGUF)")
    with hearth.Model(QWEN, n_ctx=2048, n_seq_max=2) as m:
        yield m


def greedy(**kw):
    return dict(temperature=0, **kw)


def ask(text):
    return [{"role": "user", "content": text}]


def content(reply):
    return reply["choices"][0]["message"]["content"]


def test_json_schema_to_grammar():
    """A schema as a dict, as JSON text and as a pydantic class gives GBNF;
    a keyword outside the library's subset raises, naming it."""
    grammar = hearth.json_schema_to_grammar(PERSON)
    assert grammar.startswith("root ::=") or "\nroot ::=" in grammar, grammar
    assert hearth.json_schema_to_grammar(json.dumps(PERSON)) == grammar
    pydantic = pytest.importorskip("pydantic")

    class City(pydantic.BaseModel):
        name: str
        population: int

    assert "root" in hearth.json_schema_to_grammar(City)
    with pytest.raises(hearth.InvalidArgumentError, match="multipleOf") as e:
        hearth.json_schema_to_grammar({"type": "object", "properties": {"age": {"type": "integer",
                                                                                "multipleOf": 2}}})
    assert "/properties/age" in str(e.value)
    with pytest.raises(hearth.InvalidArgumentError):
        hearth.json_schema_to_grammar("{not json")
    with pytest.raises(hearth.InvalidArgumentError, match="JSON Schema"):
        hearth.json_schema_to_grammar(42)


def test_json_schema_output_validates(model):
    """json_schema on generate, response_format json_schema and a pydantic
    class on chat: the text parses and the schema accepts it."""
    jsonschema = pytest.importorskip("jsonschema")
    text = model.generate("A person as JSON:", max_tokens=96, json_schema=PERSON, **greedy())
    jsonschema.validate(json.loads(text), PERSON)
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
    for seed in range(3):
        out = model.chat(ask("Describe a person who lives in Rome."), max_tokens=96, response_format=fmt, seed=seed)
        jsonschema.validate(json.loads(content(out)), PERSON)
        assert out["choices"][0]["finish_reason"] == "stop", out
    pydantic = pytest.importorskip("pydantic")

    class Person(pydantic.BaseModel):
        name: str
        age: int

    out = model.chat(ask("Describe a person."), max_tokens=96, response_format=Person, **greedy())
    Person.model_validate_json(content(out))
    streamed = "".join(c["choices"][0]["delta"].get("content", "")
                       for c in model.chat(ask("Describe a person."), stream=True, max_tokens=96,
                                           response_format=Person, **greedy()))
    assert streamed == content(out)


def test_json_object_parses(model):
    out = model.chat(ask("Describe Paris as JSON."), max_tokens=128, response_format={"type": "json_object"},
                     **greedy())
    assert isinstance(json.loads(content(out)), dict)
    text = model.chat(ask("Hi"), max_tokens=8, response_format={"type": "text"}, **greedy())
    assert content(text) == content(model.chat(ask("Hi"), max_tokens=8, **greedy()))


def test_grammar_restricts_output(model):
    yes_no = 'root ::= "yes" | "no"'
    for seed in range(4):
        assert model.generate("Is water wet? Answer:", max_tokens=8, grammar=yes_no, seed=seed) in ("yes", "no")
    out = model.chat(ask("Is the sky blue?"), max_tokens=8, grammar=yes_no, **greedy())
    assert content(out) in ("yes", "no") and out["choices"][0]["finish_reason"] == "stop"
    pieces = list(model.stream("Count: ", max_tokens=24, grammar="root ::= [0-9]+ \" \" [0-9]+", **greedy()))
    assert "".join(pieces).replace(" ", "").isdigit()
    with pytest.raises(hearth.InvalidArgumentError, match="grammar line 1"):
        model.generate("x", grammar='root ::= ("yes"')
    with pytest.raises(hearth.InvalidArgumentError, match="root"):
        model.generate("x", grammar='answer ::= "yes"')


def test_logit_bias_bans_a_token(model):
    """-100 on the greedy first token (" Paris") bans it; the ids may be
    ints or digit strings, as OpenAI's JSON keys are."""
    prompt = "The capital of France is"
    plain = model.generate(prompt, max_tokens=4, **greedy())
    paris = model.tokenize(plain, add_special=False)[0]
    assert model.detokenize([paris]).strip() == "Paris"
    for bias in ({paris: -100}, {str(paris): -100.0}):
        banned = list(model.stream(prompt, max_tokens=16, logit_bias=bias, **greedy()))
        assert banned and paris not in model.tokenize("".join(banned), add_special=False), banned
    favored = model.generate(prompt, max_tokens=2, logit_bias={model.tokenize(" Rome", add_special=False)[0]: 100},
                             **greedy())
    assert favored.startswith(" Rome"), favored
    with pytest.raises(hearth.InvalidArgumentError, match="vocabulary"):
        model.generate(prompt, logit_bias={model.n_vocab + 3: -100})


def test_structured_arguments_are_checked(model):
    """Bad shapes raise InvalidArgumentError naming the argument."""
    cases = [
        (dict(grammar='root ::= "a"', json_schema=PERSON), "one of"),
        (dict(response_format={"type": "json_object"}, json_schema=PERSON), "one of"),
        (dict(response_format={"type": "xml"}), "response_format"),
        (dict(response_format={"type": "json_schema", "json_schema": {"name": "x"}}), "schema"),
        (dict(json_schema=[1, 2]), "json_schema"),
        (dict(grammar=b'root ::= "a"'), "grammar"),
        (dict(logit_bias=[(1, 2.0)]), "logit_bias"),
        (dict(logit_bias={"a": 1}), "logit_bias"),
        (dict(logit_bias={-1: 1}), "logit_bias"),
        (dict(logit_bias={5: float("nan")}), "logit_bias"),
        (dict(tools={"type": "function"}), "tools"),
        (dict(tool_choice="auto"), "tools"),
        (dict(tools=TOOLS, tool_choice={"type": "function"}), "tool_choice"),
    ]
    for kw, what in cases:
        with pytest.raises(hearth.InvalidArgumentError, match=what):
            model.chat(ask("Hi"), max_tokens=4, **kw)
    with pytest.raises(hearth.InvalidArgumentError, match="exclusiveMaximum"):
        model.chat(ask("Hi"), response_format={"type": "json_schema", "json_schema": {
            "name": "n", "schema": {"type": "number", "exclusiveMaximum": 3}}})
    with pytest.raises(TypeError):
        model.chat([{"role": "user", "content": "Hi", "extra": object()}])
    with pytest.raises(TypeError):
        model.generate("x", response_format={"type": "json_object"})  # a chat option


def check_calls(message, names=None):
    """Every call is well formed and its arguments validate against its tool's schema."""
    jsonschema = pytest.importorskip("jsonschema")
    assert message["content"] is None and message["tool_calls"], message
    for call in message["tool_calls"]:
        assert call["type"] == "function" and call["id"].startswith("call_") and len(call["id"]) == 29, call
        assert call["function"]["name"] in (names or SCHEMAS), call
        jsonschema.validate(json.loads(call["function"]["arguments"]), SCHEMAS[call["function"]["name"]])


def test_tools_required_and_named(qwen):
    for prompt in ("What is the weather in Paris in celsius?", "What is 17 plus 25?"):
        out = qwen.chat(ask(prompt), tools=TOOLS, tool_choice="required", max_tokens=96, **greedy())
        assert out["choices"][0]["finish_reason"] == "tool_calls", out
        check_calls(out["choices"][0]["message"])
    for choice in ("add", {"type": "function", "function": {"name": "add"}}):
        out = qwen.chat(ask("Is it raining in London?"), tools=TOOLS, tool_choice=choice, max_tokens=96, **greedy())
        check_calls(out["choices"][0]["message"], names={"add"})
    out = qwen.chat(ask("What is the weather in Paris and in Rome, in celsius?"), tools=TOOLS,
                    tool_choice="required", parallel_tool_calls=False, max_tokens=128, **greedy())
    check_calls(out["choices"][0]["message"])
    assert len(out["choices"][0]["message"]["tool_calls"]) == 1
    out = qwen.chat(ask("Say hello in French, in one word."), tools=TOOLS, tool_choice="none", max_tokens=16,
                    **greedy())
    assert "tool_calls" not in out["choices"][0]["message"] and content(out)
    with pytest.raises(hearth.InvalidArgumentError, match="nosuch"):
        qwen.chat(ask("Hi"), tools=TOOLS, tool_choice="nosuch")
    with pytest.raises(hearth.InvalidArgumentError, match="multipleOf"):
        bad = {"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}}}}
        qwen.chat(ask("Hi"), tools=[bad])
    with pytest.raises(hearth.InvalidArgumentError):
        qwen.chat(ask("Hi"), tools=TOOLS, grammar='root ::= "a"')


def test_streamed_tool_calls_equal_the_whole(qwen):
    """Greedy: the deltas put together give the non-streamed message, id
    aside (each request makes its own), and the finish reason."""
    for prompt in ("What is the weather in Paris in celsius?", "Add 3 and 4 for me."):
        kw = dict(tools=TOOLS, tool_choice="required", max_tokens=96, **greedy())
        whole = qwen.chat(ask(prompt), **kw)["choices"][0]
        calls, text, finish = [], "", None
        chunks = list(qwen.chat(ask(prompt), stream=True, **kw))
        for c in chunks:
            delta = c["choices"][0]["delta"]
            text += delta.get("content") or ""
            finish = c["choices"][0]["finish_reason"] or finish
            for d in delta.get("tool_calls", []):
                assert len(delta["tool_calls"]) == 1
                if d["index"] == len(calls):
                    assert d["id"].startswith("call_") and d["type"] == "function" and d["function"]["name"], d
                    calls.append({"id": d["id"], "type": "function",
                                  "function": {"name": d["function"]["name"], "arguments": ""}})
                else:
                    assert "id" not in d and "name" not in d["function"], d
                calls[d["index"]]["function"]["arguments"] += d["function"]["arguments"]
        assert text == "" and finish == whole["finish_reason"] == "tool_calls"
        strip = [{**c, "id": None} for c in calls]
        assert strip == [{**c, "id": None} for c in whole["message"]["tool_calls"]]
        assert chunks[-1]["choices"][0]["delta"] == {}


def test_tool_result_in_history(qwen):
    """An assistant's tool_calls (arguments as JSON text or a dict) and a
    tool message reach the template; the model answers with text (tool_choice
    none: under auto this 0.5B model may call the tool again)."""
    for arguments in ('{"city": "Paris", "unit": "celsius"}', {"city": "Paris", "unit": "celsius"}):
        messages = [
            {"role": "user", "content": "What is the weather in Paris in celsius?"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "call_abc", "name": "get_weather", "content": "22 degrees, sunny"},
        ]
        out = qwen.chat(messages, tools=TOOLS, tool_choice="none", max_tokens=48, **greedy())
        choice = out["choices"][0]
        assert choice["finish_reason"] in ("stop", "length") and "22" in choice["message"]["content"], out


def test_async_chat_with_tools(qwen):
    """achat takes chat's options: the same calls as chat, ids aside."""
    kw = dict(tools=TOOLS, tool_choice="add", max_tokens=64, **greedy())
    got = asyncio.run(qwen.achat(ask("Add 3 and 4."), **kw))["choices"][0]["message"]["tool_calls"]
    want = qwen.chat(ask("Add 3 and 4."), **kw)["choices"][0]["message"]["tool_calls"]
    assert [c["function"] for c in got] == [c["function"] for c in want]
