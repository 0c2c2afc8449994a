"""OpenAI's chat shapes (https://platform.openai.com/docs/api-reference/chat):
messages in, ``chat.completion`` and ``chat.completion.chunk`` objects out."""

from __future__ import annotations

import time
from typing import Any, Dict, Iterator, List, Mapping, Sequence

from ._structured import json_text
from .errors import InvalidArgumentError


def _check_content(message: Mapping[str, Any]) -> None:
    """A message's content must be a str, None, or a list of text parts."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        return
    raise InvalidArgumentError("a message's content must be a str or a list of {'type': 'text', 'text': ...} parts", 1)


def messages_json(messages: Sequence[Mapping[str, Any]]) -> str:
    """OpenAI-style messages as the JSON text the engine renders
    (``messages_json``): every field is passed on to the chat template, so
    an assistant's ``tool_calls`` and a tool's ``tool_call_id`` and ``name``
    reach it."""
    if isinstance(messages, (str, bytes)) or not messages:
        raise InvalidArgumentError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts", 1)
    for m in messages:
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise InvalidArgumentError(f"each message needs a 'role' str, got {m!r}", 1)
        _check_content(m)
    return json_text([dict(m) for m in messages])


class Reply:
    """Builds the OpenAI objects of one chat request from its pieces."""

    def __init__(self, request_id: int, model: str) -> None:
        self.id = f"chatcmpl-{request_id}"
        self.model = model
        self.created = int(time.time())
        self.text: List[str] = []
        self.calls: List[Dict[str, Any]] = []  # message.tool_calls, in the engine's order
        self.finish = None
        self.n_prompt = self.n_generated = 0
        self.started = False

    def add(self, piece: Any) -> None:
        self.text.append(piece.text)
        for index, call_id, name, arguments in piece.calls:
            if index == len(self.calls):  # a call's first delta
                self.calls.append({"id": call_id or "", "type": "function",
                                   "function": {"name": name or "", "arguments": ""}})
            self.calls[index]["function"]["arguments"] += arguments
        self.finish = piece.finish
        self.n_prompt, self.n_generated = piece.n_prompt, piece.n_generated

    def _object(self, kind: str, choice: Dict[str, Any]) -> Dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model, "choices": [choice]}

    def completion(self) -> Dict[str, Any]:
        """The ``chat.completion`` object of the whole reply: content None
        when the model only called tools."""
        text = "".join(self.text)
        message: Dict[str, Any] = {"role": "assistant", "content": None if self.calls and not text else text}
        if self.calls:
            message["tool_calls"] = self.calls
        out = self._object("chat.completion", {"index": 0, "message": message, "logprobs": None,
                                               "finish_reason": self.finish})
        out["usage"] = {"prompt_tokens": self.n_prompt, "completion_tokens": self.n_generated,
                        "total_tokens": self.n_prompt + self.n_generated}
        return out

    def chunks(self, piece: Any) -> Iterator[Dict[str, Any]]:
        """The ``chat.completion.chunk`` objects for one piece: the role
        first, then each text, each tool-call delta in a chunk of its own
        (``{"index", "id", "type", "function": {"name", "arguments"}}``, id,
        type and name only in a call's first), then the finish reason with an
        empty delta."""
        self.add(piece)
        if not self.started:
            self.started = True
            yield self._object("chat.completion.chunk", {"index": 0, "delta": {"role": "assistant", "content": ""},
                                                         "logprobs": None, "finish_reason": None})
        if piece.text:
            yield self._object("chat.completion.chunk", {"index": 0, "delta": {"content": piece.text},
                                                         "logprobs": None, "finish_reason": None})
        for index, call_id, name, arguments in piece.calls:
            delta: Dict[str, Any] = {"index": index}
            if call_id is not None:
                delta.update(id=call_id, type="function")
            delta["function"] = {"arguments": arguments} if name is None else {"name": name, "arguments": arguments}
            yield self._object("chat.completion.chunk", {"index": 0, "delta": {"tool_calls": [delta]},
                                                         "logprobs": None, "finish_reason": None})
        if piece.finish:
            yield self._object("chat.completion.chunk", {"index": 0, "delta": {}, "logprobs": None,
                                                         "finish_reason": piece.finish})
