"""The cross-process limits cache, written off the event loop by one writer under one
lock (the registry's `LimitsObserver`, or the session host's `HostLimits`, hands it
accepted states and this process's liveness changes), and its last write at exit,
bounded by the exit budget."""

from __future__ import annotations

import logging
import math
from collections import deque

import anyio

from louise import limits as lim
from louise.storage.durable import LockAbandoned
from louise.storage.limits_cache import LimitsCache

log = logging.getLogger("louise.storage")

# At exit, without a caller's deadline: how long the cache's last write may wait for the
# lock (another process may hold it for up to its 30 s timeout), and after how long that
# wait says what it waits for.
EXIT_WRITE_SECONDS = 3.0
WAIT_NOTICE_SECONDS = 2.0


class CacheWriter:
    """What waits for the cache, and the one task that writes it."""

    def __init__(self, cache: LimitsCache) -> None:
        self.cache = cache
        self._released = False  # this process's liveness records dropped: no more writes
        self._wake = anyio.Event()  # replaced only by `run`
        self._lock = anyio.Lock()
        self._pending: dict[str, lim.LimitsState] = {}
        self._holder_changes: deque[tuple[str, bool]] = deque()

    def put(self, agent: str, state: lim.LimitsState) -> None:
        self._pending[agent] = state
        self._wake.set()

    def holder(self, agent: str, live: bool) -> None:
        self._holder_changes.append((agent, live))
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            await self.flush()

    async def flush(self, deadline: float | None = None) -> None:
        """Write accepted states and liveness changes to the cache; returns when written
        (with a `deadline`: see `aclose`). One lock: an older state never lands after a
        newer one."""
        cache = self.cache
        async with self._lock:
            if self._released:
                return  # shut down: this process holds nothing any more
            states = dict(self._pending)
            self._pending.clear()
            holders = list(self._holder_changes)
            self._holder_changes.clear()
            if not states and not holders:
                return

            def write() -> None:  # one read-modify-write of the file for all of it
                cache.apply(holders, states)

            # A write, once started, completes (an older state never lands after a newer
            # one); at shutdown the caller's deadline stops the wait and the write goes on
            # in its thread (each is atomic) while the process may leave.
            with anyio.CancelScope(shield=deadline is None):
                try:
                    await anyio.to_thread.run_sync(write, abandon_on_cancel=deadline is not None)
                except LockAbandoned:  # at exit, which says so (`aclose`)
                    log.debug("limits cache write abandoned at exit")
                except Exception as exc:
                    log.warning("could not update the limits cache %s: %s", cache.path, exc)

    async def aclose(self, deadline: float | None = None) -> None:
        """Write what waits for the cache, then drop this process's liveness records;
        returns when written, or by the `deadline` (anyio's clock; default:
        `EXIT_WRITE_SECONDS` from now) at the latest, what was not written then abandoned
        (see `abandon`). Nothing is written after."""
        cache = self.cache
        if deadline is None:
            deadline = anyio.current_time() + EXIT_WRITE_SECONDS
        async with anyio.create_task_group() as notice:
            notice.start_soon(self._say_what_exit_waits_for, cache, deadline)
            with anyio.CancelScope(shield=True, deadline=deadline) as scope:
                await self.flush(deadline)
                async with self._lock:
                    self._released = True
                    try:
                        await anyio.to_thread.run_sync(cache.release_process,
                                                       abandon_on_cancel=True)
                    except OSError as exc:
                        log.warning("could not update the limits cache: %s", exc)
            notice.cancel_scope.cancel()
        if scope.cancelled_caught:
            log.warning("gave up updating the limits cache %s at exit (its lock stayed busy): "
                        "its last update is lost, the file itself is intact", cache.path)

    @staticmethod
    async def _say_what_exit_waits_for(cache: LimitsCache, deadline: float) -> None:
        await anyio.sleep(WAIT_NOTICE_SECONDS)
        left = max(0.0, deadline - anyio.current_time())
        log.warning("waiting for the limits cache %s (another louise process may hold its "
                    "lock); giving up in %.0f s", cache.path, math.ceil(left))

    def abandon(self) -> None:
        """Whatever still waits for the cache's lock gives up now, its update lost (the
        registry's exit: no write outlives the exit budget by the lock's timeout)."""
        self.cache.abandon_waits()
