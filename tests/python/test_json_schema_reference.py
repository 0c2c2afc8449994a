"""JSON Schema to GBNF (src/grammar/json_schema*.c) against an independent
reference, the `jsonschema` package. For each schema (hand-written ones and
pydantic models' model_json_schema()), candidate JSON texts are generated:
instances of the schema from a small random generator for the supported
subset and hand-written ones, mutations of them (a required key dropped, a
wrong type, an extra key, a number out of range, a string too long, a bad
format, keys reordered, text edits), each serialized with json.dumps in
several styles. tests/grammar_check --schema (built by tests/CMakeLists.txt)
says which texts the schema's grammar accepts. Asserted:
- soundness: every accepted text parses and is valid per jsonschema (with
  its format checker for date, time, date-time, uuid);
- completeness in the model's style: every generated or hand-written valid
  instance, with keys in the declared order, is accepted as json.dumps
  writes it with default separators, compact, indent=2, and ensure_ascii off.
(Valid texts outside the subset, such as extra keys where additionalProperties
is absent or keys out of the declared order, may be rejected.) Also: every
keyword outside the subset fails with an error that names it."""
import copy
import json
import random
import string
import subprocess
import uuid as uuidlib
from datetime import date, datetime
from enum import Enum
from typing import Dict, List, Literal, Optional, Tuple, Union

import jsonschema
import pytest

from conftest import grammar_check_bin


def run_check(tmp_path, schema, texts):
    """(returncode, [bool per text], stderr)."""
    f = tmp_path / "schema.json"
    f.write_text(json.dumps(schema))
    lines = "".join(json.dumps(t) + "\n" for t in texts)
    r = subprocess.run([str(grammar_check_bin()), "--schema", str(f)], input=lines.encode(), capture_output=True,
                       timeout=300)
    out = r.stdout.decode().split()
    return r.returncode, [o == "1" for o in out], r.stderr.decode()


# ----------------------------------------------------------------- schemas

TREE = {"$defs": {"Node": {"type": "object", "properties": {
    "value": {"type": "integer"},
    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}, "maxItems": 3}},
    "required": ["value"]}}, "$ref": "#/$defs/Node"}

