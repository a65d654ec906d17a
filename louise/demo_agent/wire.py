"""NDJSON JSON-RPC 2.0 over stdin/stdout for the demo agent: stdlib and asyncio only.

Deliberately independent of `louise.acp` (the client core) and of the `acp` SDK, so the
demo agent starts fast and tests the client against code that does not share its bugs.

Shape of the I/O:
- stdin is read by a daemon thread (plain `os.read`, so it works for pipes, ttys and
  regular files alike: `louise-demo-agent < transcript.ndjson`). The thread frames lines
  with a size bound and hands whole batches of lines to the event loop through a small
  bounded queue; when the loop falls behind, the thread blocks, which is the backpressure.
- one dispatcher coroutine sorts each line into request / notification / response.
  Notifications are handled inline, in arrival order. Each request runs in its own task,
  so a prompt that streams (or waits on the client) never stops `session/cancel`,
  `$/cancel_request` or the client's responses from being read.
- writes are synchronous whole lines, flushed at the end of the event-loop step: stdout
  carries protocol lines only, and a client that stops reading simply blocks us (no
  queue can grow).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

log = logging.getLogger("louise.demo_agent")

JsonObject = dict[str, Any]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
RESOURCE_NOT_FOUND = -32002
AUTH_REQUIRED = -32000

_READ_SIZE = 1 << 16
_INBOX_BATCHES = 16  # batches of lines waiting for the dispatcher; the reader blocks beyond


class RpcError(Exception):
    """A JSON-RPC error, raised by handlers (sent to the peer) or received from it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code} {message}")
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> JsonObject:
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class PeerClosed(Exception):
    """The client closed our stdin (or our stdout): it can no longer answer anything."""


