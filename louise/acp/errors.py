"""Typed errors of the ACP client core.

`RpcError` is a JSON-RPC error, either received from the agent or raised by one of our
handlers to be sent back. Its `data` is kept for logs and never shown raw to a person.
"""

from __future__ import annotations

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
        super().__init__(f"{message} (JSON-RPC error {code})")
        self.code = code
        self.message = message
        self.data = data

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


class RequestTimeout(AcpError):
    """A control request got no answer in time."""

    def __init__(self, method: str, seconds: float) -> None:
        super().__init__(
            f"the agent did not answer {method} within {seconds:g} s; "
            "it may be stuck, or need more time (raise request_timeout)"
        )
        self.method = method
        self.seconds = seconds


class ProtocolError(AcpError):
    """The agent broke framing or JSON-RPC rules (reported, the connection goes on)."""