SCHEMAS = [
    ("nested-object", {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "address": {"type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}, "required": ["city"]}},
        "required": ["name", "address"]},
     [{"name": "Ann", "address": {"city": "Oslo"}}, {"name": "", "age": 150, "address": {"street": "s", "city": "c"}}]),
    ("array-of-objects", {"type": "array", "minItems": 1, "maxItems": 4, "items": {
        "type": "object", "properties": {"id": {"type": "integer"}, "ok": {"type": "boolean"}},
        "required": ["id", "ok"], "additionalProperties": False}},
     [[{"id": 1, "ok": True}], [{"id": -3, "ok": False}, {"id": 0, "ok": True}]]),
    ("enums", {"type": "object", "properties": {
        "color": {"enum": ["red", "green", "bl\"ue", "\u00e9t\u00e9"]},
        "level": {"enum": [1, 2, 3.5, None, True]},
        "fixed": {"const": {"a": [1, "x"], "b": None}}},
        "required": ["color", "level"]},
     [{"color": "bl\"ue", "level": None}, {"color": "\u00e9t\u00e9", "level": 3.5, "fixed": {"a": [1, "x"], "b": None}}]),
    ("all-optional", {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "null"},
                                     "d": {"type": "boolean"}}},
     [{}, {"d": True}, {"a": 1, "d": False}, {"b": "x", "c": None}]),
    ("optional-required-mix", {"type": "object", "properties": {
        "o1": {"type": "integer"}, "r1": {"type": "string"}, "o2": {"type": "number"}, "r2": {"type": "boolean"},
        "o3": {"type": "null"}}, "required": ["r1", "r2"]},
     [{"r1": "a", "r2": True}, {"o1": 1, "r1": "a", "o2": 1.5, "r2": False, "o3": None}]),
    ("integers", {"type": "object", "properties": {
        "small": {"type": "integer", "minimum": -15, "maximum": 15},
        "big": {"type": "integer", "minimum": 1000, "maximum": 123456},
        "neg": {"type": "integer", "maximum": -7},
        "pos": {"type": "integer", "minimum": 42},
        "frac": {"type": "integer", "minimum": 0.5, "maximum": 9.5}},
        "required": ["small", "big", "neg", "pos", "frac"]},
     [{"small": -15, "big": 123456, "neg": -7, "pos": 42, "frac": 1}]),
    ("numbers", {"type": "object", "properties": {
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "temp": {"type": "number", "minimum": -40, "maximum": 60},
        "any": {"type": "number"}, "under": {"type": "number", "maximum": -2}},
        "required": ["ratio", "temp", "any", "under"]},
     [{"ratio": 1, "temp": -40.0, "any": 1e-07, "under": -2}, {"ratio": 0.25, "temp": 59.999, "any": -12345.678,
                                                              "under": -1000.5}]),
    ("strings", {"type": "object", "properties": {
        "short": {"type": "string", "minLength": 2, "maxLength": 5},
        "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{2,4}$", "examples": ["ABC-12", "XYZ-9999"]},
        "path": {"type": "string", "pattern": "^(/[a-z0-9_.]+)+/?$", "examples": ["/usr/lib/", "/a.b_c"]},
        "quoted": {"type": "string", "pattern": "^\"[^\"\\\\]*\"$", "examples": ["\"hi there\"", "\"\""]},
        "line": {"type": "string", "pattern": "^.{0,10}$", "examples": ["any chars", "\u00e9\t\u00e8"]}},
        "required": ["short", "code", "path", "quoted", "line"]},
     [{"short": "\U0001F600\U0001F600", "code": "ABC-123", "path": "/x", "quoted": "\"a\"", "line": ""}]),
    ("formats", {"type": "object", "properties": {
        "d": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "time"},
        "dt": {"type": "string", "format": "date-time"}, "u": {"type": "string", "format": "uuid"}},
        "required": ["d", "t", "dt", "u"]},
     [{"d": "2024-02-29", "t": "23:59:59.999Z", "dt": "2000-02-29T00:00:00+05:30",
       "u": "123e4567-e89b-12d3-a456-426614174000"}]),
    ("any-of", {"type": "object", "properties": {"v": {"anyOf": [
        {"type": "integer", "minimum": 0, "maximum": 9}, {"type": "string", "maxLength": 3}, {"type": "null"},
        {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}]}}, "required": ["v"]},
     [{"v": 9}, {"v": "abc"}, {"v": None}, {"v": [True, False]}]),
    ("type-list", {"type": ["string", "integer", "null"], "maxLength": 4, "minimum": -1, "maximum": 1},
     ["abcd", -1, None]),
    ("tree", TREE, [{"value": 1, "children": [{"value": 2}, {"value": 3, "children": []}]}]),
    ("tuple", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}],
               "minItems": 1},
     [["a"], ["a", 1], ["a", 1, True]]),
    ("tuple-more", {"type": "array", "prefixItems": [{"const": "cmd"}], "items": {"type": "number"},
                    "minItems": 2, "maxItems": 4},
     [["cmd", 1], ["cmd", 1.5, 2, -3]]),
    ("additional-true", {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
                         "additionalProperties": True},
     [{"id": 1}, {"id": 1, "extra": [1, {"x": None}], "more": "s"}]),
    ("additional-schema", {"type": "object", "properties": {"name": {"type": "string"}},
                           "additionalProperties": {"type": "integer", "minimum": 0}},
     [{}, {"name": "n", "a": 1, "b": 2}, {"x": 0}]),
    ("additional-false", {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
     [{}, {"a": 5}]),
    ("bare-object", {"type": "object"}, [{}, {"k": [1, 2], "\u00e9": {"n": None}}]),
    ("all-of", {"$defs": {"Base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
                "allOf": [{"$ref": "#/$defs/Base"},
                          {"type": "object", "properties": {"tag": {"type": "string", "maxLength": 3}},
                           "required": ["tag"]}]},
     [{"id": 1, "tag": "abc"}]),
    ("any", {}, [None, 1, "s", [1, {"a": True}], {"k": -0.5}]),
]


def pydantic_schemas():
    pydantic = pytest.importorskip("pydantic")
    BaseModel, Field = pydantic.BaseModel, pydantic.Field

    class Color(str, Enum):
        red = "red"
        green = "green"

    class Address(BaseModel):
        street: str
        zip: str = Field(pattern=r"^\d{5}$", examples=["12345"])

    class User(BaseModel):
        id: int = Field(ge=1, le=100000)
        email: Optional[str] = None
        tags: List[str] = []
        address: Address
        color: Color = Color.red
        birthday: Optional[date] = None
        created: datetime
        uid: uuidlib.UUID
        score: float = Field(ge=0, le=100)
        pair: Tuple[int, str]
        meta: Dict[str, int] = {}

    class Tree(BaseModel):
        value: int
        children: List["Tree"] = Field(default=[], max_length=3)

    class Cat(BaseModel):
        kind: Literal["cat"]
        lives: int = Field(ge=0, le=9)

    class Dog(BaseModel):
        kind: Literal["dog"]
        good: bool

    class Pet(BaseModel):
        pet: Union[Cat, Dog]
        name: str = Field(min_length=1, max_length=8)

    return [("pydantic-" + m.__name__.lower(), m.model_json_schema(), []) for m in (User, Tree, Pet)]


# ---------------------------------------------------- instance generation

ALPHABET = "aZ0 _-\"\\/\n\t\u00e9\u4e2d\U0001F600\x01\x7f"
KEY_ALPHABET = string.ascii_letters + "_"


def resolve(root, s):
    while isinstance(s, dict) and "$ref" in s:
        node = root
        for part in s["$ref"][2:].split("/") if s["$ref"] != "#" else []:
            node = node[part.replace("~1", "/").replace("~0", "~")]
        s = node
    return s


def merged_all_of(root, s):
    props, required = {}, []
    for part in [s] + [resolve(root, p) for p in s.get("allOf", [])]:
        props.update(part.get("properties", {}))
        required += part.get("required", [])
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def random_string(rng, lo=0, hi=6):
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(lo, hi)))


