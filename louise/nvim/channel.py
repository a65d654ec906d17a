"""The engine's own msgpack-RPC connection to Neovim, on the engine loop.

pynvim serves louise's stdio channel on its own thread, so a call from the engine through
it crosses threads twice (the request out, the answer back), each a wake-up of another
event loop: measured by bench/stream.py, that was a third of louise's Python CPU while a
reply streams. The engine instead connects to Neovim's server socket (`v:servername`)
and awaits its frame calls there directly: one write out, one read back, same thread.

The socket is the engine's own, without an asyncio transport (which would watch it all
the time). A frame is posted (`post`): written at once, its answer read when the engine
asks for it, at the next frame, by a plain non-blocking read: the answer, back a moment
after the frame, neither wakes the engine nor costs a round of its loop. The socket is
watched only while a call waits for an answer that has not come yet, and while no call
is out at all (then `run` watches it: Neovim closing the channel, a stray message); each
loop wake-up costs ~0.1-0.2 ms of CPU on a shared VM, at ~80 frames a second.

A frame sent from a timer's callback goes out with `post_nowait` (nothing sent when it
cannot start at once; the rest of a message the system's buffer did not take whole is
written by a task of its own, ahead of any later write) and its answer is read with
`answer_nowait`.

Only requests go out (`nvim_exec_lua`); Neovim's answers are matched by id. Anything
else Neovim might send on this channel (a broadcast notification, a request) is
ignored or refused. Reads are bounded: a message larger than MAX_MESSAGE_BYTES ends the
channel, and the engine falls back to pynvim's. Writes are bounded: a call waits until
Neovim has taken its message (one message at a time beyond what the system buffers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Any, NamedTuple

import anyio
import msgpack

log = logging.getLogger("louise.nvim")

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT_SECONDS = 2.0
RECEIVE_BYTES = 256 * 1024
# With no call out this long, `run` watches the socket. Not at once: a frame's answer read
# is followed by the next frame's post in the same step, and a timer cancelled before it
# is due costs the loop nothing (a callback scheduled at once would cost it a round).
IDLE_AFTER_SECONDS = 0.001


class ChannelClosed(ConnectionError):
    pass


class Posted(NamedTuple):
    """A request sent, its answer not read yet (a tuple: one is made every frame, and a
    frozen dataclass's three `object.__setattr__` calls cost more than the call itself)."""

    method: str
    ident: int
    answer: asyncio.Future[tuple[Any, Any]]


class NvimChannel:
    """msgpack-RPC requests over one Unix socket; `run()` lasts as long as the socket."""

    def __init__(self, sock: socket.socket | None = None) -> None:
        self._sock = sock
        # As pynvim packs: strings an agent sent with lone surrogates still go through.
        self._packer = msgpack.Packer(unicode_errors="surrogateescape")
        self._unpacker = msgpack.Unpacker(raw=False, unicode_errors="surrogateescape",
                                          max_buffer_size=MAX_MESSAGE_BYTES)
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[tuple[Any, Any]]] = {}
        self._write_lock = asyncio.Lock()
        self.unsent_bytes = 0  # of the message being written, not taken by the system yet
        self._reading = False  # one task reads (or waits to read) the socket at a time
        self._handover: asyncio.Future[None] | None = None  # its readers-in-waiting
        self._idle: asyncio.Future[None] | None = None  # `run`, waiting for no call out
        self._idle_timer: asyncio.TimerHandle | None = None
        self._replies: set[asyncio.Future[None]] = set()  # refusals being written
        # The rest of a message `post_nowait` could not write whole, being written.
        self._rest: asyncio.Task[None] | None = None
        self.closed: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop it is used on

    @classmethod
    async def connect(cls, address: str) -> NvimChannel:
        """A channel to Neovim's server at `address` (a Unix socket path); OSError (a
        TimeoutError too) when it cannot be reached in time."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_SECONDS):
                await asyncio.get_running_loop().sock_connect(sock, address)
        except BaseException:
            sock.close()
            raise
        return cls(sock)

    @property
    def open(self) -> bool:
        return self.closed is None

    # ------------------------------------------------------------------ calls

    async def request(self, method: str, *args: Any) -> Any:
        return await self.answer(await self.post(method, *args))

    async def exec_lua(self, code: str, *args: Any) -> Any:
        return await self.request("nvim_exec_lua", code, list(args))

    async def post_lua(self, code: str, *args: Any) -> Posted:
        return await self.post("nvim_exec_lua", code, list(args))

    async def post(self, method: str, *args: Any) -> Posted:
        """Send a request now; its answer is read when `answer()` asks for it."""
        if self.closed is not None or self._sock is None:
            raise ChannelClosed(f"the channel to Neovim is closed ({self.closed})")
        self._next_id += 1
        ident = self._next_id
        answer: asyncio.Future[tuple[Any, Any]] = asyncio.get_running_loop().create_future()
        await self._write(self._packer.pack([0, ident, method, list(args)]))
        # Out once written whole (its answer is read on this loop, later).
        self._waiting[ident] = answer
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self.closed is not None:
            self._lost(self.closed)
        return Posted(method, ident, answer)

    def post_nowait(self, method: str, *args: Any) -> Posted | None:
        """`post` without waiting, for a frame sent from a timer's callback: None when the
        request cannot start at once (another write under way, the system's buffer full,
        the channel closed); then nothing was sent. What the buffer did not take whole
        is written by a task of its own, ahead of any later write."""
        sock = self._sock
        if self.closed is not None or sock is None or self._write_lock.locked() \
                or self._rest is not None:
            return None
        ident = self._next_id + 1
        data = self._packer.pack([0, ident, method, list(args)])
        try:
            sent = sock.send(data)
        except BlockingIOError:
            return None
        except OSError as exc:
            self._lost(ChannelClosed(f"the channel to Neovim failed ({exc})"))
            return None
        self._next_id = ident
        loop = self._loop
        if loop is None:  # (asked once: each ask is a system call, getpid)
            loop = self._loop = asyncio.get_running_loop()
        answer: asyncio.Future[tuple[Any, Any]] = loop.create_future()
        self._waiting[ident] = answer
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if sent < len(data):
            self.unsent_bytes = len(data) - sent
            self._rest = asyncio.ensure_future(self._write_rest(memoryview(data)[sent:]))
        return Posted(method, ident, answer)

    async def _write_rest(self, view: memoryview) -> None:
        sock = self._sock
        self.unsent_bytes = len(view)
        try:
            while view and sock is not None:
                await anyio.wait_writable(sock)
                with contextlib.suppress(BlockingIOError):
                    view = view[sock.send(view):]
                self.unsent_bytes = len(view)
        except (OSError, anyio.ClosedResourceError) as exc:
            self._lost(ChannelClosed(f"the channel to Neovim failed ({exc})"))
        except BaseException:  # cancelled: after part of the message, the rest is lost
            self._lost(ChannelClosed("a call was cut off while it was being sent"))
            raise
        finally:
            self.unsent_bytes = 0
            self._rest = None

    def answer_nowait(self, posted: Posted, *, keep: bool = False) -> tuple[bool, Any]:
        """`answer` without waiting: (False, None) when it has not come yet, else (True,
        the result); raises as `answer` does. `keep`: once it has come (or failed), the
        call still counts as out until `release(posted)`: for a caller that sends its
        next call in the same step (the frame loop's next frame), so the channel never
        looks idle in between and arms no idle watch only to cancel it (a timer armed
        and cancelled every frame, ~5 % of the engine's CPU while a chat streams)."""
        if not posted.answer.done():
            if self._reading:  # a task reads the socket: the answer comes through it
                return False, None
            self._receive()
            if not posted.answer.done():
                return False, None
        try:
            error, result = posted.answer.result()
        finally:
            if not keep:
                self._forget(posted.ident)
        if error is not None:
            raise RuntimeError(f"{posted.method}: {error}")
        return True, result

    def release(self, posted: Posted) -> None:
        """A call read with `answer_nowait(keep=True)` no longer counts as out."""
        self._forget(posted.ident)

    async def answer(self, posted: Posted) -> Any:
        """The result of a posted call (raises its error, or ChannelClosed)."""
        try:
            while not posted.answer.done():
                await self._read_until(posted.answer)
            error, result = posted.answer.result()
        finally:
            self._forget(posted.ident)
        if error is not None:
            raise RuntimeError(f"{posted.method}: {error}")
        return result

    def _forget(self, ident: int) -> None:
        self._waiting.pop(ident, None)
        if not self._waiting and self._idle is not None and self._idle_timer is None:
            self._idle_timer = asyncio.get_running_loop().call_later(IDLE_AFTER_SECONDS,
                                                                     self._maybe_idle)

    def _maybe_idle(self) -> None:
        self._idle_timer = None
        idle = self._idle
        if idle is not None and not self._waiting and not idle.done():
            idle.set_result(None)

    # ------------------------------------------------------------------ the socket

    async def _write(self, data: bytes) -> None:
        """All of `data`, waiting while Neovim leaves the system's buffer full. A call cut
        off in the middle of its message ends the channel (the rest would be garbage)."""
        sock = self._sock
        assert sock is not None
        async with self._write_lock:
            while self._rest is not None:  # a message `post_nowait` began goes out first
                await asyncio.wait((self._rest,))
            view = memoryview(data)
            self.unsent_bytes = len(view)
            try:
                while view:
                    with contextlib.suppress(BlockingIOError):
                        view = view[sock.send(view):]
                    self.unsent_bytes = len(view)
                    if view:
                        await anyio.wait_writable(sock)
            except (OSError, anyio.ClosedResourceError) as exc:
                self._lost(ChannelClosed(f"the channel to Neovim failed ({exc})"))
                raise ChannelClosed(f"the channel to Neovim closed ({exc})") from exc
            except BaseException:  # cancelled: after part of the message, the rest is lost
                if 0 < view.nbytes < len(data):
                    self._lost(ChannelClosed("a call was cut off while it was being sent"))
                raise
            finally:
                self.unsent_bytes = 0

    async def _read_until(self, target: asyncio.Future[Any]) -> None:
        """Read and dispatch until `target` is done, or until the task reading for others
        stops (then the caller asks again)."""
        if self._reading:
            if self._handover is None:
                self._handover = asyncio.get_running_loop().create_future()
            await asyncio.wait((target, self._handover), return_when=asyncio.FIRST_COMPLETED)
            return
        self._reading = True
        try:
            while not target.done():
                if not self._receive():
                    await self._wait_readable()
        finally:
            self._reading_done()

    def _reading_done(self) -> None:
        self._reading = False
        handover, self._handover = self._handover, None
        if handover is not None and not handover.done():
            handover.set_result(None)

    async def _wait_readable(self) -> None:
        assert self._sock is not None
        try:
            await anyio.wait_readable(self._sock)
        except anyio.ClosedResourceError:
            self._lost(ChannelClosed("closed"))

    def _receive(self) -> bool:
        """Read what the socket holds and dispatch it; False when it held nothing."""
        sock = self._sock
        if sock is None or self.closed is not None:
            return True
        try:
            data = sock.recv(RECEIVE_BYTES)
        except BlockingIOError:
            return False
        except OSError as exc:
            self._lost(ChannelClosed(f"the channel to Neovim failed ({exc})"))
            return True
        if not data:
            self._lost(ChannelClosed("Neovim closed the channel"))
            return True
        try:
            self._unpacker.feed(data)
            for message in self._unpacker:
                self._dispatch(message)
        except (ValueError, msgpack.UnpackException) as exc:  # oversized or garbage
            log.warning("channel to Neovim: unreadable message: %s", exc)
            self._lost(exc)
        return True

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, list) or not message:
            return
        kind = message[0]
        if kind == 1 and len(message) == 4:
            answer = self._waiting.get(message[1]) if isinstance(message[1], int) else None
            if answer is not None and not answer.done():
                answer.set_result((message[2], message[3]))
        elif kind == 0 and len(message) == 4:
            # A request to us: we serve none.
            reply = asyncio.ensure_future(self._refuse(message[1]))
            self._replies.add(reply)
            reply.add_done_callback(self._replies.discard)

    async def _refuse(self, ident: Any) -> None:
        with contextlib.suppress(ChannelClosed, OSError):
            await self._write(self._packer.pack([1, ident, "louise: no requests here", None]))

    # ------------------------------------------------------------------ lifetime

    async def run(self) -> None:
        """Until Neovim closes the channel (or this task is cancelled: it closes it);
        then every waiting call fails. While no call is out, it watches the socket."""
        loop = asyncio.get_running_loop()
        try:
            while self.closed is None:
                if self._waiting or self._reading:
                    self._idle = loop.create_future()
                    try:
                        await self._idle
                    finally:
                        self._idle = None
                    continue
                self._reading = True
                try:
                    await self._wait_readable()
                    self._receive()
                finally:
                    self._reading_done()
        finally:
            self._lost(ChannelClosed("stopped"))
            await self.aclose()

    def _lost(self, reason: BaseException) -> None:
        if self.closed is None:
            self.closed = reason
        failure = ChannelClosed(f"the channel to Neovim closed ({self.closed})")
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(failure)
                answer.exception()  # retrieved: a posted call nobody reads is no error
        if self._idle is not None and not self._idle.done():
            self._idle.set_result(None)
        handover, self._handover = self._handover, None
        if handover is not None and not handover.done():
            handover.set_result(None)

    async def aclose(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            anyio.notify_closing(sock)  # a task waiting on it ends with ClosedResourceError
            sock.close()
