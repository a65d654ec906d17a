"""The only door from the engine thread into Neovim.

pynvim accepts API calls only on its own (main) thread, so every call goes through
`nvim.async_call`; the engine awaits the result through a concurrent future, which turns
a slow Neovim into bigger batches rather than a growing queue.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any


class UiBridge:
    def __init__(self, nvim: Any) -> None:
        self.nvim = nvim

    async def exec_lua(self, code: str, *args: Any) -> Any:
        """Run Lua in Neovim and await its result (an awaited request: backpressure)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def work() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(self.nvim.exec_lua(code, *args))
                except BaseException as exc:  # delivered to the awaiting coroutine
                    future.set_exception(exc)

        self.nvim.async_call(work)
        return await asyncio.wrap_future(future)
