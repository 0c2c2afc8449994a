"""Tool calling through `hearth serve` with the official `openai` client and
LangChain, on Qwen2.5-Coder 0.5B Instruct (Hermes-style <tool_call>, chosen
from its chat template) and SmolLM2 (a template without tools: the generic
JSON form): `required` and named choices always give calls whose arguments
validate (the `jsonschema` package) against the function's schema; `auto`
calls the tool on prompts that plainly need it (the rate is printed);
parallel calls; a history with tool results; streamed deltas put together
equal the whole answer; bad tools and tool_choice are 400s in OpenAI's shape."""
import json

import jsonschema
import openai
import pytest

from test_server import call, error_of

ALIAS = "m"
ARGS = ["-c", "8192", "--parallel", "2", "--alias", ALIAS]

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 40, "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Get the current local time in a time zone.",
    "parameters": {"type": "object", "properties": {"timezone": {"type": "string", "maxLength": 40}},
                   "required": ["timezone"], "additionalProperties": False}}}
ADD = {"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"], "additionalProperties": False}}}
TOOLS = [WEATHER, TIME, ADD]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


@pytest.fixture(scope="module", params=["qwen2.5-coder", "smollm2"])
def client(request, start_server, model_path, qwen_path):
    model = qwen_path if request.param == "qwen2.5-coder" else model_path
    server = start_server(*ARGS, model=model)
    with openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300) as c:
        c.server = server
        c.model_name = request.param
        yield c


def check_calls(message, names=None):
    """Every call is well formed and its arguments validate against its tool's schema."""
    assert message.tool_calls, message
    for tc in message.tool_calls:
        assert tc.type == "function" and tc.id.startswith("call_") and len(tc.id) == 29, tc
        assert tc.function.name in (names or SCHEMAS), tc
        jsonschema.validate(json.loads(tc.function.arguments), SCHEMAS[tc.function.name])
    assert len({tc.id for tc in message.tool_calls}) == len(message.tool_calls)


def ask(client, text, **kw):
    """One question with the tools; one call at most unless parallel_tool_calls
    is given (SmolLM2, 135M, otherwise goes on calling until max_tokens)."""
    kw.setdefault("temperature", 0)
    kw.setdefault("max_tokens", 300)
    kw.setdefault("parallel_tool_calls", False)
    return client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": text}], tools=TOOLS, **kw)


PROMPTS = ["What is the weather in Paris in celsius?", "What time is it in Tokyo?", "What is 17 plus 25?",
           "Is it raining in London? Use fahrenheit.", "Tell me the time in Europe/Berlin.",
           "Add 3 and 4 for me.", "How warm is it in Madrid right now?", "What is 1000 + 2345?"]


@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_required_always_calls(client, temperature):
    for i, prompt in enumerate(PROMPTS):
        r = ask(client, prompt, tool_choice="required", temperature=temperature, seed=i)
        assert r.choices[0].finish_reason == "tool_calls", r
        check_calls(r.choices[0].message)


def test_named_choice_calls_that_function(client):
    for prompt in PROMPTS[:4]:
        r = ask(client, prompt, tool_choice={"type": "function", "function": {"name": "add"}})
        check_calls(r.choices[0].message, names={"add"})


def test_parallel_tool_calls_false_gives_one(client):
    r = ask(client, "What is the weather in Paris and in Rome, in celsius?", tool_choice="required",
            parallel_tool_calls=False)
    check_calls(r.choices[0].message)
    assert len(r.choices[0].message.tool_calls) == 1


def test_auto_calls_when_needed(client):
    """auto: on prompts that plainly need a tool, how often the model calls one
    (printed); every call it makes validates; a greeting gets text."""
    calls = 0
    for prompt in PROMPTS:
        r = ask(client, prompt, tool_choice="auto")
        msg = r.choices[0].message
        if msg.tool_calls:
            calls += 1
            check_calls(msg)
            assert r.choices[0].finish_reason == "tool_calls"
            assert "<tool_call>" not in (msg.content or "")
    print(f"\n{client.model_name}: auto called a tool on {calls} of {len(PROMPTS)} prompts that need one")
    if client.model_name == "qwen2.5-coder":
        assert calls >= len(PROMPTS) // 2
    hi = ask(client, "Say hello in French, in one word.", tool_choice="none")
    assert hi.choices[0].message.tool_calls is None and hi.choices[0].message.content


def test_parallel_calls(client):
    """parallel_tool_calls: the calls a model makes (printed) all validate; the
    streamed form of several calls is in test_stream_deltas_equal_whole."""
    r = ask(client, "What is the weather in Paris and in Rome, both in celsius? Call the tool once per city.",
            tool_choice="required", parallel_tool_calls=True, max_tokens=200)
    msg = r.choices[0].message
    if r.choices[0].finish_reason == "length":  # the last call may be cut off
        msg.tool_calls = msg.tool_calls[:-1]
    check_calls(msg)
    print(f"\n{client.model_name}: {len(msg.tool_calls)} calls for two cities")


