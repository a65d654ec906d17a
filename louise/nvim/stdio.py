"""louise's stdio channel to Neovim (the job's `rpc = true` pipe), msgpack-RPC without pynvim.

The process started by `jobstart` only ever needed a few things of pynvim: Lua's
notifications in (`louise`, `louise_stop`), a `ping` answered, `nvim_exec_lua` out.
pynvim brings its plugin host, greenlet, pathlib and its own asyncio loop with it: ~8 ms
of the engine's start (issue 25 item 2). This is that little, on msgpack alone (which the
engine's own socket channel, channel.py, uses anyway).

One thread reads (`run_loop`, or `call` before the loop runs: the start's own request);
any thread may send. A request from another thread (`post`) is answered through a
concurrent future, set by the reading thread. Bounded like the socket channel: a message
larger than MAX_MESSAGE_BYTES ends the channel.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import msgpack

log = logging.getLogger("louise.nvim")

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
READ_BYTES = 256 * 1024
MAX_EARLY_MESSAGES = 1024  # read before the loop serves them (Lua queues its commands)

REQUEST, RESPONSE, NOTIFICATION = 0, 1, 2


class RequestError(Exception):
    """Refuses a request from Neovim (`on_request` raises it): its message is the answer's
    error."""


class StdioNeovim:
    """msgpack-RPC on two file descriptors (Neovim's end of the job's stdio)."""

    def __init__(self, read_fd: int = 0, write_fd: int = 1) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        # As pynvim packs: strings an agent sent with lone surrogates still go through.
        self._packer = msgpack.Packer(unicode_errors="surrogateescape")
        self._unpacker = msgpack.Unpacker(raw=False, unicode_errors="surrogateescape",
                                          max_buffer_size=MAX_MESSAGE_BYTES)
        self._lock = threading.Lock()  # the packer, the write, the ids and the waiting
        self._next_id = 0
        self._waiting: dict[int, concurrent.futures.Future[Any]] = {}
        self._closed: BaseException | None = None
        self._on_request: Callable[[str, list[Any]], Any] | None = None
        self._on_notification: Callable[[str, list[Any]], None] | None = None
        # Neovim's requests and notifications read before `run_loop` (while the start's
        # own call waited for its answer): handled, in order, when it starts.
        self._early: list[Any] = []

    # ------------------------------------------------------------------ out (any thread)

    def post(self, method: str, *args: Any) -> concurrent.futures.Future[Any]:
        """Send a request now; its result (or error) arrives in the future, set by the
        reading thread."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if self._closed is not None:
                future.set_exception(ConnectionError(f"the channel to Neovim is closed "
                                                     f"({self._closed})"))
                return future
            self._next_id += 1
            ident = self._next_id
            self._waiting[ident] = future
            try:
                self._write(self._packer.pack([REQUEST, ident, method, list(args)]))
            except OSError as exc:
                self._waiting.pop(ident, None)
                future.set_exception(exc)
        return future

    def post_lua(self, code: str, args: tuple[Any, ...]) -> concurrent.futures.Future[Any]:
        return self.post("nvim_exec_lua", code, list(args))

    def notify_lua(self, code: str, *args: Any) -> None:
        """Run Lua in Neovim, no answer awaited."""
        with self._lock:
            self._write(self._packer.pack([NOTIFICATION, "nvim_exec_lua", [code, list(args)]]))

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._write_fd, view):]

    # ------------------------------------------------------------------ in (one thread)

    def call_lua(self, code: str, *args: Any) -> Any:
        """Run Lua in Neovim and wait for its result, reading the channel meanwhile: for
        the thread that reads it (before `run_loop`, or inside a handler)."""
        future = self.post_lua(code, args)
        while not future.done():
            if not self._read_once():
                break
        return future.result(timeout=0)

    def run_loop(self, on_request: Callable[[str, list[Any]], Any],
                 on_notification: Callable[[str, list[Any]], None]) -> None:
        """Read until Neovim closes the channel: requests answered by `on_request` (its
        result, or a RequestError's message as the error), notifications to
        `on_notification`, answers to the futures of `post`."""
        self._on_request, self._on_notification = on_request, on_notification
        early, self._early = self._early, []
        for message in early:
            self._handle(message)
        while self._read_once():
            pass

    def _read_once(self) -> bool:
        """One read's messages handled; False once the channel is closed."""
        try:
            data = os.read(self._read_fd, READ_BYTES)
        except OSError as exc:
            self._close(exc)
            return False
        if not data:
            self._close(EOFError("Neovim closed the channel"))
            return False
        try:
            self._unpacker.feed(data)
            for message in self._unpacker:
                self._handle(message)
        except (msgpack.BufferFull, ValueError) as exc:  # too large, or not msgpack-RPC
            self._close(exc)
            return False
        return True

    def _handle(self, message: Any) -> None:
        if not isinstance(message, list) or not message:
            return
        kind = message[0]
        if kind == RESPONSE and len(message) == 4:
            with self._lock:
                future = self._waiting.pop(message[1], None)
            if future is not None:
                error, result = message[2], message[3]
                if error is not None:
                    future.set_exception(RuntimeError(f"nvim_exec_lua: {error}"))
                else:
                    future.set_result(result)
        elif self._on_notification is None or self._on_request is None:
            if len(self._early) < MAX_EARLY_MESSAGES:
                self._early.append(message)
        elif kind == NOTIFICATION and len(message) == 3:
            if self._on_notification is not None:
                try:
                    self._on_notification(str(message[1]), _listed(message[2]))
                except Exception as exc:  # one notification lost, not the channel
                    log.warning("a notification from Neovim failed: %s", exc)
        elif kind == REQUEST and len(message) == 4:
            self._answer(message[1], str(message[2]), _listed(message[3]))

    def _answer(self, ident: Any, method: str, args: list[Any]) -> None:
        error: Any = None
        result: Any = None
        assert self._on_request is not None
        try:
            result = self._on_request(method, args)
        except RequestError as exc:
            error = str(exc)
        except Exception as exc:  # answered, one line: never a traceback
            log.warning("a request from Neovim failed: %s", exc)
            error = f"louise: {method!r} failed"
        with self._lock:
            if self._closed is None:
                with contextlib.suppress(OSError):  # closed: the next read says so
                    self._write(self._packer.pack([RESPONSE, ident, error, result]))

    def _close(self, reason: BaseException) -> None:
        with self._lock:
            if self._closed is None:
                self._closed = reason
            waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            future.set_exception(ConnectionError(f"the channel to Neovim closed ({reason})"))


def _listed(args: Any) -> list[Any]:
    return args if isinstance(args, list) else []
