"""Typed errors of the ACP client core.

`RpcError` is a JSON-RPC error, either received from the agent or raised by one of our
handlers to be sent back. Its `data` is kept for logs and never shown raw to a person.
Blame is always clear (as in h11): `ProtocolError` is the agent's fault and never stops the
connection; `LocalProtocolError` is ours (louise misused the protocol state).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002


class AcpError(Exception):
    """Base class of every error the ACP core raises."""


class RpcError(AcpError):
    """A JSON-RPC error object (code, message, optional data)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        # What a person may read (a handler that words an exception with str() shows
        # this): the reason, never the protocol's code or its stock phrases.
        return self.reason

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def method_not_found(cls, method: str) -> RpcError:
        return cls(METHOD_NOT_FOUND, "Method not found", {"method": method})

    @classmethod
    def invalid_params(cls, detail: str) -> RpcError:
        return cls(INVALID_PARAMS, f"Invalid params: {detail}")

    @classmethod
    def cancelled(cls) -> RpcError:
        return cls(REQUEST_CANCELLED, "Request cancelled")

    @property
    def is_auth_required(self) -> bool:
        return self.code == AUTH_REQUIRED

    @property
    def reason(self) -> str:
        """The agent's own words: its message, and the detail its `data` carries when the
        message alone says nothing (agents built on the ACP TypeScript SDK answer a failed
        handler with "Internal error" and the reason in `data.details`). JSON-RPC's stock
        phrases ("Internal error", "Method not found", …) are not words for a person: they
        are dropped before the agent's own, or said plainly when there is nothing else.
        One line, within MAX_REASON_CHARS; `data` itself is never shown raw."""
        message = _without_stock_phrase(" ".join(str(self.message).split()))
        detail = _detail(self.data)
        if detail and detail.lower() not in message.lower():
            message = f"{message}: {detail}" if message else detail
        if not message:
            message = PLAIN_WORDS.get(self.code, "it failed without saying why")
        if len(message) > MAX_REASON_CHARS:
            message = message[:MAX_REASON_CHARS - 1] + "…"
        return message


MAX_REASON_CHARS = 500
DETAIL_KEYS = ("details", "detail", "reason", "message")
# JSON-RPC's stock messages, and what a person reads instead when nothing else is said.
STOCK_PHRASES = ("internal error", "method not found", "invalid params", "invalid request",
                 "parse error", "server error", "request cancelled")
PLAIN_WORDS = {
    INTERNAL_ERROR: "it failed without saying why",
    METHOD_NOT_FOUND: "it does not support this",
    INVALID_PARAMS: "it did not accept the request",
    INVALID_REQUEST: "it could not read the request",
    PARSE_ERROR: "it could not read the request",
    REQUEST_CANCELLED: "cancelled",
}


def _without_stock_phrase(message: str) -> str:
    """`message` without a JSON-RPC stock phrase it starts with ("Internal error: x" is
    "x"); a message that is only that phrase becomes empty."""
    lowered = message.lower()
    for phrase in STOCK_PHRASES:
        if lowered.startswith(phrase):
            return message[len(phrase):].lstrip(" :-—,.").strip()
    return message


def _detail(data: Any) -> str:
    """A person-readable detail of an error's `data`: a string, or the first string of
    its DETAIL_KEYS; control characters folded to spaces."""
    found = data if isinstance(data, str) else next(
        (data[key] for key in DETAIL_KEYS if isinstance(data, dict)
         and isinstance(data.get(key), str)), "")
    text = "".join(c if c.isprintable() else " " for c in str(found)[:MAX_REASON_CHARS * 2])
    return " ".join(text.split())


class ConnectionClosed(AcpError):
    """The agent's process exited or its stdout closed; carries the reason for the person."""

    def __init__(self, reason: str, exit_status: int | None = None, stderr_tail: str = "") -> None:
        detail = reason
        if exit_status is not None:
            detail += f" (exit status {exit_status})"
        if stderr_tail.strip():
            detail += "\n--- agent stderr (tail) ---\n" + stderr_tail.rstrip()
        super().__init__(detail)
        self.reason = reason
        self.exit_status = exit_status
        self.stderr_tail = stderr_tail


# What a request asks of the agent, in a person's words (a timeout says which).
METHOD_WORDS = {
    "initialize": "start up",
    "authenticate": "sign in",
    "session/new": "open a new session",
    "session/load": "load the session",
    "session/resume": "resume the session",
    "session/list": "list its sessions",
    "session/close": "close the session",
    "session/fork": "fork the session",
    "session/set_mode": "change the mode",
    "session/set_model": "change the model",
    "session/set_config_option": "change the setting",
    "logout": "log out",
}


class RequestTimeout(AcpError):
    """A control request got no answer in time (`unread`: the agent did not even read
    its input, so the request was never sent)."""

    def __init__(self, method: str, seconds: float, *, unread: bool = False) -> None:
        asked = METHOD_WORDS.get(method, f"answer {method}")
        what = f"read what louise sent (to {asked})" if unread else asked
        super().__init__(
            f"the agent did not {what} within {seconds:g} s; "
            "it may be stuck, or need more time (raise request_timeout)"
        )
        self.method = method
        self.seconds = seconds
        self.unread = unread


class ProtocolErrorKind(StrEnum):
    """What was wrong with a message the agent sent (each is reported and dropped)."""

    OVERSIZED_LINE = "oversized_line"  # longer than max_line_bytes; skipped unread
    INVALID_UTF8 = "invalid_utf8"
    INVALID_JSON = "invalid_json"  # not JSON (NaN and Infinity included)
    TOO_LARGE = "too_large"  # more JSON values than max_json_values
    TOO_DEEP = "too_deep"  # nested deeper than max_json_depth
    NOT_AN_OBJECT = "not_an_object"  # valid JSON but not an object (a batch, a string, …)
    NOT_JSON_RPC = "not_json_rpc"  # neither a request, a notification nor a response
    INVALID_METHOD = "invalid_method"  # `method` present but not a string
    INVALID_ID = "invalid_id"  # an id (or requestId) that is an object, list, float or bool
    DUPLICATE_REQUEST_ID = "duplicate_request_id"  # reuses the id of a request in progress
    INVALID_CANCEL = "invalid_cancel"  # $/cancel_request without an object with requestId
    UNKNOWN_RESPONSE_ID = "unknown_response_id"  # answers nothing we asked
    RESULT_AND_ERROR = "result_and_error"
    INCOMPLETE_RESPONSE = "incomplete_response"  # neither result nor error
    MALFORMED_ERROR = "malformed_error"  # error is not {code: int, message: str, …}


class ProtocolError(AcpError):
    """The agent broke framing or JSON-RPC rules (reported, the connection goes on)."""

    def __init__(self, kind: ProtocolErrorKind, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class LocalProtocolError(AcpError):
    """louise itself misused the JSON-RPC state (a bug of ours, never the agent's)."""
