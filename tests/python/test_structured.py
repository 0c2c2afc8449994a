"""Structured outputs through `hearth serve`, with the official `openai`
client and LangChain: `chat.completions.parse` with pydantic models (every
answer validated by the `jsonschema` package, the independent reference),
json_object mode, llama-server's `grammar` and `json_schema` fields,
`logit_bias`, the refusals (400 in OpenAI's shape) of schemas and fields
hearth cannot honour, and LangChain's `with_structured_output`. Tool
calling is in test_tools.py."""
import enum
import json
import re
from typing import List, Literal, Optional

import jsonschema
import openai
import pydantic
import pytest

from test_server import call, error_of

ALIAS = "m"
# 2 slots of 2048 positions
ARGS = ["-c", "4096", "--parallel", "2", "--alias", ALIAS]


class Color(str, enum.Enum):
    red = "red"
    green = "green"
    blue = "blue"


Short = pydantic.constr(max_length=40)


class City(pydantic.BaseModel):
    name: Short
    country: Short
    population: int


class Person(pydantic.BaseModel):
    name: Short
    age: int = pydantic.Field(ge=0, le=150)
    email: Optional[Short] = None


class Flags(pydantic.BaseModel):
    enabled: bool
    ratio: float
    note: Optional[Short]


class Palette(pydantic.BaseModel):
    favourite: Color
    others: List[Color] = pydantic.Field(max_length=3)


class Step(pydantic.BaseModel):
    explanation: Short
    output: Short


class MathAnswer(pydantic.BaseModel):
    steps: List[Step] = pydantic.Field(max_length=3)
    final_answer: Short


class Address(pydantic.BaseModel):
    street: Short
    city: Short


class Company(pydantic.BaseModel):
    name: Short
    address: Address
    employees: List[Person] = pydantic.Field(max_length=2)


class Node(pydantic.BaseModel):
    """Recursive through $defs."""
    value: int = pydantic.Field(ge=0, le=99)
    children: Optional[List["Node"]] = pydantic.Field(default=None, max_length=2)


class Rating(pydantic.BaseModel):
    stars: Literal[1, 2, 3, 4, 5]
    verdict: Literal["good", "bad"]


class Event(pydantic.BaseModel):
    title: Short
    tags: List[Short] = pydantic.Field(max_length=3)
    attendees: int = pydantic.Field(ge=0, le=1000)


class Coordinates(pydantic.BaseModel):
    latitude: float
    longitude: float


class Answer(pydantic.BaseModel):
    kind: Literal["yes", "no", "unsure"]
    confidence: float


class Contact(pydantic.BaseModel):
    person: Person
    home: Optional[Address] = None


MODELS = [
    (City, "Describe Paris as JSON."),
    (Person, "Invent a person and describe them."),
    (Flags, "Give me some feature flags."),
    (Palette, "Pick colours for a website."),
    (MathAnswer, "What is 12 times 7? Show your steps."),
    (Company, "Describe a small company."),
    # a model this small nests a recursive schema without end unless shown a tree
    (Node, 'Repeat this JSON: {"value": 1, "children": [{"value": 2, "children": null}, '
           '{"value": 3, "children": null}]}'),
    (Rating, "Rate the movie Titanic."),
    (Event, "Describe a birthday party."),
    (Coordinates, "Where is London?"),
    (Answer, "Is the sky blue?"),
    (Contact, "Invent a contact card."),
]


@pytest.fixture(scope="module", params=["smollm2", "qwen2.5-coder"])
def client(request, start_server, model_path, qwen_path):
    model = model_path if request.param == "smollm2" else qwen_path
    server = start_server(*ARGS, model=model)
    with openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300) as c:
        c.server = server
        yield c


