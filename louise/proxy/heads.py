"""What the head of a dropped line says: was it a request (its id and method), an answer
(its id), or neither. Pure.

A line over the proxy's limit is never held whole: the framing keeps its first bytes
(`louise.acp.framing.HEAD_BYTES`). Those usually hold the envelope, since every ACP
library writes `jsonrpc`, `id` and `method` before `params` (or `result`), whatever the
order among them, so the members are read in any order, one complete value at a time,
up to the first one the head cuts off.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final, Literal

MAX_ID_CHARS: Final = 256  # a longer string id is not worth echoing
MAX_METHOD_CHARS: Final = 200

_decoder = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")

RequestId = int | str


@dataclass(frozen=True, slots=True)
class Head:
    """A dropped message as far as its head shows it. `kind` is `request` (it has a method
    or params and an id), `response` (a result or error and an id), `notification`
    (a method and no id before the head ends: it may still have one after) or `unknown`."""

    kind: Literal["request", "response", "notification", "unknown"]
    id: RequestId | None = None
    method: str | None = None


def _valid_id(value: object) -> bool:
    """JSON-RPC ids worth an answer: integers and (not too long) strings. null, bools,
    floats and structures name no request anyone waits for."""
    if type(value) is int:
        return True
    return type(value) is str and len(value) <= MAX_ID_CHARS


def _text(head: bytes) -> str:
    """The head as text, up to its first byte that is not UTF-8 (the cut may split a
    character; anything after a bad byte is not trusted)."""
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return head[: exc.start].decode("utf-8")


def _skip(text: str, at: int) -> int:
    """Past the JSON whitespace at `at`."""
    match = _SPACE.match(text, at)
    return match.end() if match is not None else at


def members(head: bytes) -> tuple[dict[str, Any], set[str]]:
    """The top-level members whose value the head holds whole, and the names of every
    member it starts (including the one it cuts off)."""
    text = _text(head)
    whole: dict[str, Any] = {}
    started: set[str] = set()
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return whole, started
    at += 1
    while True:
        at = _skip(text, at)
        if not text.startswith('"', at):
            break
        try:
            key, at = _decoder.raw_decode(text, at)
        except ValueError:
            break
        at = _skip(text, at)
        if not text.startswith(":", at):
            break
        started.add(key)
        at = _skip(text, at + 1)
        try:
            value, end = _decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            break
        at = _skip(text, end)
        if at == len(text):
            # The head ends here. A string, object, array or literal that decoded is
            # whole; a number may be the start of a longer one unless a space ended it.
            if at > end or type(value) not in (int, float):
                whole[key] = value
            break
        if not text.startswith((",", "}"), at):
            break
        whole[key] = value
        if text.startswith("}", at):
            break
        at += 1
    return whole, started


def read_head(head: bytes) -> Head:
    """What `head` (the first bytes of a dropped line) says the message was."""
    whole, started = members(head)
    request_id = whole.get("id")
    has_id = "id" in whole and _valid_id(request_id)
    method = whole.get("method")
    name = method[:MAX_METHOD_CHARS] if isinstance(method, str) else None
    if "method" in started or "params" in started:
        if has_id:
            return Head("request", request_id, name)
        if "id" not in started:
            return Head("notification", None, name)
        return Head("unknown", None, name)
    if has_id and ("result" in started or "error" in started):
        return Head("response", request_id)
    return Head("unknown")
