"""OpenAI's chat shapes (https://platform.openai.com/docs/api-reference/chat):
messages in, ``chat.completion`` and ``chat.completion.chunk`` objects out."""

from __future__ import annotations

import time
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple

from .errors import InvalidArgumentError


def _content(message: Mapping[str, Any]) -> str:
    """A message's text: a str, None, or a list of text parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise InvalidArgumentError("a message's content must be a str or a list of {'type': 'text', 'text': ...} parts", 1)


def pairs(messages: Sequence[Mapping[str, Any]]) -> List[Tuple[str, str]]:
    """(role, content) pairs of OpenAI-style messages."""
    if isinstance(messages, (str, bytes)) or not messages:
        raise InvalidArgumentError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts", 1)
    out = []
    for m in messages:
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise InvalidArgumentError(f"each message needs a 'role' str, got {m!r}", 1)
        out.append((m["role"], _content(m)))
    return out


class Reply:
    """Builds the OpenAI objects of one chat request from its pieces."""

    def __init__(self, request_id: int, model: str) -> None:
        self.id = f"chatcmpl-{request_id}"
        self.model = model
        self.created = int(time.time())
        self.text: List[str] = []
        self.finish = None
        self.n_prompt = self.n_generated = 0
        self.started = False

    def add(self, piece: Any) -> None:
        self.text.append(piece.text)
        self.finish = piece.finish
        self.n_prompt, self.n_generated = piece.n_prompt, piece.n_generated

    def _object(self, kind: str, choice: Dict[str, Any]) -> Dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model, "choices": [choice]}

    def completion(self) -> Dict[str, Any]:
        """The ``chat.completion`` object of the whole reply."""
        out = self._object("chat.completion", {
            "index": 0, "message": {"role": "assistant", "content": "".join(self.text)},
            "logprobs": None, "finish_reason": self.finish})
        out["usage"] = {"prompt_tokens": self.n_prompt, "completion_tokens": self.n_generated,
                        "total_tokens": self.n_prompt + self.n_generated}
        return out

    def chunks(self, piece: Any) -> Iterator[Dict[str, Any]]:
        """The ``chat.completion.chunk`` objects for one piece: the role
        first, then each text, then the finish reason with an empty delta."""
        self.add(piece)
        if not self.started:
            self.started = True
            yield self._object("chat.completion.chunk", {"index": 0, "delta": {"role": "assistant", "content": ""},
                                                         "logprobs": None, "finish_reason": None})
        if piece.text:
            yield self._object("chat.completion.chunk", {"index": 0, "delta": {"content": piece.text},
                                                         "logprobs": None, "finish_reason": None})
        if piece.finish:
            yield self._object("chat.completion.chunk", {"index": 0, "delta": {}, "logprobs": None,
                                                         "finish_reason": piece.finish})