def validate(model_cls, data):
    jsonschema.validate(data, model_cls.model_json_schema(), format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("temperature", [0.0, 0.8])
@pytest.mark.parametrize("model_cls,prompt", MODELS, ids=[m.__name__ for m, _ in MODELS])
def test_parse_pydantic(client, model_cls, prompt, temperature):
    """Every answer of chat.completions.parse parses, and validates against the
    model's schema by the jsonschema package."""
    completion = client.chat.completions.parse(
        model=ALIAS, messages=[{"role": "user", "content": prompt}], response_format=model_cls,
        temperature=temperature, seed=7, max_tokens=600)
    choice = completion.choices[0]
    assert choice.finish_reason == "stop", choice
    assert isinstance(choice.message.parsed, model_cls)
    validate(model_cls, json.loads(choice.message.content))


def test_json_object_mode(client):
    """response_format json_object on 20 prompts: every answer that ends
    (finish_reason stop) is json.loads-able and an object. Qwen ends all 20;
    SmolLM2 (135M) sometimes lists keys until max_tokens (the rate is
    printed), which no grammar prevents in a free-form object."""
    prompts = [f"Give the name and price of product number {i} in a shop, as a JSON object." for i in range(10)] + \
              [f"Give the temperature and the sky of day {i} of a forecast, as a JSON object." for i in range(10)]
    ended = 0
    for i, prompt in enumerate(prompts):
        r = client.chat.completions.create(
            model=ALIAS, messages=[{"role": "system", "content": "Answer with one small flat JSON object."},
                                   {"role": "user", "content": prompt}],
            response_format={"type": "json_object"}, temperature=0.7, seed=i, max_tokens=400)
        text = r.choices[0].message.content
        if r.choices[0].finish_reason == "length":
            continue
        ended += 1
        assert r.choices[0].finish_reason == "stop", (prompt, text)
        assert isinstance(json.loads(text), dict), text
    print(f"\njson_object: {ended} of {len(prompts)} answers ended within 400 tokens")
    assert ended >= (20 if "qwen" in str(client.server.proc.args) else 15)


def test_streamed_schema_equals_whole(client):
    """The streamed answer under a schema, put together, equals the non-streamed one (greedy)."""
    kw = dict(model=ALIAS, messages=[{"role": "user", "content": "Describe Rome."}], temperature=0, max_tokens=300,
              response_format={"type": "json_schema",
                               "json_schema": {"name": "city", "schema": City.model_json_schema(), "strict": True}})
    whole = client.chat.completions.create(**kw).choices[0].message.content
    parts = [c.choices[0].delta.content or "" for c in client.chat.completions.create(stream=True, **kw) if c.choices]
    assert "".join(parts) == whole
    validate(City, json.loads(whole))


def test_llama_server_fields(client):
    """llama-server's grammar and json_schema fields on both endpoints."""
    status, _, data = call(client.server, "POST", "/v1/chat/completions", {
        "model": ALIAS, "messages": [{"role": "user", "content": "Is water wet?"}], "max_tokens": 8,
        "grammar": 'root ::= "yes" | "no"', "temperature": 1.0, "seed": 3}, key=None)
    assert status == 200, data
    assert json.loads(data)["choices"][0]["message"]["content"] in ("yes", "no")
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 99}},
              "required": ["n"], "additionalProperties": False}
    status, _, data = call(client.server, "POST", "/v1/completions", {
        "model": ALIAS, "prompt": "A number:", "max_tokens": 40, "json_schema": schema, "temperature": 0.9,
        "seed": 5}, key=None)
    assert status == 200, data
    jsonschema.validate(json.loads(json.loads(data)["choices"][0]["text"]), schema)
    # OpenAI's response_format on the completions endpoint too
    status, _, data = call(client.server, "POST", "/v1/completions", {
        "model": ALIAS, "prompt": "A number:", "max_tokens": 40, "temperature": 0.9, "seed": 6,
        "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}}, key=None)
    assert status == 200, data
    jsonschema.validate(json.loads(json.loads(data)["choices"][0]["text"]), schema)


def test_logit_bias_bans(client):
    """logit_bias -100 bans a token: the greedy answer's first token never comes back."""
    kw = dict(model=ALIAS, messages=[{"role": "user", "content": "Say hello."}], temperature=0, max_tokens=8,
              logprobs=True)
    first = client.chat.completions.create(**kw).choices[0].logprobs.content[0]
    tokens = json.loads(call(client.server, "POST", "/tokenize", {"content": first.token}, key=None)[2])["tokens"]
    assert len(tokens) == 1
    again = client.chat.completions.create(logit_bias={str(tokens[0]): -100}, **kw)
    assert all(t.token != first.token for t in again.choices[0].logprobs.content)


@pytest.mark.parametrize("body,param,needle", [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"not": {}}}}},
     "response_format", "'not'"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "integer", "multipleOf": 3}}}}, "response_format", "multipleOf"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": "{bad"}}},
     "response_format", "schema"),
    ({"response_format": {"type": "yaml"}}, "response_format", "json_schema"),
    ({"json_schema": {"$ref": "#/$defs/missing"}}, "json_schema", "missing"),
    ({"grammar": 'root ::= "a" ('}, "grammar", "line 1"),
    ({"grammar": 'root ::= x'}, "grammar", "x"),
    ({"grammar": 'root ::= "a"', "response_format": {"type": "json_object"}}, "grammar", "one of"),
    ({"logit_bias": {"abc": 1}}, "logit_bias", "abc"),
    ({"logit_bias": {"1": 500}}, "logit_bias", "[-100, 100]"),
    ({"logit_bias": {"999999999": -100}}, "logit_bias", "999999999"),
    ({"functions": [{"name": "f"}]}, "functions", "functions"),
    ({"reasoning_effort": "high"}, "reasoning_effort", "reasoning_effort"),
])
def test_bad_structured_requests(client, body, param, needle):
    """Schemas, grammars and fields hearth cannot honour: 400 in OpenAI's shape
    naming the field, and the server goes on serving."""
    req = {"model": ALIAS, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, **body}
    status, _, data = call(client.server, "POST", "/v1/chat/completions", req, key=None)
    err = error_of(status, data, 400)
    assert err["param"] == param, err
    assert needle in err["message"], err
    ok = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    assert ok.choices[0].message.content is not None