def test_stream_deltas_equal_whole(client):
    """Streamed deltas put together equal the whole answer: one call, auto, and
    parallel calls (SmolLM2 makes several, Qwen one)."""
    for prompt, choice, parallel in [(PROMPTS[0], "required", False), (PROMPTS[2], "auto", False),
                                     (PROMPTS[1], "required", True)]:
        kw = dict(tool_choice=choice, parallel_tool_calls=parallel, max_tokens=120)
        r = ask(client, prompt, **kw)
        whole, whole_finish = r.choices[0].message, r.choices[0].finish_reason
        calls, content, finish = {}, "", None
        for chunk in ask(client, prompt, stream=True, **kw):
            if not chunk.choices:
                continue
            c = chunk.choices[0]
            content += c.delta.content or ""
            finish = c.finish_reason or finish
            for d in c.delta.tool_calls or []:
                entry = calls.setdefault(d.index, {"id": None, "name": None, "arguments": ""})
                if d.id:
                    assert entry["id"] is None and d.function.name, d  # id, type and name come first, once
                    assert d.type == "function"
                    entry["id"], entry["name"] = d.id, d.function.name
                entry["arguments"] += d.function.arguments or ""
        assert content == (whole.content or ""), (content, whole)
        got = [(calls[i]["name"], calls[i]["arguments"]) for i in sorted(calls)]
        want = [(tc.function.name, tc.function.arguments) for tc in whole.tool_calls or []]
        assert got == want
        assert finish == whole_finish and finish in (("tool_calls", "length") if want else ("stop", "length"))


def test_history_with_tool_results(client):
    """A conversation with the assistant's call and the tool's result goes to
    the template (tool_call_id, name) and the model answers in text."""
    first = ask(client, PROMPTS[0], tool_choice="required").choices[0].message
    tc = first.tool_calls[0]
    messages = [{"role": "user", "content": PROMPTS[0]},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": tc.id, "type": "function",
                     "function": {"name": tc.function.name, "arguments": tc.function.arguments}}]},
                {"role": "tool", "tool_call_id": tc.id, "name": tc.function.name,
                 "content": json.dumps({"temperature": 21, "sky": "sunny"})}]
    r = client.chat.completions.create(model=ALIAS, messages=messages, tools=TOOLS, tool_choice="none",
                                       temperature=0, max_tokens=60)
    assert r.choices[0].message.content and r.choices[0].finish_reason in ("stop", "length")
    prompt_tokens = r.usage.prompt_tokens
    plain = client.chat.completions.create(model=ALIAS, messages=messages[:1], temperature=0, max_tokens=1)
    assert prompt_tokens > plain.usage.prompt_tokens + 10  # the call and the result reached the prompt


@pytest.mark.parametrize("tools,choice,param,needle", [
    ([{"type": "function", "function": {"description": "no name"}}], None, "tools", "name"),
    ([{"type": "function", "function": {"name": ""}}], None, "tools", "name"),
    ([WEATHER, WEATHER], None, "tools", "get_weather"),
    ([{"type": "retrieval"}], None, "tools", "function"),
    ([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "not": {}}}}], None,
     "tools", "'not'"),
    (TOOLS, {"type": "function", "function": {"name": "nope"}}, "tool_choice", "nope"),
    (TOOLS, "sometimes", "tool_choice", "tool_choice"),
    ("not a list", None, "tools", "array"),
])
def test_bad_tools(client, tools, choice, param, needle):
    body = {"model": ALIAS, "messages": [{"role": "user", "content": "Hi"}], "tools": tools, "max_tokens": 4}
    if choice is not None:
        body["tool_choice"] = choice
    status, _, data = call(client.server, "POST", "/v1/chat/completions", body, key=None)
    err = error_of(status, data, 400)
    assert err["param"] == param, err
    assert needle in err["message"], err


def test_tool_choice_without_tools(client):
    status, _, data = call(client.server, "POST", "/v1/chat/completions", {
        "model": ALIAS, "messages": [{"role": "user", "content": "Hi"}], "tool_choice": "required"}, key=None)
    assert error_of(status, data, 400)["param"] == "tool_choice"


def test_langchain_bind_tools(client):
    """LangChain's bind_tools: the AIMessage's tool_calls are parsed dicts."""
    langchain_openai = pytest.importorskip("langchain_openai")
    llm = langchain_openai.ChatOpenAI(base_url=client.server.url + "/v1", api_key="none", model=ALIAS,
                                      temperature=0, max_tokens=300, max_retries=0)
    msg = llm.bind_tools(TOOLS, tool_choice="required").invoke(PROMPTS[0])
    assert msg.tool_calls, msg
    for tc in msg.tool_calls:
        jsonschema.validate(tc["args"], SCHEMAS[tc["name"]])
