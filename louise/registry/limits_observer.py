"""Account limits per Agent (contract: docs/account-limits-v1.md): refresh through the
first capable live session, failover when that source goes, pushed `updated`
notifications, a watch that marks figures stale at their reset time (it never reads), and
the cross-process cache, written off the event loop by one writer under one lock."""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from louise import limits as lim
from louise.acp.errors import AcpError, RpcError
from louise.limits_cache import LimitsCache
from louise.registry.events import Emitter, LimitsChanged
from louise.registry.records import AgentRuntime, LiveSession, SessionTable
from louise.session import StatusChanged

log = logging.getLogger("louise.registry")

MAX_FAILOVERS = 3


class LimitsObserver:
    """Limits states of every configured Agent; see the module docstring."""

    def __init__(self, table: SessionTable, emitter: Emitter, cache: LimitsCache | None,
                 clock: Callable[[], float]) -> None:
        self._table = table
        self._emitter = emitter
        self.cache = cache
        self._clock = clock
        self._states: dict[str, lim.LimitsState] = {}
        self._task_group: TaskGroup | None = None
        self._closed = False
        self._wake_reset_watch = anyio.Event()  # replaced only by the reset watch
        self._cache_wake = anyio.Event()  # replaced only by the cache writer
        self._cache_lock = anyio.Lock()
        self._cache_pending: dict[str, lim.LimitsState] = {}
        self._holder_changes: deque[tuple[str, bool]] = deque()

    async def start(self, task_group: TaskGroup) -> None:
        """Read the cache's last states, then run the reset watch and the cache writer."""
        self._task_group = task_group
        task_group.start_soon(self._reset_watch)
        task_group.start_soon(self._cache_writer)
        if self.cache is None:
            return
        view = await anyio.to_thread.run_sync(self.cache.load)
        for agent, state in view.states.items():
            if agent in self._table.runtimes and state is not None:
                self._states[agent] = state
        if view.file_status != "missing":  # a first run has no cache yet: not news
            for warning in view.warnings:
                log.warning("%s", warning)

    async def aclose(self) -> None:
        """Write what waits for the cache, then drop this process's liveness records;
        returns when written."""
        self._closed = True
        if self.cache is None:
            return
        cache = self.cache
        with anyio.CancelScope(shield=True):
            await self.flush()
            async with self._cache_lock:
                try:
                    await anyio.to_thread.run_sync(cache.release_process)
                except OSError as exc:
                    log.warning("could not update the limits cache: %s", exc)

    # ------------------------------------------------------------------ sources

    def on_status(self, event: StatusChanged) -> None:
        """A session became ready (after setup or a turn): refresh that Agent's limits."""
        live = self._table.sessions.get(event.session_id)
        if live is None:
            return
        if event.new == "ready" and self._task_group is not None and not self._closed:
            self._task_group.start_soon(self._refresh_quietly, live.agent)
        if event.new in ("error", "closed", "ready"):
            self.source_changed(self._table.runtime(live.agent))

    async def on_ext(self, runtime: AgentRuntime, method: str, params: Any) -> None:
        """A custom notification: the Agent's pushed `updated` limits, if negotiated."""
        capability = runtime.capability
        if capability is None or method != capability.updated_method:
            log.debug("%s: ignored notification %s", runtime.name, method)
            return
        if not runtime.live_sessions():
            return  # notifications from a session-less connection carry no live source
        self._accept(runtime.name, params)

    async def _refresh_quietly(self, agent: str) -> None:
        try:
            await self.refresh(agent)
        except Exception:
            log.exception("%s: limits refresh failed", agent)

    def _source(self, runtime: AgentRuntime) -> LiveSession | None:
        """First capable live session of the Agent, in creation order."""
        if runtime.capability is None or not runtime.connected:
            return None
        for live in runtime.sessions:
            if live.model.status not in ("error", "closed", "starting"):
                return live
        return None

    def source_changed(self, runtime: AgentRuntime) -> None:
        """Re-inspect after a source may have gone; keep cache liveness records right."""
        has_source = self._source(runtime) is not None
        if has_source != runtime.holder and self.cache is not None:
            runtime.holder = has_source
            self._holder_changes.append((runtime.name, has_source))
            self._cache_wake.set()
        current = self._states.get(runtime.name)
        if current is not None:
            state = self.inspect(runtime.name)
            if state != current:
                self._set(runtime.name, state)

    # ------------------------------------------------------------------ states

    def inspect(self, agent: str, now: float | None = None) -> lim.LimitsState:
        """The Agent's limits state by the spec's inspection rules; starts nothing."""
        runtime = self._table.runtime(agent)
        observed = runtime.observed and any(
            s.model.status not in ("error", "closed") for s in runtime.sessions)
        return lim.inspect(self._states.get(agent), agent,
                           self._clock() if now is None else now,
                           self._source(runtime) is not None, observed)

    def _set(self, agent: str, state: lim.LimitsState) -> None:
        previous = self._states.get(agent)
        self._states[agent] = state
        if state.status in ("fresh", "empty", "unlimited", "stale", "unavailable"):
            self._cache_pending[agent] = state
            self._cache_wake.set()
        self._wake_reset_watch.set()
        if previous != state:
            self._emitter.emit(LimitsChanged(agent, state))

    def _accept(self, agent: str, payload: Any) -> lim.LimitsState:
        previous = self._states.get(agent)
        try:
            snapshot = lim.parse_snapshot(payload)
        except lim.LimitsError as exc:
            state = lim.failed(previous, str(exc), agent=agent)
        else:
            state = lim.accepted(agent, snapshot, self._clock())
        self._set(agent, state)
        return state

    async def refresh(self, agent: str) -> lim.LimitsState:
        """Read the Agent's limits through its first capable live session, if any.

        Without one, returns the inspected state and sends nothing. Concurrent refreshes
        of one Agent are de-duplicated. An answer from a source that closed meanwhile is
        ignored; the read moves to the next capable session (failover), if there is one."""
        runtime = self._table.runtime(agent)
        if runtime.refreshing is not None:
            # De-duplicated: share the read already in flight.
            await runtime.refreshing.wait()
            return self.inspect(agent)
        done = runtime.refreshing = anyio.Event()
        before = self._states.get(agent)
        try:
            for _attempt in range(MAX_FAILOVERS):
                result = await self._read(runtime)
                if result is not None:
                    return result
            return self.inspect(agent)
        finally:
            runtime.refreshing = None
            done.set()
            current = self._states.get(agent)
            if current is not None and current.status == "loading":
                # The read never concluded (cancelled, or every source went away): the
                # state before it, inspected now, decides (stale/unavailable when no source).
                base = before if before is not None else current
                self._set(agent, lim.inspect(
                    base, agent, self._clock(), self._source(runtime) is not None, True))

    async def _read(self, runtime: AgentRuntime) -> lim.LimitsState | None:
        """One read through the current source; None when that source went away."""
        agent = runtime.name
        source = self._source(runtime)
        capability = runtime.capability
        connection = runtime.connection
        if source is None or capability is None or connection is None:
            state = self.inspect(agent)
            if self._states.get(agent) is not None and state != self._states.get(agent):
                self._set(agent, state)
            return state
        generation = runtime.generation
        self._set(agent, lim.loading(self._states.get(agent), agent=agent))
        try:
            payload = await connection.ext_request(capability.read_method, {})
        except RpcError as exc:
            if self._source_gone(runtime, source, generation):
                return None
            state = lim.failed(self._states.get(agent),
                               f"ACP account limits read failed: {exc.message}", agent=agent)
            self._set(agent, state)
            return state
        except AcpError:
            return None
        if self._source_gone(runtime, source, generation):
            return None
        return self._accept(agent, payload)

    @staticmethod
    def _source_gone(runtime: AgentRuntime, source: LiveSession, generation: int) -> bool:
        return (runtime.generation != generation
                or source.model.status in ("error", "closed")
                or source not in runtime.sessions)

    # ------------------------------------------------------------------ background

    async def _reset_watch(self) -> None:
        """At the earliest reset time, re-inspect (marks stale); never reads."""
        while True:
            now = self._clock()
            earliest = math.inf
            for state in self._states.values():
                if state.snapshot is None or state.status not in ("fresh", "loading"):
                    continue
                for bucket in state.snapshot.buckets:
                    for window in bucket.windows:
                        if window.resets_at > now:
                            earliest = min(earliest, window.resets_at)
            self._wake_reset_watch = anyio.Event()
            with anyio.move_on_after(max(earliest - now, 0) + 0.01):
                await self._wake_reset_watch.wait()
                continue
            for agent in list(self._states):
                state = self.inspect(agent)
                if state != self._states.get(agent):
                    self._set(agent, state)

    async def _cache_writer(self) -> None:
        if self.cache is None:
            return
        while True:
            await self._cache_wake.wait()
            self._cache_wake = anyio.Event()
            await self.flush()

    async def flush(self) -> None:
        """Write accepted states and liveness changes to the cache; returns when written.
        One lock: an older state never lands after a newer one."""
        if self.cache is None:
            return
        cache = self.cache
        async with self._cache_lock:
            states = dict(self._cache_pending)
            self._cache_pending.clear()
            holders = list(self._holder_changes)
            self._holder_changes.clear()
            if not states and not holders:
                return

            def write() -> None:
                for agent, live in holders:
                    if live:
                        cache.add_holder(agent)
                    else:
                        cache.remove_holder(agent)
                for agent, state in states.items():
                    cache.record_state(agent, state)

            with anyio.CancelScope(shield=True):
                try:
                    await anyio.to_thread.run_sync(write)
                except Exception as exc:
                    log.warning("could not update the limits cache %s: %s", cache.path, exc)
