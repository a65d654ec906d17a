"""A JSON-RPC 2.0 peer over anyio byte streams, NDJSON framed.

Guarantees (see acp-protocol-notes §4):
- inbound notifications reach `handler.handle_notification` one at a time, in arrival order;
- inbound requests run concurrently (bounded), each cancellable by `$/cancel_request`;
- outbound messages go through one bounded queue and one writer task;
- lines longer than `max_line_bytes` are dropped without being held, and reported;
- when the byte stream ends, every pending request fails at once with the close reason.

Dispatch is on the raw dict; validating params is the handler's business.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from louise.acp.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    AcpError,
    ConnectionClosed,
    ProtocolError,
    RequestTimeout,
    RpcError,
)
from louise.acp.framing import DEFAULT_MAX_LINE_BYTES, LineDecoder, OversizedLine

log = logging.getLogger("louise.acp")

CANCEL_REQUEST = "$/cancel_request"
RequestId = int | str | None

# Inbound items: (kind, a, b, c) — kinds below; kept as plain tuples for speed.
_NOTIFICATION, _RESPONSE, _REQUEST, _INVALID = "n", "r", "q", "x"
_Inbound = tuple[str, Any, Any, Any]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.JSONDecoder().decode


class MessageHandler(Protocol):
    """What the peer calls for inbound traffic."""

    async def handle_request(self, method: str, params: Any) -> Any:
        """Return the result, or raise RpcError (RpcError.method_not_found if unknown)."""
        ...

    async def handle_notification(self, method: str, params: Any) -> None:
        """Called in arrival order, one at a time."""
        ...


@dataclass(frozen=True, slots=True)
class PeerLimits:
    """Every bound of the peer in one place."""

    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    outbound_queue: int = 256
    inbound_batches: int = 64  # reads of up to read_chunk bytes each (or one long line)
    max_concurrent_inbound_requests: int = 64
    protocol_error_log: int = 64
    read_chunk: int = 256 * 1024
    drain_on_close_seconds: float = 2.0


@dataclass(slots=True)
class _Pending:
    method: str
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: BaseException | None = None


class JsonRpcPeer:
    """One side of a JSON-RPC connection. Start it with `await task_group.start(peer.run)`."""

    def __init__(
        self,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        handler: MessageHandler,
        *,
        limits: PeerLimits | None = None,
        on_eof: Callable[[], Awaitable[AcpError]] | None = None,
        on_protocol_error: Callable[[ProtocolError], None] | None = None,
        on_close: Callable[[AcpError], None] | None = None,
        name: str = "peer",
    ) -> None:
        self._receive = receive
        self._send = send
        self._handler = handler
        self.limits = limits or PeerLimits()
        self._on_eof = on_eof
        self._on_protocol_error = on_protocol_error
        self._on_close = on_close
        self.name = name
        self._next_id = 0
        self._pending: dict[RequestId, _Pending] = {}
        self._inbound: dict[RequestId, anyio.CancelScope] = {}
        self._cancelled_early: deque[RequestId] = deque(maxlen=256)
        self._closed: AcpError | None = None
        self._closed_event = anyio.Event()
        self.protocol_errors: deque[str] = deque(maxlen=self.limits.protocol_error_log)
        out_send, out_recv = anyio.create_memory_object_stream[bytes](self.limits.outbound_queue)
        self._out_send: MemoryObjectSendStream[bytes] = out_send
        self._out_recv: MemoryObjectReceiveStream[bytes] = out_recv
        # Batches (one per read) of notifications, responses and request starts, in
        # arrival order.
        note_send, note_recv = anyio.create_memory_object_stream[list[_Inbound]](
            self.limits.inbound_batches
        )
        self._note_send: MemoryObjectSendStream[list[_Inbound]] = note_send
        self._note_recv: MemoryObjectReceiveStream[list[_Inbound]] = note_recv
        self._task_group: TaskGroup | None = None
        self._consumer_done = anyio.Event()

    # ------------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> AcpError | None:
        """Why the peer closed, or None while it is open."""
        return self._closed

    async def wait_closed(self) -> AcpError:
        await self._closed_event.wait()
        assert self._closed is not None
        return self._closed

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run reader, writer and notification consumer until the input ends or `close`."""
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            tg.start_soon(self._writer)
            tg.start_soon(self._notification_consumer)
            task_status.started()
            try:
                await self._reader()
                # Updates the agent sent before it went away are still delivered, in
                # order, before its pending requests fail (bounded wait).
                self._note_send.close()
                with anyio.move_on_after(self.limits.drain_on_close_seconds):
                    await self._consumer_done.wait()
            finally:
                reason: AcpError = ConnectionClosed("the agent closed its output")
                if self._closed is None and self._on_eof is not None:
                    with anyio.CancelScope(shield=True):
                        reason = await self._on_eof()
                self._close(self._closed or reason)
                tg.cancel_scope.cancel()

    def close(self, reason: AcpError | None = None) -> None:
        """Fail all pending requests and stop the peer's tasks."""
        self._close(reason or ConnectionClosed("the connection was closed"))
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()

    def _close(self, reason: AcpError) -> None:
        if self._closed is None:
            self._closed = reason
            self._closed_event.set()
            if self._on_close is not None:
                # Synchronously, before any waiter resumes: owners see the close first.
                try:
                    self._on_close(reason)
                except Exception:
                    log.exception("%s: close listener failed", self.name)
        for pending in self._pending.values():
            if not pending.done.is_set():
                pending.error = self._closed
                pending.done.set()
        self._pending.clear()
        for scope in self._inbound.values():
            scope.cancel()

    # ------------------------------------------------------------------ outbound

    async def request(
        self, method: str, params: Any = None, *, timeout: float | None = None
    ) -> Any:
        """Send a request and wait for its result; raises RpcError, RequestTimeout, AcpError."""
        if self._closed is not None:
            raise self._closed
        request_id = self._next_id
        self._next_id += 1
        pending = _Pending(method)
        self._pending[request_id] = pending
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        finished = False
        try:
            await self._enqueue(message)
            with anyio.fail_after(timeout if timeout is not None else math.inf):
                await pending.done.wait()
            finished = True
        except TimeoutError:
            raise RequestTimeout(method, timeout or 0.0) from None
        finally:
            if not finished and self._pending.pop(request_id, None) is not None:
                # Abandoned (timeout or our caller was cancelled): tell the agent.
                await self._send_cancel_request(request_id)
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def notify(self, method: str, params: Any = None) -> None:
        if self._closed is not None:
            raise self._closed
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._enqueue(message)

    async def _send_cancel_request(self, request_id: RequestId) -> None:
        if self._closed is not None:
            return
        message = {"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"requestId": request_id}}
        with anyio.CancelScope(shield=True), anyio.move_on_after(1.0):
            await self._enqueue(message)

    async def _enqueue(self, message: dict[str, Any]) -> None:
        line = _dumps(message).encode("utf-8") + b"\n"
        try:
            await self._out_send.send(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise self._closed or ConnectionClosed("the connection was closed") from None

    async def _writer(self) -> None:
        async with self._out_recv:
            async for line in self._out_recv:
                try:
                    await self._send.send(line)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                    log.debug("%s: write failed: %s", self.name, exc)
                    return

    # ------------------------------------------------------------------ inbound

    async def _reader(self) -> None:
        decoder = LineDecoder(self.limits.max_line_bytes)
        while True:
            try:
                data = await self._receive.receive(self.limits.read_chunk)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                break
            await self._enqueue_batch(decoder.feed(data))
        await self._enqueue_batch(decoder.finish())

    async def _enqueue_batch(self, items: list[bytes | OversizedLine]) -> None:
        """Everything one read delivered goes to the ordered consumer as one batch: no
        scheduler round-trip per message, and the queue is bounded in reads, not lines."""
        batch: list[_Inbound] = []
        for item in items:
            routed = self._route_line(item)
            if routed is not None:
                batch.append(routed)
        if not batch:
            return
        try:
            self._note_send.send_nowait(batch)
        except anyio.WouldBlock:
            await self._note_send.send(batch)

    def _protocol_error(self, text: str) -> None:
        self.protocol_errors.append(text)
        log.warning("%s: protocol error: %s", self.name, text)
        if self._on_protocol_error is not None:
            self._on_protocol_error(ProtocolError(text))

    def _route_line(self, item: bytes | OversizedLine) -> _Inbound | None:
        if isinstance(item, OversizedLine):
            self._protocol_error(
                f"dropped a {item.size}-byte line (limit {self.limits.max_line_bytes} bytes)"
            )
            return None
        try:
            # str first: json.loads(bytes) would sniff the encoding on every line.
            message = _loads(item.decode("utf-8"))
        except ValueError:  # includes UnicodeDecodeError
            preview = item[:80].decode("utf-8", "replace")
            self._protocol_error(f"not JSON: {preview!r}")
            return None
        return self.route(message)

    def route(self, message: Any) -> _Inbound | None:
        """Classify one decoded message. Notifications, responses and the start of
        inbound requests keep their arrival order (a reply never overtakes the updates
        before it; a permission request starts after the tool call it is about);
        `$/cancel_request` acts at once."""
        if not isinstance(message, dict):
            self._protocol_error(f"not a JSON-RPC object: {type(message).__name__}")
            return None
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                return (_REQUEST, message["id"], method, message.get("params"))
            if method == CANCEL_REQUEST:
                self._cancel_inbound(message.get("params"))
                return None
            return (_NOTIFICATION, method, message.get("params"), None)
        if method is not None:
            self._protocol_error("method is not a string")
            if "id" in message:
                return (_INVALID, message["id"], None, None)
            return None
        if "id" in message and ("result" in message or "error" in message):
            return (_RESPONSE, message, None, None)
        self._protocol_error("neither a request, a notification nor a response")
        return None

    async def dispatch(self, message: Any) -> None:
        """Route and handle one decoded message now (for tests driving the peer)."""
        routed = self.route(message)
        if routed is not None:
            await self._handle(routed)

    async def _handle(self, item: _Inbound) -> None:
        kind, a, b, c = item
        if kind is _NOTIFICATION:
            try:
                await self._handler.handle_notification(a, b)
            except Exception:
                log.exception("%s: notification handler for %s failed", self.name, a)
        elif kind is _RESPONSE:
            self._resolve(a)
        elif kind is _REQUEST:
            await self._start_inbound_request(a, b, c)
        else:
            await self._respond_error(a, RpcError(INVALID_REQUEST, "Invalid request"))

    def _resolve(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        pending = self._pending.pop(request_id, None)
        if pending is None:
            # Late answer to a request we abandoned; harmless.
            log.debug("%s: response to unknown or abandoned id %r", self.name, request_id)
            return
        error = message.get("error")
        if "error" in message and error is not None:
            if isinstance(error, dict):
                code = error.get("code")
                text = error.get("message")
                if not isinstance(code, int) or isinstance(code, bool):
                    code = INTERNAL_ERROR
                pending.error = RpcError(
                    code,
                    text if isinstance(text, str) else "error without a message",
                    error.get("data"),
                )
            else:
                pending.error = RpcError(INTERNAL_ERROR, "malformed error object", error)
        else:
            pending.result = message.get("result")
        pending.done.set()

    def _cancel_inbound(self, params: Any) -> None:
        if not isinstance(params, dict) or "requestId" not in params:
            self._protocol_error("$/cancel_request without requestId")
            return
        scope = self._inbound.get(params["requestId"])
        if scope is not None:
            scope.cancel()
        else:
            # Not started yet (still queued behind earlier messages): refuse it on start.
            self._cancelled_early.append(params["requestId"])

    async def _start_inbound_request(self, request_id: Any, method: str, params: Any) -> None:
        if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
            if request_id is not None:
                await self._respond_error(None, RpcError(INVALID_REQUEST, "Invalid request id"))
                return
        if request_id in self._cancelled_early:
            self._cancelled_early.remove(request_id)
            await self._respond_error(request_id, RpcError(REQUEST_CANCELLED, "Request cancelled"))
            return
        if request_id in self._inbound:
            await self._respond_error(request_id, RpcError(INVALID_REQUEST, "Duplicate request id"))
            return
        if len(self._inbound) >= self.limits.max_concurrent_inbound_requests:
            await self._respond_error(
                request_id, RpcError(INTERNAL_ERROR, "Too many concurrent requests; retry later")
            )
            return
        assert self._task_group is not None
        scope = anyio.CancelScope()
        self._inbound[request_id] = scope
        self._task_group.start_soon(self._run_inbound_request, request_id, method, params, scope)

    async def _run_inbound_request(
        self, request_id: RequestId, method: str, params: Any, scope: anyio.CancelScope
    ) -> None:
        response: dict[str, Any] | None = None
        try:
            with scope:
                try:
                    result = await self._handler.handle_request(method, params)
                    response = {"jsonrpc": "2.0", "id": request_id, "result": result}
                except RpcError as exc:
                    response = {"jsonrpc": "2.0", "id": request_id, "error": exc.to_wire()}
                except Exception:
                    log.exception("%s: handler for %s failed", self.name, method)
                    response = {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "error": {"code": INTERNAL_ERROR, "message": "Internal error"},
                    }
            if scope.cancelled_caught or response is None:
                response = {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": RpcError(REQUEST_CANCELLED, "Request cancelled").to_wire(),
                }
        finally:
            self._inbound.pop(request_id, None)
        if self._closed is None and response is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5.0):
                with contextlib.suppress(AcpError):
                    await self._enqueue(response)

    async def _respond_error(self, request_id: RequestId, error: RpcError) -> None:
        await self._enqueue({"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()})

    async def _notification_consumer(self) -> None:
        handled = 0
        try:
            async with self._note_recv:
                while True:
                    try:
                        batch = self._note_recv.receive_nowait()
                    except anyio.WouldBlock:
                        try:
                            batch = await self._note_recv.receive()
                        except anyio.EndOfStream:
                            return
                    except anyio.EndOfStream:
                        return
                    for item in batch:
                        await self._handle(item)
                        handled += 1
                        if handled % 64 == 0:
                            await anyio.lowlevel.checkpoint()  # stay fair to other tasks
        finally:
            self._consumer_done.set()


__all__ = [
    "CANCEL_REQUEST",
    "PARSE_ERROR",
    "JsonRpcPeer",
    "MessageHandler",
    "PeerLimits",
]
