"""The only door from the engine thread into Neovim.

Calls go over the engine's own channel to Neovim's server socket when it has one
(`channel.py`: awaited on the engine loop itself, no thread crossed); otherwise through
the process's channel to Neovim (`Fallback`: the job's stdio, `stdio.py`; pynvim's in the
remote-plugin host, `PynvimCalls`), the result awaited through a concurrent future.
Either way the call is awaited, which turns a slow Neovim into bigger batches rather than
a growing queue: at once (`exec_lua`), or, for a frame, once the next frame is due
(`post_lua`, then `LuaCall.result()`), so that its answer does not wake the engine in
between.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any, Protocol

import anyio
from anyio.abc import TaskStatus

from louise.nvim.channel import NvimChannel, Posted

log = logging.getLogger("louise.nvim")


class PostedLua(Protocol):
    """Lua sent to Neovim whose result is read later (a frame's answer)."""

    async def result(self) -> Any: ...


class LuaCaller(Protocol):
    """What the engine's parts call Neovim with (a `UiBridge`; a stand-in in tests)."""

    async def exec_lua(self, code: str, *args: Any) -> Any: ...

    async def post_lua(self, code: str, *args: Any) -> PostedLua: ...


class Fallback(Protocol):
    """The process's own channel to Neovim, for when the engine has no socket of its own:
    Lua sent from any thread, its result in a concurrent future."""

    def post_lua(self, code: str, args: tuple[Any, ...]) -> concurrent.futures.Future[Any]: ...


class PynvimCalls:
    """`Fallback` through pynvim (the remote-plugin host), which accepts API calls only on
    its own thread: `nvim.async_call`."""

    def __init__(self, nvim: Any) -> None:
        self.nvim = nvim

    def post_lua(self, code: str, args: tuple[Any, ...]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def work() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(self.nvim.exec_lua(code, *args))
                except BaseException as exc:  # delivered to the awaiting coroutine
                    future.set_exception(exc)

        self.nvim.async_call(work)
        return future


class LuaCall:
    """Lua sent to Neovim, its result not read yet."""

    def __init__(self, channel: NvimChannel | None, posted: Posted | None,
                 future: concurrent.futures.Future[Any] | None = None) -> None:
        self._channel = channel
        self._posted = posted
        self._future = future

    def release(self) -> None:
        """Done with a result read with `result_nowait(keep=True)`."""
        if self._channel is not None and self._posted is not None:
            self._channel.release(self._posted)

    async def result(self) -> Any:
        if self._channel is not None and self._posted is not None:
            return await self._channel.answer(self._posted)
        assert self._future is not None
        return await asyncio.wrap_future(self._future)

    def result_nowait(self, *, keep: bool = False) -> tuple[bool, Any]:
        """(False, None) while the result has not come, else (True, it); raises its error.
        `keep`: the call counts as out until `release()` (`NvimChannel.answer_nowait`)."""
        if self._channel is not None and self._posted is not None:
            return self._channel.answer_nowait(self._posted, keep=keep)
        assert self._future is not None
        if not self._future.done():
            return False, None
        return True, self._future.result()


class UiBridge:
    def __init__(self, fallback: Fallback, address: str | None = None) -> None:
        self.fallback = fallback
        self.address = address  # Neovim's server socket (v:servername), if any
        self.channel: NvimChannel | None = None

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """On the engine loop: open the engine's own channel and read its answers until it
        closes (then calls go through the fallback again). Without an address, or when the
        socket cannot be reached, the fallback serves alone."""
        if not self.address:
            task_status.started()
            return
        try:
            channel = await NvimChannel.connect(self.address)
        except OSError as exc:
            log.info("no channel of its own to Neovim (%s): calls go through the process's",
                     exc)
            task_status.started()
            return
        self.channel = channel
        task_status.started()
        try:
            await channel.run()
        finally:
            self.channel = None

    async def exec_lua(self, code: str, *args: Any) -> Any:
        """Run Lua in Neovim and await its result (an awaited request: backpressure)."""
        channel = self.channel
        if channel is not None and channel.open:
            return await channel.exec_lua(code, *args)
        return await asyncio.wrap_future(self.fallback.post_lua(code, args))

    async def post_lua(self, code: str, *args: Any) -> LuaCall:
        """Send Lua to Neovim now; its result is read when `LuaCall.result()` is awaited."""
        channel = self.channel
        if channel is not None and channel.open:
            return LuaCall(channel, await channel.post_lua(code, *args))
        return LuaCall(None, None, self.fallback.post_lua(code, args))

    def post_lua_nowait(self, code: str, *args: Any) -> LuaCall | None:
        """`post_lua` from a callback, over the engine's own channel only: None when the
        call cannot go at once (then nothing was sent; `post_lua` sends it)."""
        channel = self.channel
        if channel is None or not channel.open:
            return None
        posted = channel.post_nowait("nvim_exec_lua", code, list(args))
        return None if posted is None else LuaCall(channel, posted)