def random_any(rng, depth=0):
    k = rng.randrange(7 if depth < 2 else 5)
    if k == 0:
        return None
    if k == 1:
        return rng.choice([True, False])
    if k == 2:
        return rng.randint(-1000, 1000)
    if k == 3:
        return rng.uniform(-1e6, 1e6)
    if k == 4:
        return random_string(rng)
    if k == 5:
        return [random_any(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {random_string(rng, 1, 4): random_any(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def random_date(rng):
    return date.fromordinal(rng.randint(1, date(9999, 12, 31).toordinal())).isoformat()


def random_time(rng):
    t = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    if rng.random() < 0.5:
        t += "." + "".join(rng.choice(string.digits) for _ in range(rng.randint(1, 6)))
    if rng.random() < 0.5:
        return t + "Z"
    return t + f"{rng.choice('+-')}{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"


def gen(root, s, rng, depth=0):
    """A random instance of schema s in the supported subset, keys in the
    declared order."""
    s = resolve(root, s)
    if s is True or s == {} or (isinstance(s, dict) and set(s) <= {"title", "description", "default"}):
        return random_any(rng)
    if "const" in s:
        return copy.deepcopy(s["const"])
    if "enum" in s:
        return copy.deepcopy(rng.choice(s["enum"]))
    for kw in ("anyOf", "oneOf"):
        if kw in s:
            return gen(root, rng.choice(s[kw]), rng, depth + 1)
    if "allOf" in s:
        return gen(root, merged_all_of(root, s), rng, depth + 1)
    t = s.get("type")
    if isinstance(t, list):
        t = rng.choice(t)
    if t is None:
        t = "object" if "properties" in s else "array" if "items" in s or "prefixItems" in s else None
    if t == "object":
        obj = {}
        props = s.get("properties", {})
        for k, sub in props.items():
            if k in s.get("required", []) or (depth < 4 and rng.random() < 0.5):
                obj[k] = gen(root, sub, rng, depth + 1)
        ap = s.get("additionalProperties", "properties" not in s)
        if ap is not False and depth < 4:
            for _ in range(rng.randint(0, 2)):
                k = "".join(rng.choice(KEY_ALPHABET) for _ in range(rng.randint(1, 5)))
                if k not in props and k not in obj:
                    obj[k] = random_any(rng, 1) if ap is True else gen(root, ap, rng, depth + 1)
        return obj
    if t == "array":
        prefix = s.get("prefixItems", [])
        items = s.get("items", None if prefix else True)
        lo, hi = s.get("minItems", 0), s.get("maxItems", None)
        if prefix:
            n_max = len(prefix) + (3 if items not in (None, False) else 0)
        else:
            n_max = lo + (3 if depth < 3 else 0)
        if hi is not None:
            n_max = min(n_max, hi)
        n = rng.randint(min(lo, n_max), n_max)
        return [gen(root, prefix[i] if i < len(prefix) else items, rng, depth + 1) for i in range(n)]
    if t == "string":
        if "examples" in s and "pattern" in s:
            return rng.choice(s["examples"])
        fmt = s.get("format")
        if fmt == "date":
            return random_date(rng)
        if fmt == "time":
            return random_time(rng)
        if fmt == "date-time":
            return random_date(rng) + "T" + random_time(rng)
        if fmt == "uuid":
            u = str(uuidlib.UUID(int=rng.getrandbits(128)))
            return u.upper() if rng.random() < 0.3 else u
        lo = s.get("minLength", 0)
        return random_string(rng, lo, s.get("maxLength", lo + 6))
    if t == "integer":
        lo = s.get("minimum", -10**6)
        hi = s.get("maximum", 10**6)
        lo, hi = int(-(-lo // 1)), int(hi // 1)
        return rng.choice([lo, hi, rng.randint(lo, hi)])
    if t == "number":
        if "minimum" in s or "maximum" in s:
            lo, hi = s.get("minimum", -1e6), s.get("maximum", 1e6)
            return rng.choice([lo, hi, float(lo), round(rng.uniform(lo, hi), 3)])
        return rng.choice([rng.uniform(-1e6, 1e6), rng.randint(-99, 99), rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)])
    if t == "boolean":
        return rng.choice([True, False])
    if t == "null":
        return None
    return random_any(rng)


# -------------------------------------------------------------- mutations

def paths(x, prefix=()):
    yield prefix
    if isinstance(x, dict):
        for k, v in x.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from paths(v, prefix + (i,))


def replace_at(x, path, fn):
    if not path:
        return fn(x)
    x = copy.deepcopy(x)
    node = x
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = fn(node[path[-1]])
    return x


def mutate_value(rng, v):
    if isinstance(v, bool) or v is None:
        return rng.choice([0, "true", [], not v if isinstance(v, bool) else False])
    if isinstance(v, int):
        return rng.choice([v + 1, v - 1, v * 1000 + 7, -v - 1, float(v) + 0.5, str(v), None])
    if isinstance(v, float):
        return rng.choice([v + 1, v - 1, v * 1e6, -v, str(v), 1e300])
    if isinstance(v, str):
        tweaks = [v + rng.choice(ALPHABET), v[1:], v[:-1], v + "xxxxxxxxxx", 7, None, v.replace("-", "/"),
                  "2023-02-30", "24:00:00Z", v.upper(), "9" + v]
        return rng.choice(tweaks)
    if isinstance(v, list):
        return rng.choice([v + [rng.choice([1, "x", None, v[0] if v else {}])], v[1:], v[::-1], {}, "[]"])
    if isinstance(v, dict):
        out = dict(v)
        op = rng.randrange(3)
        if op == 0 and out:
            out.pop(rng.choice(list(out)))
        elif op == 1:
            out[rng.choice(["extra", "zz", "id", "value"])] = rng.choice([1, "s", None])
        else:
            items = list(out.items())
            rng.shuffle(items)
            out = dict(items)
        return out
    return v


def mutations(rng, x, n):
    out = []
    all_paths = list(paths(x))
    for _ in range(n):
        p = rng.choice(all_paths)
        out.append(replace_at(x, p, lambda v: mutate_value(rng, v)))
    return out


def styles(x):
    """The texts of x as json.dumps writes them; the first four are the
    model-like ones."""
    return [json.dumps(x), json.dumps(x, separators=(",", ":")), json.dumps(x, indent=2),
            json.dumps(x, ensure_ascii=False), json.dumps(x, indent=4), json.dumps(x, indent="\t")]


def text_edits(rng, t, n):
    out = []
    for _ in range(n):
        i = rng.randrange(len(t) + 1)
        op = rng.randrange(3)
        if op == 0:
            out.append(t[:i] + rng.choice(' ,:"{}[]0a\\\n') + t[i:])
        elif op == 1 and t:
            out.append(t[:max(i - 1, 0)] + t[i:])
        else:
            out.append(t + rng.choice([" ", "\n", "}", "x"]))
    return out


@pytest.mark.parametrize("name,schema,valid", [pytest.param(*s, id=s[0]) for s in SCHEMAS])
def test_schema_against_jsonschema(tmp_path, name, schema, valid):
    check_schema(tmp_path, name, schema, valid)


def test_pydantic_models(tmp_path):
    for name, schema, valid in pydantic_schemas():
        check_schema(tmp_path, name, schema, valid)


def check_schema(tmp_path, name, schema, valid):
    rng = random.Random(name)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for v in valid:
        assert validator.is_valid(v), f"{name}: hand-written instance {v!r} is not valid"
    instances = list(valid) + [gen(schema, schema, rng) for _ in range(60)]
    for inst in instances:
        assert validator.is_valid(inst), f"{name}: the generator made an invalid instance {inst!r}: " + \
            "; ".join(e.message for e in validator.iter_errors(inst))
    texts, must_accept = [], []
    for inst in instances:
        for i, t in enumerate(styles(inst)):
            texts.append(t)
            must_accept.append(i < 4)
    for inst in instances[:30]:
        for m in mutations(rng, inst, 6):
            texts += styles(m)[:3]
            must_accept += [False] * 3
        texts += text_edits(rng, json.dumps(inst), 4)
        must_accept += [False] * 4
    rc, accepted, err = run_check(tmp_path, schema, texts)
    assert rc == 0, f"{name}: grammar_check failed: {err}"
    assert len(accepted) == len(texts)
    for t, acc, must in zip(texts, accepted, must_accept):
        if acc:
            try:
                value = json.loads(t)
            except ValueError:
                pytest.fail(f"{name}: the grammar accepts a text that is not JSON: {t!r}")
            errors = [e.message for e in validator.iter_errors(value)]
            assert not errors, f"{name}: the grammar accepts an invalid text {t!r}: {errors}"
        elif must:
            pytest.fail(f"{name}: the grammar rejects a valid text in the model's style: {t!r}")
    # the mutations must have found rejected texts (the check is not vacuous)
    assert sum(1 for a in accepted if not a) > 0


UNSUPPORTED = ["not", "if", "then", "else", "multipleOf",
               "patternProperties", "dependentRequired", "dependentSchemas", "minProperties", "maxProperties",
               "uniqueItems", "contains", "minContains", "propertyNames", "unevaluatedItems",
               "unevaluatedProperties", "$anchor", "$dynamicRef", "contentEncoding"]


@pytest.mark.parametrize("kw", UNSUPPORTED)
def test_unsupported_keyword_is_named(tmp_path, kw):
    schema = {"type": "object", "properties": {"field": {"type": "integer", kw: 1}}}
    rc, _, err = run_check(tmp_path, schema, [])
    assert rc == 2
    assert f"json_schema at /properties/field: unsupported keyword '{kw}'" in err


@pytest.mark.parametrize("schema,message", [
    ({"type": "string", "format": "email"}, "unsupported format 'email'"),
    ({"type": "string", "pattern": "(?=x)x"}, "a lookahead"),
    ({"type": "string", "pattern": "(a)\\1"}, "a backreference"),
    ({"$ref": "#/$defs/nope"}, "$ref '#/$defs/nope' not found"),
    ({"type": "text"}, "unknown type 'text'"),
    ({"type": "array", "minItems": 2, "maxItems": 1}, "minItems 2 is greater than maxItems 1"),
])
def test_errors_are_named(tmp_path, schema, message):
    rc, _, err = run_check(tmp_path, schema, [])
    assert rc == 2 and message in err
