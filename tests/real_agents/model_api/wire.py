"""What passes between the HTTP server and a dialect: the request, the answer (one JSON
document, or a stream of server-sent events), and the `Dialect` protocol itself."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tests.real_agents.model_api.scenario import Conversation, Refusal, Reply

Json = dict[str, Any]
PROMPT_LOGGED = 2000  # characters of the prompt in the request log (the body is whole)


@dataclass(frozen=True)
class ApiRequest:
    method: str
    path: str  # without the query string
    query: str
    body: Json


@dataclass(frozen=True)
class Event:
    """One server-sent event: an optional `event:` name and its `data:` (JSON or text)."""

    name: str | None
    data: Json | str

    def encode(self) -> bytes:
        data = self.data if isinstance(self.data, str) else json.dumps(self.data)
        head = f"event: {self.name}\n" if self.name else ""
        return f"{head}data: {data}\n\n".encode()


@dataclass
class Answer:
    status: int = 200
    document: Json | None = None  # a JSON answer ...
    events: Iterable[Event] = ()  # ... or, when there is no document, an event stream
    pace: float | None = None  # seconds between events; None: the server's default
    headers: list[tuple[str, str]] = field(default_factory=list)
    log: Json = field(default_factory=dict)  # what the request log says of this exchange


class Dialect(Protocol):
    """One model API. `answer` returns None for a request that is not its own."""

    name: str

    def answer(self, request: ApiRequest) -> Answer | None: ...


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:20]


def pieces(text: str, size: int = 32) -> list[str]:
    """A tool call's JSON arguments in the fragments a model streams them in."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def arguments_json(arguments: dict[str, Any] | str) -> str:
    """A function tool's arguments as JSON (a freeform input becomes `{"input": ...}`)."""
    return json.dumps(arguments if isinstance(arguments, dict) else {"input": arguments})


def exchange_log(conversation: Conversation, move: Reply | Refusal, body: Json) -> Json:
    """The request log's account of one request and the scenario's answer to it."""
    entry: Json = {
        "kind": move.scenario,
        "prompt": conversation.prompt[:PROMPT_LOGGED],
        "tools": list(conversation.tools),
        "results": len(conversation.tool_results),
        "model": body.get("model"),
        "stream": body.get("stream"),
    }
    if isinstance(move, Reply):
        entry.update(step=move.step, reply="".join(move.text),
                     calls=[{"name": c.name, "arguments": c.arguments} for c in move.calls])
    else:
        entry.update(status=move.status)
    return {**entry, "body": body}  # last: the rest of a line stays readable


def text_parts(content: Any, kinds: tuple[str, ...] = ("text", "input_text", "output_text")
               ) -> list[str]:
    """The text of a message's content: a string, or a list of typed parts."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    found = []
    for part in content:
        if isinstance(part, str):
            found.append(part)
        elif isinstance(part, dict) and part.get("type") in kinds:
            found.append(str(part.get("text", "")))
    return found
