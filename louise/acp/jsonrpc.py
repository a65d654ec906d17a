"""The anyio driver of one JSON-RPC connection: streams and tasks around `RpcState`.

The protocol decisions (ids, tables, validation, what a malformed message is) live in
`rpc_state`; this module only moves bytes and runs handlers. Its tasks: a reader (bytes
-> RpcState -> events), one ordered consumer, a writer, and one task per agent request.

Guarantees (acp-protocol-notes §4):
- notifications reach `handler.handle_notification` one at a time, in arrival order; an
  answer to our request never overtakes the notifications before it (unless the request's
  deadline passes first: an answer that has arrived is then returned, not a timeout);
- agent requests run concurrently, at most `max_concurrent_inbound_requests` (more are
  refused with -32603), each cancellable by `$/cancel_request`;
- every agent request is answered exactly once and no reply is ever dropped: a reply
  waits for room in the outbound queue. While the agent leaves our output unread, its
  new requests wait (and so, in turn, does reading its output): backpressure, not loss;
- memory is bounded in bytes (`PeerLimits`): the outbound queue, the decoded messages
  waiting for the consumer, the line length, the structure a line may decode to;
- malformed input is a protocol error: logged, kept in `protocol_errors` (a ring of
  readable lines), passed to `on_protocol_error`; the connection goes on;
- when the input ends (EOF, or `end_input` because the process exited) what was read is
  still delivered (bounded wait), then every pending request fails at once with the
  reason; a request's timeout covers the wait for room in the outbound queue.
"""

from __future__ import annotations

import logging
import math
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup, TaskStatus

from louise.acp.errors import (
    INTERNAL_ERROR,
    AcpError,
    ConnectionClosed,
    LocalProtocolError,
    ProtocolError,
    RequestTimeout,
    RpcError,
)
from louise.acp.peer_limits import PeerLimits
from louise.acp.queues import InboundQueue, OutboundQueue
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
from louise.acp.rpc_state import CANCEL_REQUEST, RpcState

log = logging.getLogger("louise.acp")

# A read smaller than this, of notifications alone, is a stream: the next read may wait
# for `read_pace`. A larger one is a burst (or a big message): read on at once.
PACE_BELOW_BYTES = 16 * 1024


class MessageHandler(Protocol):
    """What the peer calls for inbound traffic."""

    async def handle_request(self, method: str, params: Any) -> Any:
        """Return the result, or raise RpcError (RpcError.method_not_found if unknown)."""
        ...

    async def handle_notification(self, method: str, params: Any) -> None:
        """Called in arrival order, one at a time."""
        ...


class ReadPuller(Protocol):
    """A read pace that reads for the reader (the Neovim engine's frame loop): the reader
    of a stream parks with its `pull`, and the pace calls it at each of its slots, in its
    own step, until it answers False; then `park` returns and the reader goes on. A
    streamed chunk then costs no wake-up of the reader's task at all: the slot's task
    reads it, handles it and draws it in one step."""

    async def park(self, pull: Callable[[], bool]) -> None: ...


class _Waiter:
    """One request of ours. `arrived` turns true when the reader has its answer, `done`
    is set when the ordered consumer reaches it (or the connection closes)."""

    __slots__ = ("arrived", "done", "error", "method", "result")

    def __init__(self, method: str) -> None:
        self.method = method
        self.done = anyio.Event()
        self.arrived = False
        self.result: Any = None
        self.error: AcpError | None = None


