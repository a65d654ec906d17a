"""The engine's own thread: an anyio event loop in a daemon thread, entered from pynvim's
thread through a blocking portal.

The portal is opened inside the loop (never `start_blocking_portal()` kept open for the
life of the process: when Neovim dies, that leaves the process orphaned; see
docs/nvim-runtime-notes.md §2).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

log = logging.getLogger("louise.nvim")

READY_TIMEOUT_SECONDS = 30.0
# How long stop() waits by default for `main` to tear down before the process exits
# anyway, bounded so a wedged teardown cannot keep an orphan alive. The Neovim engine
# stops by a deadline instead (below).
STOP_TIMEOUT_SECONDS = 40.0
# The engine's whole exit when Neovim quits (lua/louise/engine.lua's EXIT_BUDGET_MS is the
# same budget; SIGTERM and a closed channel get it too): transcripts and the limits cache
# written first, then the agents closed and stopped within what is left. Neovim SIGKILLs
# its jobs 2 s after its SIGTERM, so a request's budget is capped well under that.
EXIT_BUDGET_SECONDS = 0.3
MAX_EXIT_BUDGET_SECONDS = 1.5
# After the deadline, how long stop() still waits for the engine thread to return.
STOP_SLACK_SECONDS = 0.05


class EngineHost:
    """Runs `main` on its own loop. `main` calls `ready()` once commands can be taken, then
    awaits `stopped()` and tears its resources down before returning."""

    def __init__(self, name: str = "louise-engine") -> None:
        self.name = name
        self.portal: BlockingPortal | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, main: Callable[[], Awaitable[None]]) -> bool:
        """From the pynvim thread: start the loop and wait until `main` is ready (or
        failed). True when it is ready."""
        self._thread = threading.Thread(target=self._run, args=(main,), name=self.name,
                                        daemon=True)
        self._thread.start()
        self._ready.wait(READY_TIMEOUT_SECONDS)
        return self.portal is not None

    def _run(self, main: Callable[[], Awaitable[None]]) -> None:
        try:
            anyio.run(self._serve, main)
        except Exception:
            log.exception("the engine loop ended with an error")
        finally:
            self.portal = None
            self._ready.set()  # never leave start() waiting for a loop that is gone

    async def _serve(self, main: Callable[[], Awaitable[None]]) -> None:
        async with BlockingPortal() as portal:
            self.portal = portal
            # `stop()` cancels the commands running in the portal, not `main`: its teardown
            # still talks to the agents (their readers run in tasks `main` owns), within
            # the deadline it was given.
            with anyio.CancelScope(shield=True):
                await main()

    def ready(self) -> None:
        self._ready.set()

    async def stopped(self) -> None:
        """Returns when `stop()` was called."""
        assert self.portal is not None
        await self.portal.sleep_until_stopped()

    @property
    def running(self) -> bool:
        return self.portal is not None

    def submit(self, func: Callable[..., Awaitable[Any]], *args: Any) -> bool:
        """From the pynvim thread: run `func(*args)` on the loop, never blocking. False
        when the loop is gone."""
        portal = self.portal
        if portal is None:
            return False
        try:
            portal.start_task_soon(func, *args)
        except RuntimeError:
            return False
        return True

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """From the pynvim thread: cancel what runs, let `main` tear down, join."""
        portal = self.portal
        if portal is None:
            return
        try:
            portal.call(portal.stop, True)
        except Exception:
            log.debug("engine already stopped", exc_info=True)
        if self._thread is not None:
            self._thread.join(timeout)