def test_unsupported_completion_fields(client):
    for body, param in [({"echo": True}, "echo"), ({"best_of": 3}, "best_of"), ({"suffix": "x"}, "suffix")]:
        status, _, data = call(client.server, "POST", "/v1/completions",
                               {"model": ALIAS, "prompt": "Hi", "max_tokens": 2, **body}, key=None)
        err = error_of(status, data, 400, "unsupported_parameter")
        assert err["param"] == param, err


def test_langchain_structured_output(client):
    """LangChain's ChatOpenAI.with_structured_output in its json_schema and
    function_calling modes returns the parsed objects."""
    langchain_openai = pytest.importorskip("langchain_openai")
    llm = langchain_openai.ChatOpenAI(base_url=client.server.url + "/v1", api_key="none", model=ALIAS,
                                      temperature=0, max_tokens=400, max_retries=0)
    for method in ("json_schema", "function_calling"):
        out = llm.with_structured_output(Person, method=method).invoke("Invent a person called Ann.")
        assert isinstance(out, Person), (method, out)


def test_cli_flags(run_hearth, model_path, tmp_path):
    """hearth run's --grammar, --grammar-file, --json-schema and --json, and
    their refusals."""
    res = run_hearth("run", model_path, "Is water wet? Answer:", "--grammar", 'root ::= " yes" | " no"', "--temp", "1",
                     "--seed", "3", "-n", "16")
    assert res.returncode == 0 and res.stdout.decode() in (" yes", " no"), res
    gbnf = tmp_path / "digits.gbnf"
    gbnf.write_text('# three digits\nroot ::= [0-9]{3}\n')
    res = run_hearth("run", model_path, "A number:", "--grammar-file", gbnf, "--temp", "0", "-n", "16")
    assert res.returncode == 0 and re.fullmatch(r"[0-9]{3}", res.stdout.decode()), res
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"],
              "additionalProperties": False}
    res = run_hearth("run", model_path, "--chat", "Name a city as JSON.", "-j", json.dumps(schema), "--temp", "0",
                     "-n", "64")
    assert res.returncode == 0, res
    jsonschema.validate(json.loads(res.stdout.decode()), schema)
    res = run_hearth("run", model_path, "--chat", "Describe Paris as JSON.", "--json", "--temp", "0", "-n", "200")
    assert res.returncode == 0 and isinstance(json.loads(res.stdout.decode()), dict), res
    for args, needle in [(["--grammar", "root ::= (", "-n", "4"], "line 1"),
                         (["--json-schema", '{"not": {}}', "-n", "4"], "'not'"),
                         (["--json", "--grammar", 'root ::= "a"'], "one of"),
                         (["--grammar-file", tmp_path / "missing.gbnf"], "missing.gbnf")]:
        res = run_hearth("run", model_path, "Hi", *args)
        assert res.returncode != 0 and needle in res.stderr.decode(), (args, res.stderr)
