"""OpenAI's fields that constrain what a model writes (response_format,
llama.cpp's grammar and json_schema) and the tool-calling fields (tools,
tool_choice), translated into what the engine takes (include/hearth.h:
``hearth_sampler_params.grammar`` / ``json_schema``,
``hearth_request_params.tools_json`` / ``tool_choice``). Only shapes are
checked here; the library compiles grammars and schemas and checks the tools,
and its one-line error names what is wrong."""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Sequence, Tuple, Union

from .errors import InvalidArgumentError

#: A JSON Schema: a dict (or True / False), its JSON text, or a pydantic model class.
Schema = Union[Mapping[str, Any], bool, str, type]
#: OpenAI's response_format dict, or a pydantic model class (its JSON Schema).
ResponseFormat = Union[Mapping[str, Any], type]
#: "auto", "none", "required", a function's name, or {"type": "function", "function": {"name": ...}}.
ToolChoice = Union[str, Mapping[str, Any]]

_ANY_OBJECT = '{"type": "object"}'  # response_format json_object: any JSON object


def json_text(value: Any) -> str:
    """JSON text of plain Python data, UTF-8 as given; TypeError for what JSON cannot hold, ValueError for NaN."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def schema_text(name: str, schema: Schema) -> str:
    """A JSON Schema as JSON text: a dict or bool is serialized, a str is
    taken as JSON text, a pydantic model class gives ``model_json_schema()``."""
    if isinstance(schema, type) and callable(getattr(schema, "model_json_schema", None)):
        schema = schema.model_json_schema()
    if isinstance(schema, str):
        return schema
    if isinstance(schema, (dict, bool)):
        return json_text(schema)
    raise InvalidArgumentError(f"{name} must be a JSON Schema (a dict, its JSON text or a pydantic model class), "
                               f"got {schema!r}", 1)


def _response_format_schema(response_format: Optional[ResponseFormat]) -> Optional[str]:
    """The JSON Schema text a response_format asks for; None for "text"."""
    if response_format is None:
        return None
    if isinstance(response_format, type):
        return schema_text("response_format", response_format)
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return _ANY_OBJECT
    if kind != "json_schema":
        raise InvalidArgumentError("response_format must be {'type': 'text' | 'json_object' | 'json_schema', ...} "
                                   f"or a pydantic model class, got {response_format!r}", 1)
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping) or "schema" not in spec:
        raise InvalidArgumentError("response_format['json_schema'] must be a dict with a 'schema' "
                                   "({'name': ..., 'schema': {...}, 'strict': True})", 1)
    return schema_text("response_format['json_schema']['schema']", spec["schema"])


def constraint(response_format: Optional[ResponseFormat], json_schema: Optional[Schema],
               grammar: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """(grammar, json_schema text) for the sampler from the three ways of
    constraining the text, of which at most one may be given."""
    schemas = [s for s in (_response_format_schema(response_format),
                           None if json_schema is None else schema_text("json_schema", json_schema)) if s is not None]
    if grammar is not None and not isinstance(grammar, str):
        raise InvalidArgumentError(f"grammar must be a str of GBNF rules (start rule 'root'), got {grammar!r}", 1)
    if len(schemas) + (grammar is not None) > 1:
        raise InvalidArgumentError("give one of response_format (json_object or json_schema), json_schema and grammar",
                                   1)
    return grammar, schemas[0] if schemas else None


def tools_json(tools: Optional[Sequence[Mapping[str, Any]]]) -> Optional[str]:
    """OpenAI's tool definitions as JSON text; None for no tools (None or [])."""
    if tools is None:
        return None
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise InvalidArgumentError("tools must be a list of {'type': 'function', 'function': {'name': ..., "
                                   "'parameters': {...}}} dicts, got " + repr(tools), 1)
    return json_text(list(tools)) if tools else None


def tool_choice_name(tool_choice: Optional[ToolChoice], tools: Optional[Sequence[Any]]) -> Optional[str]:
    """The engine's tool_choice: "auto", "none", "required" or a function's
    name (from OpenAI's {"type": "function", "function": {"name": ...}});
    None (the engine's "auto") when not given or when tools is []."""
    if tool_choice is None:
        return None
    function = tool_choice.get("function") if isinstance(tool_choice, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else tool_choice
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError("tool_choice must be 'auto', 'none', 'required', a function's name or "
                                   f"{{'type': 'function', 'function': {{'name': ...}}}}, got {tool_choice!r}", 1)
    if tools is None:
        raise InvalidArgumentError("tool_choice is only allowed when tools are given", 1)
    return name if tools else None