class JsonRpcPeer:
    """One side of a JSON-RPC connection. Start it with `await task_group.start(peer.run)`.

    `protocol_errors` holds the latest protocol errors as readable lines ("kind: detail");
    `protocol_error_counts` counts every one by kind; `on_protocol_error` receives each
    as a `ProtocolError` (with `.kind` and `.detail`) as it is read.
    """

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
        read_pace: Callable[[], Awaitable[None]] | None = None,
        name: str = "peer",
    ) -> None:
        self._receive = receive
        self._send = send
        self._handler = handler
        self.limits = limits = limits or PeerLimits()
        self._on_eof = on_eof
        self._on_protocol_error = on_protocol_error
        self._on_close = on_close
        self._read_pace = read_pace
        # Pulled reads need a pace that parks readers, a stream read without waiting and
        # a handler that handles without waiting when it can.
        park = getattr(read_pace, "park", None)
        self._notify_now: Callable[[str, Any], Awaitable[None] | None] | None = getattr(
            handler, "notify_now", None)
        self._coalesce: Callable[[list[Event]], list[Event]] | None = getattr(
            handler, "coalesce", None)
        self._park: Callable[[Callable[[], bool]], Awaitable[None]] | None = (
            park if getattr(receive, "receive_nowait", None) is not None
            and self._notify_now is not None else None)
        # What a pull read and left to the reader: the events, whether the read was small,
        # and what a handler left to await before them.
        self._stash: tuple[list[Event], bool, Awaitable[None] | None] | None = None
        self._pulled_end = False  # a pull met the end of the stream
        self._unqueued = 0  # bytes read since the last batch went to the consumer
        self.name = name
        self._state = RpcState(max_line_bytes=limits.max_line_bytes,
                               max_json_values=limits.max_json_values,
                               max_json_depth=limits.max_json_depth)
        self._waiters: dict[int, _Waiter] = {}
        self._running: dict[RequestId, anyio.CancelScope] = {}
        self._outbound = OutboundQueue(limits.max_outbound_bytes)
        self._inbound = InboundQueue(limits.max_inbound_bytes)
        self._closed: AcpError | None = None
        self._closed_event = anyio.Event()
        self._write_failed: AcpError | None = None
        self._input_end: AcpError | None = None
        self._reader_scope = anyio.CancelScope()
        self._consumer_done = anyio.Event()
        self._task_group: TaskGroup | None = None
        self._intake_paused = False
        self._consumer_busy = False  # between taking a batch and releasing it
        self.input_ended = anyio.Event()
        self.bytes_received = 0
        self.protocol_errors: deque[str] = deque(maxlen=limits.protocol_error_log)
        self.protocol_error_counts: Counter[str] = Counter()

    # ------------------------------------------------------------------ lifecycle

    @property
    def closed(self) -> AcpError | None:
        """Why the peer closed, or None while it is open."""
        return self._closed

    @property
    def state(self) -> RpcState:
        return self._state

    @property
    def outbound_backlog(self) -> int:
        """Bytes queued for the agent or waiting for room (the agent has not read them)."""
        return self._outbound.backlog

    async def wait_closed(self) -> AcpError:
        await self._closed_event.wait()
        assert self._closed is not None
        return self._closed

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run reader, writer and consumer until the input ends or `close`."""
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            tg.start_soon(self._writer)
            tg.start_soon(self._consumer)
            task_status.started()
            try:
                with self._reader_scope:
                    await self._reader()
                if self._stash is not None:  # a pull's, the reader stopped before it
                    await self._deliver_stash(self._stash)
                    self._stash = None
                self.input_ended.set()
                # What the agent sent before it went away is still delivered, in order,
                # before its pending requests fail (bounded wait).
                self._inbound.end()
                with anyio.move_on_after(self.limits.drain_on_close_seconds):
                    await self._consumer_done.wait()
            finally:
                self.input_ended.set()
                reason = self._input_end or ConnectionClosed("the agent closed its output")
                if self._closed is None and self._input_end is None and self._on_eof is not None:
                    with anyio.CancelScope(shield=True):
                        reason = await self._on_eof()
                self._close(self._closed or reason)
                tg.cancel_scope.cancel()

    def end_input(self, reason: AcpError) -> None:
        """Stop reading (the agent is gone though its output may stay open); deliver what
        was read, then close with `reason`."""
        if self._closed is None and self._input_end is None:
            self._input_end = reason
            self._reader_scope.cancel()

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
        for waiter in self._waiters.values():
            if not waiter.arrived:
                waiter.arrived = True
                waiter.error = self._closed
            waiter.done.set()
        self._outbound.close()
        for scope in self._running.values():
            scope.cancel()

    # ------------------------------------------------------------------ outbound

    async def request(
        self, method: str, params: Any = None, *, timeout: float | None = None,
        announce_abandon: bool = True,
    ) -> Any:
        """Send a request and wait for its result; raises RpcError, RequestTimeout, AcpError.

        The timeout covers the wait for room in the outbound queue as well. A request
        given up (timeout, our caller cancelled) is cancelled at the agent
        (`$/cancel_request`) unless `announce_abandon` is False: then only forgotten."""
        self._check_open()
        request_id, line = self._state.send_request(method, params)
        waiter = _Waiter(method)
        self._waiters[request_id] = waiter
        ticket = self._outbound.offer(line)
        try:
            with anyio.move_on_after(math.inf if timeout is None else timeout):
                if ticket is not None:
                    await self._outbound.wait(ticket)
                await waiter.done.wait()
        finally:
            del self._waiters[request_id]
            if not waiter.arrived:  # the deadline passed or our caller was cancelled
                sent = ticket is None or ticket.admitted
                cancel = self._state.abandon(request_id, sent=sent)
                if cancel is not None and announce_abandon:
                    self._outbound.put_urgent(cancel)  # tell the agent: -32800 expected
        if waiter.arrived:
            if waiter.error is not None:
                raise waiter.error
            return waiter.result
        if ticket is not None and ticket.refused:
            raise self._closed or self._write_failed or ConnectionClosed("the agent is gone")
        raise RequestTimeout(method, timeout or 0.0,
                             unread=ticket is not None and not ticket.admitted)

    async def notify(self, method: str, params: Any = None, *,
                     timeout: float | None = None) -> None:
        """Queue a notification; the timeout bounds the wait for room."""
        self._check_open()
        ticket = self._outbound.offer(self._state.send_notification(method, params))
        if ticket is None:
            return
        with anyio.move_on_after(math.inf if timeout is None else timeout):
            await self._outbound.wait(ticket)
        if ticket.admitted:
            return
        if ticket.refused:
            raise self._closed or self._write_failed or ConnectionClosed("the agent is gone")
        raise RequestTimeout(method, timeout or 0.0, unread=True)

    def _check_open(self) -> None:
        if self._closed is not None:
            raise self._closed
        if self._write_failed is not None:
            raise self._write_failed

    async def _writer(self) -> None:
        while True:
            data = await self._outbound.take(self.limits.write_chunk)
            try:
                await self._send.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                log.debug("%s: write failed: %s", self.name, exc)
                self._write_failed = ConnectionClosed(f"the agent stopped reading ({exc})")
                self._outbound.close()
                return

    # ------------------------------------------------------------------ inbound

    async def _reader(self) -> None:
        state = self._state
        receive = self._receive.receive
        # After the pace's wait the reader has yielded already: no checkpoint (a round of
        # the event loop) before its read, where the stream offers that.
        after_pause = getattr(self._receive, "receive_after_pause", receive)
        chunk = self.limits.read_chunk
        paused = False
        while True:
            stash, self._stash = self._stash, None
            if stash is not None:  # read by a pull, left to this task
                streamed = await self._deliver_stash(stash)
                small = stash[1]
                del stash
            else:
                if self._pulled_end:
                    break
                try:
                    data = await (after_pause if paused else receive)(chunk)
                except (anyio.EndOfStream, anyio.ClosedResourceError,
                        anyio.BrokenResourceError):
                    break
                paused = False
                self.bytes_received += len(data)
                self._unqueued += len(data)
                events = state.receive_data(data)
                small = len(data) < PACE_BELOW_BYTES
                # Neither the read nor its batch is kept while the next read waits: an idle
                # session would hold a burst's last batch (thousands of decoded
                # notifications, pinning the allocator's arenas) until the agent spoke again.
                del data
                if not events:
                    continue
                streamed = await self._deliver(events, self._unqueued)
                del events
                self._unqueued = 0
            if streamed and self._read_pace is not None and small:
                # Notifications alone, a few at a time: the agent streams. The next read
                # waits for the pace (the Neovim engine: its next frame), and takes
                # everything written meanwhile at once. A burst reads on at full speed,
                # and so does anything after a request or an answer.
                if self._park is not None:
                    await self._park(self._pull)
                else:
                    await self._read_pace()
                paused = True
        events = state.receive_eof()
        if events:
            await self._deliver(events, self._unqueued)

    def _pull(self) -> bool:
        """A parked reader's read, in the pace's step at its slot: what the agent wrote
        meanwhile, handled here when it is a stream's notifications alone (True: the
        reader stays parked). Anything else goes back to the reader (False): nothing to
        read (it waits for the pipe), the end, a burst, a request or an answer, a handler
        that must wait; what was read is left to it (`_stash`), in order."""
        if self._closed is not None or self._input_end is not None or self._stash is not None:
            return False
        try:
            data = self._receive.receive_nowait(  # type: ignore[attr-defined]
                self.limits.read_chunk)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._pulled_end = True
            return False
        if data is None:
            return False
        self.bytes_received += len(data)
        self._unqueued += len(data)
        events = self._state.receive_data(data)
        small = len(data) < PACE_BELOW_BYTES
        del data
        if not events:
            return True  # part of a line: the rest comes with a later read
        if not small or self._consumer_busy or not self._inbound.empty:
            self._stash = (events, small, None)
            return False
        for event in events:  # (a loop: a generator would cost a call per event)
            if type(event) is not Notification:
                self._stash = (events, small, None)
                return False
        self._unqueued = 0
        notify_now = self._notify_now
        assert notify_now is not None
        coalesce = self._coalesce
        if coalesce is not None and len(events) > 1:
            events = coalesce(events)
        for index, event in enumerate(events):
            assert type(event) is Notification
            try:
                rest = notify_now(event.method, event.params)
            except Exception:
                log.exception("%s: notification handler for %.100s failed",
                              self.name, event.method)
                continue
            if rest is not None:  # the reader awaits it, then handles what follows
                self._stash = (events[index + 1:], small, rest)
                return False
        return True

    async def _deliver_stash(
            self, stash: tuple[list[Event], bool, Awaitable[None] | None]) -> bool:
        """What a pull left to the reader, delivered in order; True as `_deliver`."""
        events, _, rest = stash
        if rest is not None:
            with anyio.CancelScope(shield=True):  # `end_input` must not cut a handler
                try:
                    await rest
                except Exception:
                    log.exception("%s: notification handler failed", self.name)
        if not events:
            return True
        streamed = await self._deliver(events, self._unqueued)
        self._unqueued = 0
        return streamed

    async def _deliver(self, events: list[Event], size: int) -> bool:
        """Act at once on what must not wait behind earlier messages (cancels, reports,
        answers' arrival); the rest goes to the ordered consumer, one batch per read.
        True when the events were notifications alone.

        Notifications alone, with the consumer idle and nothing queued before them, are
        handled here at once: in order all the same, and a streamed chunk then costs one
        wake-up of this task instead of two (the consumer's was about a third of the
        engine's CPU at 300 chunks/s, bench/stream.py)."""
        for event in events:
            if type(event) is not Notification:
                events = self._act_now(events)
                break
        else:
            if not self._consumer_busy and self._inbound.empty:
                with anyio.CancelScope(shield=True):  # `end_input` must not cut a handler
                    await self._notify_all(events)
            else:
                await self._inbound.put(events, size)
            return True
        if events:
            await self._inbound.put(events, size)
        return False

    async def _notify_all(self, events: list[Event]) -> None:
        handler = self._handler
        coalesce = getattr(handler, "coalesce", None)
        if coalesce is not None and len(events) > 1:
            events = coalesce(events)  # e.g. an ACP client merges one message's chunks
        for handled, event in enumerate(events, 1):
            assert type(event) is Notification
            try:
                await handler.handle_notification(event.method, event.params)
            except Exception:
                log.exception("%s: notification handler for %.100s failed",
                              self.name, event.method)
            if handled % 64 == 0:
                await anyio.lowlevel.checkpoint()  # stay fair to other tasks

    def _act_now(self, events: list[Event]) -> list[Event]:
        ordered: list[Event] = []
        for event in events:
            if type(event) is ProtocolViolation:
                self._report(event)
                continue
            if type(event) is CancelRequest:
                scope = self._running.get(event.request_id)
                if scope is not None:
                    scope.cancel()
                # Not started yet: the state remembers, and it is refused when it starts.
                continue
            if type(event) is Response or type(event) is ErrorResponse:
                waiter = self._waiters.get(event.request_id)
                if waiter is not None and not waiter.arrived:
                    waiter.arrived = True
                    if type(event) is ErrorResponse:
                        waiter.error = event.error
                    elif type(event) is Response:
                        waiter.result = event.result
            ordered.append(event)
        return ordered

    def _report(self, violation: ProtocolViolation) -> None:
        text = f"{violation.kind}: {violation.detail}"
        self.protocol_errors.append(text)
        self.protocol_error_counts[violation.kind] += 1
        total = sum(self.protocol_error_counts.values())
        if total <= self.limits.protocol_error_log:
            log.warning("%s: protocol error: %s", self.name, text)
        elif total == self.limits.protocol_error_log + 1:
            log.warning("%s: more protocol errors; counting them without logging", self.name)
        if self._on_protocol_error is not None:
            try:
                self._on_protocol_error(ProtocolError(violation.kind, violation.detail))
            except Exception:
                log.exception("%s: protocol error listener failed", self.name)

    async def _consumer(self) -> None:
        handled = 0
        try:
            while (item := await self._inbound.get()) is not None:
                self._consumer_busy = True
                batch, size = item
                handled = await self._handle_batch(batch, handled)
                self._inbound.release(size)
                self._consumer_busy = False
                del item, batch  # not kept while the next batch is awaited (see `_reader`)
        finally:
            self._consumer_done.set()

    async def _handle_batch(self, batch: list[Event], handled: int) -> int:
        """One batch in order; `handled` counts events across batches (for fairness)."""
        handler = self._handler
        for event in batch:
            if type(event) is Notification:
                try:
                    await handler.handle_notification(event.method, event.params)
                except Exception:
                    log.exception("%s: notification handler for %.100s failed",
                                  self.name, event.method)
            elif type(event) is Request:
                await self._start_request(event)
            elif type(event) is Response or type(event) is ErrorResponse:
                waiter = self._waiters.get(event.request_id)
                if waiter is not None:
                    waiter.done.set()
            elif type(event) is RejectRequest:
                await self._outbound.put(self._state.reject(event))
            handled += 1
            if handled % 64 == 0:
                await anyio.lowlevel.checkpoint()  # stay fair to other tasks
        return handled

    async def _start_request(self, event: Request) -> None:
        request_id = event.request_id
        if self._outbound.backlog >= self._outbound.capacity:
            # The agent is not reading our replies: take no more of its requests (and so,
            # soon, none of its output) until it does. Nothing is dropped.
            if not self._intake_paused:
                self._intake_paused = True
                log.warning("%s: the agent is not reading our replies (%d bytes waiting); "
                            "its requests wait", self.name, self._outbound.backlog)
            await self._outbound.wait_for_room()
            self._intake_paused = False
            log.info("%s: the agent reads again; taking its requests", self.name)
        if self._state.is_cancelled(request_id):
            await self._reply_error(request_id, RpcError.cancelled())
        elif len(self._running) >= self.limits.max_concurrent_inbound_requests:
            await self._reply_error(
                request_id, RpcError(INTERNAL_ERROR, "Too many concurrent requests; retry later"))
        else:
            assert self._task_group is not None
            scope = anyio.CancelScope()
            self._running[request_id] = scope
            self._task_group.start_soon(self._run_request, event, scope)
            # Let it run now: a handler with nothing to wait for queues its reply before
            # the next request starts, so the backlog check above sees it. Otherwise a
            # burst would start 64 handlers at once, each holding its reply in memory.
            await anyio.lowlevel.checkpoint()

    async def _run_request(self, event: Request, scope: anyio.CancelScope) -> None:
        request_id = event.request_id
        result: Any = None
        error: RpcError | None = None
        try:
            with scope:
                try:
                    result = await self._handler.handle_request(event.method, event.params)
                except RpcError as exc:
                    error = exc
                except Exception:
                    log.exception("%s: handler for %.100s failed", self.name, event.method)
                    error = RpcError(INTERNAL_ERROR, "Internal error")
        finally:
            del self._running[request_id]
        if scope.cancelled_caught:
            error = RpcError.cancelled()
        if error is None:
            try:
                line = self._state.respond(request_id, result)
            except LocalProtocolError:
                log.exception("%s: the result of %.100s is not JSON", self.name, event.method)
                error = RpcError(INTERNAL_ERROR, "Internal error")
            else:
                del result  # while the reply waits for room, only its line is held
                await self._outbound.put(line)
                return
        await self._reply_error(request_id, error)

    async def _reply_error(self, request_id: RequestId, error: RpcError) -> None:
        await self._outbound.put(self._state.respond_error(request_id, error))


__all__ = [
    "CANCEL_REQUEST",
    "JsonRpcPeer",
    "MessageHandler",
]
