"""JSON-RPC 2.0 over NDJSON as a state machine with no I/O, in the manner of h11.

Bytes the agent wrote go in (`receive_data`, `receive_eof`), or one decoded message
(`receive`); typed events come out. Nothing an agent sends makes it raise: every malformed
message becomes a `ProtocolViolation` of an enumerated kind and the state goes on.
Outbound, it allocates request ids and turns messages into lines; louise misusing it
(answering a request twice, a result that is not JSON) raises `LocalProtocolError`.

Its tables: `pending`, our requests awaiting an answer (id -> method); `inbound`, the
agent's requests not answered yet (id -> cancelled?); and a bounded memory of requests we
abandoned, whose late answers are expected and dropped quietly.

Budgets: a line longer than `max_line_bytes` is skipped unread (framing.LineDecoder); a
line is not decoded when its structure is too big (`max_json_values` brackets and commas
outside strings, nesting beyond `max_json_depth`: json_lines.py). A line whose bracket
count is within budget needs no such look: streamed chunks stay on a fast path.
"""

from __future__ import annotations

import json
from typing import Any

from louise.acp.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    LocalProtocolError,
    ProtocolErrorKind,
    RpcError,
)
from louise.acp.framing import LineDecoder, OversizedLine
from louise.acp.json_lines import decode, encode_line, request_named, scan, structure_problem
from louise.acp.rpc_events import (
    CancelRequest,
    ErrorResponse,
    Event,
    Notification,
    ProtocolViolation,
    RejectRequest,
    Request,
    RequestId,
    Response,
)

CANCEL_REQUEST = "$/cancel_request"
Kind = ProtocolErrorKind

DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_JSON_VALUES = 500_000
DEFAULT_MAX_JSON_DEPTH = 128  # serde_json's limit too: codex-acp cannot go deeper anyway
ABANDONED_MEMORY = 1024
_PREVIEW = 80


def valid_id(value: Any) -> bool:
    """JSON-RPC ids are integers, strings or null (never bools, floats, lists, objects)."""
    kind = type(value)
    return kind is int or kind is str or value is None


_TYPE_NAMES = {dict: "an object", list: "a list", float: "a float", bool: "a bool",
               str: "a string", int: "an integer", type(None): "null"}


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _show(value: Any, limit: int = 60) -> str:
    """An agent's id, method or message for a report: short, however long it is."""
    if type(value) is str:
        return repr(value[:limit]) + ("…" if len(value) > limit else "")
    if type(value) is int:
        text = str(value)
        return text if len(text) <= limit else text[:limit] + "…"
    return _type_name(value)