class LineFramer:
    """Splits a byte stream on `\\n`, bounded: a line longer than `max_line` is dropped.

    An overlong line is discarded as it streams past, never held whole. `\\r` before
    `\\n` is stripped and blank lines are skipped.
    """

    def __init__(self, max_line: int) -> None:
        self._max_line = max_line
        self._buf = bytearray()
        self._discarding = False
        self.dropped = 0  # overlong lines discarded so far

    def feed(self, data: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while (newline := data.find(b"\n", start)) >= 0:
            piece = data[start:newline]
            start = newline + 1
            if self._discarding or len(self._buf) + len(piece) > self._max_line:
                self._discarding = False
                self._buf.clear()
                self.dropped += 1
                continue
            self._buf += piece
            line = bytes(self._buf).rstrip(b"\r")
            self._buf.clear()
            if line.strip():
                lines.append(line)
        rest = data[start:]
        if not self._discarding:
            if len(self._buf) + len(rest) > self._max_line:
                self._buf.clear()
                self._discarding = True
            else:
                self._buf += rest
        return lines


@dataclass
class Inbound:
    """One request from the client while its handler runs.

    A handler normally just returns its result. It may instead `respond()` early and
    keep going (to send notifications *after* its reply, as real agents do), or set
    `on_cancel` to handle `$/cancel_request` itself instead of being cancelled outright.
    """

    peer: StdioPeer
    id: Any
    method: str
    params: JsonObject
    on_cancel: Callable[[], None] | None = None
    responded: bool = False
    cancel_requested: bool = False
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def respond(self, result: Any) -> None:
        if not self.responded:
            self.responded = True
            self.peer.send({"jsonrpc": "2.0", "id": self.id, "result": result})

    def respond_error(self, error: RpcError) -> None:
        if not self.responded:
            self.responded = True
            self.peer.send({"jsonrpc": "2.0", "id": self.id, "error": error.to_json()})

    def never_respond(self) -> None:
        """Mark the request answered without sending anything (a fail mode)."""
        self.responded = True


RequestHandler = Callable[[Inbound], Awaitable[Any]]
NotificationHandler = Callable[[str, JsonObject], None]


def _id_key(request_id: Any) -> str:
    # 1, "1" and true are different ids; json.dumps keeps them apart and hashable.
    return json.dumps(request_id)


class StdioPeer:
    """The agent end of an NDJSON JSON-RPC connection over stdin/stdout."""

    def __init__(
        self,
        *,
        max_line: int,
        max_inflight: int = 64,
        stdin_fd: int | None = None,
        stdout: BinaryIO | None = None,
    ) -> None:
        self._max_line = max_line
        self._max_inflight = max_inflight
        self._stdin_fd = sys.stdin.fileno() if stdin_fd is None else stdin_fd
        self._out = sys.stdout.buffer if stdout is None else stdout
        self._inbox: asyncio.Queue[list[bytes] | None] = asyncio.Queue(_INBOX_BATCHES)
        self._inflight: dict[str, Inbound] = {}
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0
        self._out_broken = False
        self._flush_scheduled = False
        self.closed = asyncio.Event()  # set on stdin EOF or a broken stdout

    # ---- output -------------------------------------------------------------------

    def send(self, message: JsonObject) -> None:
        # ensure_ascii=False keeps UTF-8 text readable; json escapes every control
        # character, so a message is always exactly one line.
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        self.send_raw(data + b"\n")

    def send_raw(self, data: bytes) -> None:
        """Write bytes to stdout as they are (only the `garbage` fail mode bypasses JSON)."""
        if self._out_broken:
            return
        try:
            self._out.write(data)
        except (ValueError, OSError) as exc:
            self._stdout_gone(exc)
            return
        # Flush once per event-loop step rather than once per line: a burst of chunks
        # becomes one write, and the line still leaves before anything can wait on it.
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._flush_scheduled = False
        if self._out_broken:
            return
        try:
            self._out.flush()
        except (ValueError, OSError) as exc:
            self._stdout_gone(exc)

    def _stdout_gone(self, exc: Exception) -> None:
        log.warning("stdout is gone (%s); shutting down", exc.__class__.__name__)
        self._out_broken = True
        # Point fd 1 at /dev/null so the interpreter's final flush cannot fail loudly.
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 1)
        self._on_closed()
        # Wake the dispatcher; if the inbox is full it checks `_out_broken` soon anyway.
        with contextlib.suppress(asyncio.QueueFull):
            self._inbox.put_nowait(None)

    def notify(self, method: str, params: JsonObject) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def start_request(self, method: str, params: JsonObject) -> tuple[int, asyncio.Future[Any]]:
        """Send a request to the client; the future resolves to its result or RpcError.

        The caller must `forget()` the id once done with it. Our ids count up from 0.
        """
        if self.closed.is_set():
            raise PeerClosed(method)
        request_id = self._next_id
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id, future

    def forget(self, request_id: int) -> None:
        self._pending.pop(request_id, None)

    def abandon(self, request_id: int) -> None:
        """We no longer want the answer: tell the client with `$/cancel_request`."""
        future = self._pending.pop(request_id, None)
        if future is not None and not future.done():
            future.cancel()
            self.notify("$/cancel_request", {"requestId": request_id})

    async def request(self, method: str, params: JsonObject) -> Any:
        """Send a request to the client and wait for its result (raises RpcError)."""
        request_id, future = self.start_request(method, params)
        try:
            return await future
        finally:
            self.forget(request_id)

    # ---- input --------------------------------------------------------------------

    async def serve(
        self, handle_request: RequestHandler, on_notification: NotificationHandler
    ) -> None:
        """Read and dispatch until stdin closes, then let in-flight requests finish."""
        self._handle_request = handle_request
        self._on_notification = on_notification
        loop = asyncio.get_running_loop()
        reader = threading.Thread(
            target=self._read_stdin, args=(loop,), name="demo-agent-stdin", daemon=True
        )
        reader.start()
        while (batch := await self._inbox.get()) is not None and not self._out_broken:
            for line in batch:
                self._dispatch(line)
        self._on_closed()
        # Requests already read still get their answers: a transcript piped from a file
        # reaches EOF long before its prompt has finished streaming.
        while self._inflight:
            tasks = [inbound.task for inbound in self._inflight.values() if inbound.task]
            await asyncio.gather(*tasks, return_exceptions=True)

    def _on_closed(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PeerClosed("stdin closed"))

    def _read_stdin(self, loop: asyncio.AbstractEventLoop) -> None:
        framer = LineFramer(self._max_line)
        try:
            while data := os.read(self._stdin_fd, _READ_SIZE):
                dropped = framer.dropped
                lines = framer.feed(data)
                if framer.dropped != dropped:
                    log.warning("dropped a line longer than %d bytes", self._max_line)
                if lines and not self._hand_over(loop, lines):
                    return
        except OSError as exc:
            log.warning("reading stdin failed: %s", exc)
        self._hand_over(loop, None)

    def _hand_over(self, loop: asyncio.AbstractEventLoop, item: list[bytes] | None) -> bool:
        try:
            asyncio.run_coroutine_threadsafe(self._inbox.put(item), loop).result()
        except (RuntimeError, concurrent.futures.CancelledError):
            return False  # the loop is gone: we are exiting anyway
        return True

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:  # includes UnicodeDecodeError
            log.warning("ignoring a line that is not JSON (%d bytes)", len(line))
            self._send_error(None, RpcError(PARSE_ERROR, "Parse error"))
            return
        if not isinstance(message, dict):
            self._send_error(None, RpcError(INVALID_REQUEST, "Invalid Request"))
            return
        method = message.get("method")
        if isinstance(method, str):
            params = message.get("params")
            if params is None:
                params = {}
            if "id" not in message:
                if isinstance(params, dict):
                    self._notification(method, params)
                return
            if not isinstance(params, dict):
                self._send_error(
                    message["id"], RpcError(INVALID_PARAMS, "params must be an object")
                )
                return
            self._start_request(message["id"], method, params)
        elif "id" in message and ("result" in message or "error" in message):
            self._response(message)
        else:
            self._send_error(message.get("id"), RpcError(INVALID_REQUEST, "Invalid Request"))

    def _send_error(self, request_id: Any, error: RpcError) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})

    def _start_request(self, request_id: Any, method: str, params: JsonObject) -> None:
        key = _id_key(request_id)
        if key in self._inflight:
            self._send_error(request_id, RpcError(INVALID_REQUEST, "Duplicate request id"))
            return
        if len(self._inflight) >= self._max_inflight:
            # Refuse rather than queue: waiting here would also stop us reading the
            # responses that in-flight requests are waiting for.
            self._send_error(request_id, RpcError(INTERNAL_ERROR, "Too many concurrent requests"))
            return
        inbound = Inbound(self, request_id, method, params)
        self._inflight[key] = inbound
        inbound.task = asyncio.create_task(self._run_request(key, inbound), name=method)

    async def _run_request(self, key: str, inbound: Inbound) -> None:
        try:
            result = await self._handle_request(inbound)
        except RpcError as error:
            inbound.respond_error(error)
        except asyncio.CancelledError:
            if not inbound.cancel_requested:
                raise
            inbound.respond_error(RpcError(REQUEST_CANCELLED, "Request cancelled"))
        except PeerClosed:
            log.info("%s abandoned: the client is gone", inbound.method)
        except Exception:
            log.exception("internal error while handling %s", inbound.method)
            inbound.respond_error(RpcError(INTERNAL_ERROR, "Internal error"))
        else:
            inbound.respond(result)
        finally:
            self._inflight.pop(key, None)

    def _notification(self, method: str, params: JsonObject) -> None:
        if method == "$/cancel_request":
            self._cancel_inbound(params.get("requestId"))
        else:
            self._on_notification(method, params)

    def _cancel_inbound(self, request_id: Any) -> None:
        inbound = self._inflight.get(_id_key(request_id))
        if inbound is None or inbound.responded:
            log.debug("$/cancel_request for %r: nothing in flight", request_id)
            return
        inbound.cancel_requested = True
        if inbound.on_cancel is not None:
            inbound.on_cancel()  # the handler winds down and answers -32800 itself
        elif inbound.task is not None:
            inbound.task.cancel()

    def _response(self, message: JsonObject) -> None:
        request_id = message["id"]
        # Our ids are plain ints (`type is int`: JSON true must not match id 1).
        future = self._pending.get(request_id) if type(request_id) is int else None
        if future is None or future.done():
            log.info("ignoring a response to unknown or abandoned request %r", request_id)
            return
        error = message.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            text = error.get("message")
            future.set_exception(
                RpcError(
                    code if isinstance(code, int) else INTERNAL_ERROR,
                    text if isinstance(text, str) else "error",
                    error.get("data"),
                )
            )
        elif "error" in message:
            future.set_exception(RpcError(INTERNAL_ERROR, "malformed error response"))
        else:
            future.set_result(message.get("result"))
