"""What the router's parts share: where a message goes (`Out`), the JSON-RPC shapes the
host writes itself, the methods it knows by name. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

AGENT: Literal["agent"] = "agent"
HOST: Literal["host"] = "host"
Target = int | Literal["agent", "host"]
Message = dict[str, Any]

PERMISSION_METHOD = "session/request_permission"
ANSWERED_METHOD = "_louise/permission_answered"
CANCEL_REQUEST = "$/cancel_request"
TURN_ENDED_METHOD = "_louise/turn_ended"
# The host's own extension methods: front ends act on them (an answer "from another
# window", a turn's end), so none may come from an agent behind the host.
HOST_METHOD_PREFIX = "_louise/"
CANCELLED: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
# JSON-RPC errors the host answers with itself.
INTERNAL = -32603
NOT_ANSWERED = -32000
METHOD_NOT_FOUND = -32601
REQUEST_CANCELLED = -32800

# The automatic answer for a permission request nobody is there to answer: its result
# (`{"outcome": ...}`) or None to wait. Called with the request's params, the session's
# working directory and what the session's updates said of its tool call (or None).
AutoAnswer = Callable[[dict[str, Any], str | None, dict[str, Any] | None],
                      dict[str, Any] | None]


@dataclass(frozen=True, slots=True)
class Out:
    """One message for one place: a front end (by id), the agent, or the host itself (an
    agent request the host answers)."""

    to: Target
    message: Message


def error(request_id: Any, code: int, message: str) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def result(request_id: Any, value: Any) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def notification(method: str, params: dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def is_host_method(method: Any) -> bool:
    """Whether `method` is one only the host itself sends (`_louise/...`)."""
    return isinstance(method, str) and method.startswith(HOST_METHOD_PREFIX)
