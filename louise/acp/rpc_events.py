"""The events `RpcState` turns an agent's messages into: values, never changed once made.

Not frozen: a frozen dataclass costs 2.5 times as much to make, and one Notification is
made per streamed chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from louise.acp.errors import ProtocolErrorKind, RpcError

RequestId = int | str | None


@dataclass(slots=True)
class Notification:
    """A JSON-RPC notification from the peer."""

    method: str
    params: Any


@dataclass(slots=True)
class Request:
    """The agent asks; answer with `RpcState.respond` or `respond_error`."""

    request_id: RequestId
    method: str
    params: Any


@dataclass(slots=True)
class Response:
    """The answer to one of our requests."""

    request_id: int
    method: str
    result: Any


@dataclass(slots=True)
class ErrorResponse:
    """One of our requests failed: the agent's error, or its unreadable answer."""

    request_id: int
    method: str
    error: RpcError


@dataclass(slots=True)
class CancelRequest:
    """`$/cancel_request` for an agent request that is still unanswered."""

    request_id: RequestId


@dataclass(slots=True)
class RejectRequest:
    """A request we do not take (bad or duplicate id, unreadable line): send
    `RpcState.reject(event)`. Its id is not in the inbound table."""

    request_id: RequestId
    error: RpcError


@dataclass(slots=True)
class ProtocolViolation:
    """A message the agent got wrong; it was dropped, the connection goes on."""

    kind: ProtocolErrorKind
    detail: str


Event = (
    Notification | Request | Response | ErrorResponse | CancelRequest | RejectRequest
    | ProtocolViolation
)
