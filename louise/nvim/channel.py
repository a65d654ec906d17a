"""The engine's own msgpack-RPC connection to Neovim, on the engine loop.

pynvim serves louise's stdio channel on its own thread, so a call from the engine through
it crosses threads twice (the request out, the answer back), each a wake-up of another
event loop: measured by bench/stream.py, that was a third of louise's Python CPU while a
reply streams. The engine instead connects to Neovim's server socket (`v:servername`)
and awaits its frame calls there directly: one write out, one read back, same thread.

The socket is served by an asyncio protocol (the engine loop is asyncio's): an answer is
matched to its call in the read callback itself, so a frame's round trip costs one
wake-up of the caller, not the stream reader's task and then the caller's (each loop
wake-up costs ~0.1 ms of CPU on a shared VM; at ~80 frames a second that counted).

A frame is posted (`post`): sent at once, its answer read when the engine asks for it,
at the next frame. Until then the socket is not watched (the transport's reading is
paused while every outstanding call is a posted one nobody awaits yet), so an answer that
comes back while the engine waits for its next frame does not wake it: a streaming frame
costs the engine one wake-up (its clock), not two.

Only requests go out (`nvim_exec_lua`); Neovim's answers are matched by id. Anything
else Neovim might send on this channel (a broadcast notification, a request) is
ignored or refused. Reads are bounded: a message larger than MAX_MESSAGE_BYTES ends the
channel, and the engine falls back to pynvim's. Writes are bounded: a caller waits while
Neovim leaves more than MAX_UNSENT_BYTES unread.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import anyio
import msgpack

log = logging.getLogger("louise.nvim")

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_UNSENT_BYTES = 4 * 1024 * 1024  # the transport's high-water mark
CONNECT_TIMEOUT_SECONDS = 2.0


class ChannelClosed(ConnectionError):
    pass


@dataclass(frozen=True, slots=True)
class Posted:
    """A request sent, its answer not read yet."""

    method: str
    answer: asyncio.Future[tuple[Any, Any]]


class _Protocol(asyncio.Protocol):
    def __init__(self, channel: NvimChannel) -> None:
        self._channel = channel

    def data_received(self, data: bytes) -> None:
        self._channel._feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._channel._lost(exc or ChannelClosed("Neovim closed the channel"))

    def pause_writing(self) -> None:
        self._channel._paused = True

    def resume_writing(self) -> None:
        self._channel._resume()


class NvimChannel:
    """msgpack-RPC requests over one Unix socket; `run()` lasts as long as the socket."""

    def __init__(self, transport: asyncio.Transport | None = None) -> None:
        self._transport = transport
        # As pynvim packs: strings an agent sent with lone surrogates still go through.
        self._packer = msgpack.Packer(unicode_errors="surrogateescape")
        self._unpacker = msgpack.Unpacker(raw=False, unicode_errors="surrogateescape",
                                          max_buffer_size=MAX_MESSAGE_BYTES)
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[tuple[Any, Any]]] = {}
        self._paused = False
        self._drained: asyncio.Future[None] | None = None
        self._ended = anyio.Event()
        self.closed: BaseException | None = None
        self._awaited = 0  # calls whose answer someone awaits now: the socket is watched

    @classmethod
    async def connect(cls, address: str) -> NvimChannel:
        """A channel to Neovim's server at `address` (a Unix socket path); OSError (a
        TimeoutError too) when it cannot be reached in time."""
        channel = cls()
        loop = asyncio.get_running_loop()
        with anyio.fail_after(CONNECT_TIMEOUT_SECONDS):
            transport, _ = await loop.create_unix_connection(lambda: _Protocol(channel),
                                                             address)
        transport.set_write_buffer_limits(high=MAX_UNSENT_BYTES)
        channel._transport = transport
        return channel

    @property
    def open(self) -> bool:
        return self.closed is None

    async def request(self, method: str, *args: Any) -> Any:
        return await self.answer(Posted(method, await self._send(method, args)))

    async def post(self, method: str, *args: Any) -> Posted:
        """Send a request now; its answer is read once `answer()` awaits it (until then,
        with nothing else awaited, the socket is not watched)."""
        posted = Posted(method, await self._send(method, args))
        self._watch()
        return posted

    async def answer(self, posted: Posted) -> Any:
        """The result of a posted call (raises its error, or ChannelClosed)."""
        self._awaited += 1
        self._watch()
        try:
            error, result = await posted.answer
        finally:
            self._awaited -= 1
            self._watch()
        if error is not None:
            raise RuntimeError(f"{posted.method}: {error}")
        return result

    async def _send(self, method: str, args: tuple[Any, ...]) -> asyncio.Future[tuple[Any, Any]]:
        if self.closed is not None or self._transport is None:
            raise ChannelClosed(f"the channel to Neovim is closed ({self.closed})")
        while self._paused:  # Neovim is not reading: wait rather than buffer without end
            if self._drained is None:
                self._drained = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._drained)
            if self.closed is not None:
                raise ChannelClosed(f"the channel to Neovim closed ({self.closed})")
        self._next_id += 1
        ident = self._next_id
        answer: asyncio.Future[tuple[Any, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = answer
        answer.add_done_callback(lambda _: self._waiting.pop(ident, None))
        self._transport.write(self._packer.pack([0, ident, method, list(args)]))
        return answer

    def _watch(self) -> None:
        """Watch the socket unless every outstanding call is a posted one nobody awaits
        yet (an idle channel is watched: Neovim closing it, or a stray message)."""
        transport = self._transport
        if transport is None or self.closed is not None:
            return
        quiet = self._awaited == 0 and any(not answer.done()
                                           for answer in self._waiting.values())
        if quiet == transport.is_reading():
            if quiet:
                transport.pause_reading()
            else:
                transport.resume_reading()

    async def exec_lua(self, code: str, *args: Any) -> Any:
        return await self.request("nvim_exec_lua", code, list(args))

    async def post_lua(self, code: str, *args: Any) -> Posted:
        return await self.post("nvim_exec_lua", code, list(args))

    async def run(self) -> None:
        """Until Neovim closes the channel (or this task is cancelled: it closes it);
        then every waiting call fails."""
        try:
            await self._ended.wait()
        finally:
            self._lost(ChannelClosed("stopped"))
            await self.aclose()

    def _feed(self, data: bytes) -> None:
        try:
            self._unpacker.feed(data)
            for message in self._unpacker:
                self._dispatch(message)
        except (ValueError, msgpack.UnpackException) as exc:  # oversized or garbage
            log.warning("channel to Neovim: unreadable message: %s", exc)
            self._lost(exc)
            if self._transport is not None:
                self._transport.abort()

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, list) or not message:
            return
        kind = message[0]
        if kind == 1 and len(message) == 4:
            answer = self._waiting.get(message[1]) if isinstance(message[1], int) else None
            if answer is not None and not answer.done():
                answer.set_result((message[2], message[3]))
        elif kind == 0 and len(message) == 4 and self._transport is not None:
            # A request to us: we serve none.
            self._transport.write(
                self._packer.pack([1, message[1], "louise: no requests here", None]))

    def _resume(self) -> None:
        self._paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    def _lost(self, reason: BaseException) -> None:
        if self.closed is None:
            self.closed = reason
        failure = ChannelClosed(f"the channel to Neovim closed ({self.closed})")
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(failure)
        self._resume()
        self._ended.set()

    async def aclose(self) -> None:
        if self._transport is not None:
            self._transport.close()
