"""What every raw fake agent speaks on stdio: NDJSON JSON-RPC 2.0, one object a line,
flushed at once, written by hand as real agents put it on the wire (not through louise's
code under test). Standard library only. A fake starts as a script, some with
`python -P`, which leaves its directory off `sys.path`: each puts it there before it
imports this module."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

_write = threading.Lock()  # some fakes answer from more than one thread


def send(*messages: Any) -> None:
    """The messages in one write (they reach the client together), flushed."""
    with _write:
        sys.stdout.write("".join(json.dumps(message) + "\n" for message in messages))
        sys.stdout.flush()


def result(request_id: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def not_found(request_id: Any) -> dict[str, Any]:
    """What an agent answers a method it does not have."""
    return error(request_id, -32601, "Method not found")


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def update(session_id: Any, body: dict[str, Any]) -> dict[str, Any]:
    """A `session/update` notification."""
    return notification("session/update", {"sessionId": session_id, "update": body})


def incoming(skip_unreadable: bool = False) -> Iterator[tuple[dict[str, Any], Any, Any, Any]]:
    """Each message from the client, in order: (message, method, id, params); blank lines
    skipped, and with `skip_unreadable` lines that are no JSON object (else they raise,
    failing the fake loudly)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            if not skip_unreadable:
                raise
            print(f"fake agent: skipped an unreadable {len(line)}-byte line", file=sys.stderr)
            continue
        if not isinstance(message, dict):
            if skip_unreadable:
                continue
            raise ValueError(f"not a JSON object: {line[:80]!r}")
        yield message, message.get("method"), message.get("id"), message.get("params") or {}
