"""One NDJSON line as JSON, within budgets and strictly: its structure measured before it
is decoded (how many values, how deep), decoded without NaN or Infinity, a message
encoded as one line (a lone surrogate escaped), and which request the head of an
unreadable line began or answered. Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal, NoReturn

from louise.acp.errors import ProtocolErrorKind

Kind = ProtocolErrorKind


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)
decode = _decoder.decode
# The C scanner alone, for the fast path: `decode` adds two regex passes per line.
scan: Callable[[str, int], tuple[Any, int]] = _decoder.scan_once  # type: ignore[attr-defined]
_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_dumps_ascii = json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_CLOSE_AS_OPEN = bytes.maketrans(b"{}", b"[]")
# The start of a line we could not read may still name the request it began or answered.
_JSONRPC = rb'(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'

# The two patterns are for lines the fast path refuses: compiled (and cached by `re`) on
# first use, not at the start of every process that reads ACP (~2 ms).
# A JSON string, possessive so a long one costs one pass and no backtracking.
_STRING = rb'"(?:[^"\\]++|\\.)*+"'
# The head of an unreadable line: the request's id, and what the line was.
_HEAD = (rb'\s*\{\s*' + _JSONRPC + rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,256}")\s*,\s*'
         + _JSONRPC + rb'"(method|result|error)"\s*:')


def encode_line(message: dict[str, Any]) -> bytes:
    try:
        return _dumps(message).encode() + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate (JSON lets the agent send "\ud800"): escaped, it is valid JSON.
        return _dumps_ascii(message).encode() + b"\n"


def _depth_exceeds(skeleton: bytes, limit: int) -> bool:
    """Whether the brackets of `skeleton` (strings already removed) nest deeper than
    `limit`. Each pass deletes the innermost pairs, so passes until empty = depth."""
    brackets = skeleton.translate(_CLOSE_AS_OPEN, _NOT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):
            return False  # unbalanced: not JSON, and the decoder will say so
        brackets = shorter
    return bool(brackets)


def structure_problem(line: bytes, max_values: int, max_depth: int
                      ) -> tuple[ProtocolErrorKind, str] | None:
    """Why `line` is not to be decoded: more than `max_values` JSON values, or nested
    deeper than `max_depth` (strings do not count); None when it is within both."""
    skeleton = re.sub(_STRING, b"0", line, flags=re.DOTALL)
    opens = skeleton.count(b"[") + skeleton.count(b"{")
    values = opens + skeleton.count(b",")
    if values > max_values:
        return Kind.TOO_LARGE, f"{values} JSON values or more (limit {max_values})"
    if opens > max_depth and _depth_exceeds(skeleton, max_depth):
        return Kind.TOO_DEEP, f"nested deeper than {max_depth} levels"
    return None


_PARTS: dict[bytes, Literal["method", "result", "error"]] = {
    b"method": "method", b"result": "result", b"error": "error"}


def request_named(head: bytes) -> tuple[Any, Literal["method", "result", "error"]] | None:
    """The id of the request the first bytes of a line began (`method`) or answered
    (`result`, `error`), when they say so."""
    match = re.compile(_HEAD).match(head, 0, 1024)
    if match is None:
        return None
    try:
        request_id = json.loads(match[1])
    except ValueError:
        return None
    return request_id, _PARTS[match[2]]
