"""The engine's own msgpack-RPC connection to Neovim, on the engine loop.

pynvim serves louise's stdio channel on its own thread, so a call from the engine through
it crosses threads twice (the request out, the answer back), each a wake-up of another
event loop: measured by bench/stream.py, that was a third of louise's Python CPU while a
reply streams. The engine instead connects to Neovim's server socket (`v:servername`)
and awaits its frame calls there directly: one write out, one read back, same thread.

Only requests go out (`nvim_exec_lua`); Neovim's answers are matched by id. Anything
else Neovim might send on this channel (a broadcast notification, a request) is
ignored or refused. Reads are bounded: a message larger than MAX_MESSAGE_BYTES ends the
channel, and the engine falls back to pynvim's.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import anyio
import anyio.abc
import msgpack

log = logging.getLogger("louise.nvim")

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
READ_CHUNK = 256 * 1024
CONNECT_TIMEOUT_SECONDS = 2.0


class ChannelClosed(ConnectionError):
    pass


class NvimChannel:
    """msgpack-RPC requests over one byte stream; `run()` reads the answers."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self._stream = stream
        # As pynvim packs: strings an agent sent with lone surrogates still go through.
        self._packer = msgpack.Packer(unicode_errors="surrogateescape")
        self._next_id = 0
        self._waiting: dict[int, tuple[anyio.Event, list[Any]]] = {}
        self._send_lock = anyio.Lock()
        self.closed: BaseException | None = None

    @classmethod
    async def connect(cls, address: str) -> NvimChannel:
        """A channel to Neovim's server at `address` (a Unix socket path); OSError (a
        TimeoutError too) when it cannot be reached in time."""
        with anyio.fail_after(CONNECT_TIMEOUT_SECONDS):
            return cls(await anyio.connect_unix(address))

    @property
    def open(self) -> bool:
        return self.closed is None

    async def request(self, method: str, *args: Any) -> Any:
        if self.closed is not None:
            raise ChannelClosed(f"the channel to Neovim is closed ({self.closed})")
        self._next_id += 1
        ident = self._next_id
        slot: tuple[anyio.Event, list[Any]] = (anyio.Event(), [])
        self._waiting[ident] = slot
        try:
            data = self._packer.pack([0, ident, method, list(args)])
            async with self._send_lock:
                await self._stream.send(data)
            await slot[0].wait()
        finally:
            self._waiting.pop(ident, None)
        if not slot[1]:
            raise ChannelClosed(f"the channel to Neovim closed ({self.closed})")
        error, result = slot[1]
        if error is not None:
            raise RuntimeError(f"{method}: {error}")
        return result

    async def exec_lua(self, code: str, *args: Any) -> Any:
        return await self.request("nvim_exec_lua", code, list(args))

    async def run(self) -> None:
        """Read answers until Neovim closes the channel; then every waiting call fails."""
        unpacker = msgpack.Unpacker(raw=False, unicode_errors="surrogateescape",
                                    max_buffer_size=MAX_MESSAGE_BYTES)
        try:
            while True:
                try:
                    data = await self._stream.receive(READ_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError,
                        anyio.BrokenResourceError) as exc:
                    self.closed = exc
                    return
                unpacker.feed(data)
                for message in unpacker:
                    await self._dispatch(message)
        except (ValueError, msgpack.UnpackException) as exc:  # oversized or garbage
            log.warning("channel to Neovim: unreadable message: %s", exc)
            self.closed = exc
        finally:
            if self.closed is None:
                self.closed = ChannelClosed("stopped")
            for event, _ in list(self._waiting.values()):
                event.set()
            await self.aclose()

    async def _dispatch(self, message: Any) -> None:
        if not isinstance(message, list) or not message:
            return
        kind = message[0]
        if kind == 1 and len(message) == 4:
            slot = self._waiting.get(message[1])
            if slot is not None:
                slot[1][:] = [message[2], message[3]]
                slot[0].set()
        elif kind == 0 and len(message) == 4:  # a request to us: we serve none
            data = self._packer.pack([1, message[1], "louise: no requests here", None])
            async with self._send_lock:
                await self._stream.send(data)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True), contextlib.suppress(
                OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._stream.aclose()