class RpcState:
    """The JSON-RPC bookkeeping of one connection; see the module docstring."""

    __slots__ = (
        "_abandoned",
        "_inbound",
        "_lines",
        "_next_id",
        "_pending",
        "max_json_depth",
        "max_json_values",
    )

    def __init__(
        self,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_json_values: int = DEFAULT_MAX_JSON_VALUES,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
    ) -> None:
        self._lines = LineDecoder(max_line_bytes)
        self.max_json_values = max_json_values
        self.max_json_depth = max_json_depth
        self._next_id = 0
        self._pending: dict[int, str] = {}
        self._inbound: dict[RequestId, bool] = {}
        self._abandoned: dict[int, None] = {}

    @property
    def max_line_bytes(self) -> int:
        return self._lines.max_line_bytes

    @property
    def pending(self) -> dict[int, str]:
        """Our requests awaiting an answer (id -> method); read only."""
        return self._pending

    @property
    def inbound(self) -> dict[RequestId, bool]:
        """The agent's requests not answered yet (id -> cancelled); read only."""
        return self._inbound

    # ------------------------------------------------------------------ inbound

    def receive_data(self, data: bytes) -> list[Event]:
        """Bytes as they arrive; the events of every line they complete."""
        if data.endswith(b"\n") and self._lines.idle and len(data) <= self._lines.max_line_bytes:
            streamed = self._notifications(data)
            if streamed is not None:
                return streamed
        out: list[Event] = []
        depth = self.max_json_depth
        values = self.max_json_values
        for line in self._lines.feed(data):
            # The streaming path (a well-formed notification) inline; all else in
            # _receive_line, which also says what was wrong.
            if type(line) is bytes and not (
                line.count(b"[") + line.count(b"{") > depth or len(line) > values
            ):
                try:
                    text = line.decode()
                    message, end = scan(text, 0)
                except (ValueError, RecursionError, StopIteration):
                    self._receive_line(line, out)
                    continue
                if end != len(text):  # more after the value: let the careful path judge
                    self._receive_line(line, out)
                    continue
                if type(message) is dict:
                    method = message.get("method")
                    if type(method) is str and "id" not in message and method != CANCEL_REQUEST:
                        out.append(Notification(method, message.get("params")))
                        continue
                self._receive_message(message, out)
            else:
                self._receive_line(line, out)
        return out

    def _notifications(self, data: bytes) -> list[Event] | None:
        """A read of whole lines that are all well-formed notifications (a stream's), read
        at once: one decode and one bracket count for the read, each value scanned in
        place; None, having changed nothing, for anything else (then line by line). What
        the whole read clears, each of its lines clears: the result is the same."""
        if data.count(b"[") + data.count(b"{") > self.max_json_depth \
                or len(data) > self.max_json_values:
            return None
        try:
            text = data.decode()
        except UnicodeDecodeError:
            return None
        out: list[Event] = []
        at = 0
        size = len(text)
        try:
            while at < size:
                message, at = scan(text, at)
                if text[at] != "\n" or type(message) is not dict:
                    return None
                at += 1
                method = message.get("method")
                if type(method) is not str or "id" in message or method == CANCEL_REQUEST:
                    return None
                out.append(Notification(method, message.get("params")))
        except (ValueError, RecursionError, StopIteration, IndexError):
            return None
        return out

    def receive_eof(self) -> list[Event]:
        """The stream ended: a last line without a newline still counts."""
        out: list[Event] = []
        for line in self._lines.finish():
            self._receive_line(line, out)
        return out

    def receive(self, message: Any) -> list[Event]:
        """One decoded message."""
        out: list[Event] = []
        self._receive_message(message, out)
        return out

    def _receive_line(self, line: bytes | OversizedLine, out: list[Event]) -> None:
        if type(line) is OversizedLine:
            self._unreadable(line.head, Kind.OVERSIZED_LINE,
                             f"a {line.size}-byte line (limit {self.max_line_bytes} bytes)", out)
            return
        assert type(line) is bytes
        # Brackets bound both the nesting depth and (with commas) the number of values;
        # only a line these counts do not clear gets the exact, costlier look.
        opens = line.count(b"[") + line.count(b"{")
        if opens > self.max_json_depth or (
            len(line) > self.max_json_values and opens + line.count(b",") > self.max_json_values
        ):
            problem = structure_problem(line, self.max_json_values, self.max_json_depth)
            if problem is not None:
                self._unreadable(line, *problem, out)
                return
        try:
            text = line.decode()
        except UnicodeDecodeError as exc:
            self._unreadable(line, Kind.INVALID_UTF8,
                             f"invalid UTF-8 at byte {exc.start}: {self._preview(line)}", out)
            return
        try:
            message = decode(text)
        except ValueError as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            self._unreadable(line, Kind.INVALID_JSON,
                             f"not JSON ({reason}): {self._preview(line)}", out)
            return
        except RecursionError:
            self._unreadable(line, Kind.TOO_DEEP, "nested too deep to decode", out)
            return
        self._receive_message(message, out)

    @staticmethod
    def _preview(line: bytes) -> str:
        return repr(line[:_PREVIEW].decode("utf-8", "replace"))

    def _unreadable(self, head: bytes, kind: ProtocolErrorKind, detail: str,
                    out: list[Event]) -> None:
        """Report a line we could not read. If its first bytes say which request it
        began or answered, answer or fail that request, so that no side waits forever."""
        out.append(ProtocolViolation(kind, detail))
        named = request_named(head)
        if named is None:
            return
        request_id, part = named
        if part == "method":
            if request_id in self._inbound:
                return  # its id is in use: an answer would reach the wrong request
            code = PARSE_ERROR if kind in (Kind.INVALID_UTF8, Kind.INVALID_JSON) \
                else INVALID_REQUEST
            out.append(RejectRequest(request_id, RpcError(code, f"Request not read: {detail}")))
        elif type(request_id) is int:
            method = self._pending.pop(request_id, None)
            if method is not None:
                out.append(ErrorResponse(request_id, method, RpcError(
                    INTERNAL_ERROR, f"the agent's answer could not be read: {kind}")))

    def _receive_message(self, message: Any, out: list[Event]) -> None:
        if type(message) is not dict:
            out.append(ProtocolViolation(
                Kind.NOT_AN_OBJECT, f"{_type_name(message)}, not a JSON-RPC object"))
            return
        method = message.get("method")
        if method is not None:
            if type(method) is not str:
                out.append(ProtocolViolation(
                    Kind.INVALID_METHOD, f"method is {_type_name(method)}, not a string"))
                if "id" in message:
                    request_id = message["id"]
                    if not valid_id(request_id) or request_id in self._inbound:
                        request_id = None
                    out.append(RejectRequest(request_id, RpcError(
                        INVALID_REQUEST, "Invalid request: method must be a string")))
                return
            if "id" in message:
                self._receive_request(message["id"], method, message.get("params"), out)
            elif method == CANCEL_REQUEST:
                self._receive_cancel(message.get("params"), out)
            else:
                out.append(Notification(method, message.get("params")))
            return
        if "id" not in message:
            out.append(ProtocolViolation(
                Kind.NOT_JSON_RPC, "neither a request, a notification nor a response"))
            return
        self._receive_response(message, out)

    def _receive_request(self, request_id: Any, method: str, params: Any,
                         out: list[Event]) -> None:
        if not valid_id(request_id):
            out.append(ProtocolViolation(Kind.INVALID_ID, f"{_show(method)} request with "
                                         f"an id that is {_type_name(request_id)}"))
            out.append(RejectRequest(None, RpcError(INVALID_REQUEST, "Invalid request id")))
            return
        if request_id in self._inbound:
            out.append(ProtocolViolation(
                Kind.DUPLICATE_REQUEST_ID,
                f"{_show(method)} reuses id {_show(request_id)} of a request still in progress"))
            out.append(RejectRequest(request_id, RpcError(INVALID_REQUEST, "Duplicate request id")))
            return
        self._inbound[request_id] = False
        out.append(Request(request_id, method, params))

    def _receive_cancel(self, params: Any, out: list[Event]) -> None:
        if type(params) is not dict or "requestId" not in params:
            out.append(ProtocolViolation(Kind.INVALID_CANCEL,
                                         f"{CANCEL_REQUEST} without requestId"))
            return
        request_id = params["requestId"]
        if not valid_id(request_id):
            out.append(ProtocolViolation(
                Kind.INVALID_ID, f"{CANCEL_REQUEST} for an id that is {_type_name(request_id)}"))
            return
        if self._inbound.get(request_id) is False:
            self._inbound[request_id] = True
            out.append(CancelRequest(request_id))
        # Otherwise already answered (the cancel crossed our reply) or cancelled: nothing to do.

    def _receive_response(self, message: dict[str, Any], out: list[Event]) -> None:
        request_id = message["id"]
        if type(request_id) is not int:
            if type(request_id) is str or request_id is None:
                error = message.get("error")
                said = f": {_show(error.get('message'))}" if isinstance(error, dict) else ""
                out.append(ProtocolViolation(
                    Kind.UNKNOWN_RESPONSE_ID, f"an answer to id {_show(request_id)}{said}"))
            else:
                out.append(ProtocolViolation(
                    Kind.INVALID_ID, f"an answer whose id is {_type_name(request_id)}"))
            return
        error = message.get("error")
        failure: RpcError | None = None
        reported = len(out)
        if error is not None:
            if "result" in message:
                out.append(ProtocolViolation(
                    Kind.RESULT_AND_ERROR, f"the answer to id {_show(request_id)} has both"))
            failure = self._rpc_error(request_id, error, out)
        elif "result" not in message:
            out.append(ProtocolViolation(
                Kind.INCOMPLETE_RESPONSE, f"the answer to id {_show(request_id)} has neither"))
            failure = RpcError(INTERNAL_ERROR, "the agent answered with neither result nor error")
        method = self._pending.pop(request_id, None)
        if method is None:
            if request_id in self._abandoned:
                del self._abandoned[request_id]  # the late answer to a request we gave up on
            elif len(out) == reported:  # one report per message is enough
                out.append(ProtocolViolation(Kind.UNKNOWN_RESPONSE_ID,
                                             f"an answer to id {_show(request_id)}, not pending"))
            return
        if failure is not None:
            out.append(ErrorResponse(request_id, method, failure))
        else:
            out.append(Response(request_id, method, message["result"]))

    @staticmethod
    def _rpc_error(request_id: int, error: Any, out: list[Event]) -> RpcError:
        if not isinstance(error, dict):
            out.append(ProtocolViolation(Kind.MALFORMED_ERROR, f"the error for id "
                                         f"{_show(request_id)} is {_type_name(error)}"))
            return RpcError(INTERNAL_ERROR, "malformed error from the agent", error)
        code = error.get("code")
        text = error.get("message")
        if type(code) is not int or type(text) is not str:
            out.append(ProtocolViolation(
                Kind.MALFORMED_ERROR, f"the error for id {_show(request_id)} lacks an integer code "
                "or a string message"))
        return RpcError(code if type(code) is int else INTERNAL_ERROR,
                        text if type(text) is str else "error without a message",
                        error.get("data"))

    # ------------------------------------------------------------------ outbound

    def send_request(self, method: str, params: Any = None) -> tuple[int, bytes]:
        """A new request of ours: its id and its line. Raises TypeError/ValueError if
        params are not JSON (then nothing is pending)."""
        request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        line = encode_line(message)
        self._next_id += 1
        self._pending[request_id] = method
        return request_id, line

    def send_notification(self, method: str, params: Any = None) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return encode_line(message)

    def abandon(self, request_id: int, *, sent: bool = True) -> bytes | None:
        """We no longer want the answer. Returns the `$/cancel_request` line to send when
        the agent has the request and has not answered, else None."""
        if self._pending.pop(request_id, None) is None or not sent:
            return None
        self._abandoned[request_id] = None
        if len(self._abandoned) > ABANDONED_MEMORY:
            del self._abandoned[next(iter(self._abandoned))]
        return encode_line({"jsonrpc": "2.0", "method": CANCEL_REQUEST,
                        "params": {"requestId": request_id}})

    def is_cancelled(self, request_id: RequestId) -> bool:
        """Whether the agent cancelled this request of its own (still unanswered)."""
        return self._inbound.get(request_id) is True

    def respond(self, request_id: RequestId, result: Any) -> bytes:
        """The line answering an agent request; the request leaves the inbound table."""
        self._check_inbound(request_id)
        try:
            line = encode_line({"jsonrpc": "2.0", "id": request_id, "result": result})
        except (TypeError, ValueError, RecursionError) as exc:
            raise LocalProtocolError(f"a result that is not JSON: {exc}") from exc
        del self._inbound[request_id]
        return line

    def respond_error(self, request_id: RequestId, error: RpcError) -> bytes:
        self._check_inbound(request_id)
        line = self._error_line(request_id, error)
        del self._inbound[request_id]
        return line

    def reject(self, event: RejectRequest) -> bytes:
        """The line answering a request the state did not take."""
        return self._error_line(event.request_id, event.error)

    def _check_inbound(self, request_id: RequestId) -> None:
        if not valid_id(request_id) or request_id not in self._inbound:
            raise LocalProtocolError(f"no agent request {request_id!r} awaits an answer")

    @staticmethod
    def _error_line(request_id: RequestId, error: RpcError) -> bytes:
        try:
            return encode_line({"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()})
        except (TypeError, ValueError, RecursionError):
            # Data that is not JSON is for our logs anyway; the code and message go out.
            plain = RpcError(error.code, error.message)
            return encode_line({"jsonrpc": "2.0", "id": request_id, "error": plain.to_wire()})


__all__ = [
    "CANCEL_REQUEST",
    "RpcState",
    "valid_id",
]
