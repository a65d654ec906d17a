"""Account limits per Agent (contract: docs/account-limits-v1.md): refresh through the
first capable live session, failover when that source goes, pushed `updated`
notifications, a watch that marks figures stale at their reset time (it never reads), and
the cross-process cache, written off the event loop by one writer under one lock.

Agents without the v1 extension are observed passively (`louise.limits.sources`): the
rate-limit data they send on their own (`usage_update` `_meta`, `_account/rate_limits_update`,
a prompt refused for a rate limit) becomes the same states, shown, alerted and cached the
same way, with their provenance. Such figures are account-wide (one state per Agent,
whatever session they arrived on), fresh when received, and stale after a reset or when no
live session of the Agent is left. The v1 extension, when negotiated, is the only source.

An Agent that advertises `quota` (the ACP Quotas RFD) is read through it instead
(`quota_reader.py`): `quota_update` pushes, `quota/read` refreshes (also without a session,
when its process starts), `quotaExceeded` refusals; nothing else of it is read. A
`quotaExceeded` from any agent counts.

Every `fresh` state is also a pace sample (`louise.limits.pace`), kept per Agent, on the
Agent's active clock (the time its turns ran).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from louise import limits as lim
from louise.acp.errors import AcpError, RequestTimeout, RpcError
from louise.acp.schema import ParsedUpdate
from louise.limits import pace
from louise.limits import sources as passive
from louise.limits.governor import Block, block_reset
from louise.registry.events import Emitter, LimitsChanged
from louise.registry.quota_reader import QuotaReader
from louise.registry.records import AgentRuntime, LiveSession, SessionTable
from louise.session import TURN_STATUSES, StatusChanged
from louise.storage.limits_cache import LimitsCache
from louise.storage.limits_cache_writer import CacheWriter

log = logging.getLogger("louise.registry")

MAX_FAILOVERS = 3
MAX_IGNORED_LOGS = 20  # per Agent and process: an agent repeating garbage cannot fill a log
_NOT_LIVE = ("error", "closed", "starting")


class LimitsObserver:
    """Limits states of every configured Agent; see the module docstring."""

    def __init__(self, table: SessionTable, emitter: Emitter, cache: LimitsCache | None,
                 clock: Callable[[], float]) -> None:
        self._table = table
        self._emitter = emitter
        self.cache = cache
        self._clock = clock
        self._states: dict[str, lim.LimitsState] = {}
        # The state each Agent's last `LimitsChanged` carried: a stored one, or one derived
        # by inspection alone (`unsupported`, `loading`, back to `not_observed`), which is
        # never stored but must reach the labels when a session makes it so.
        self._announced: dict[str, lim.LimitsState] = {}
        self._task_group: TaskGroup | None = None
        self._closed = False
        self._wake_reset_watch = anyio.Event()  # replaced only by the reset watch
        self._writer = CacheWriter(cache) if cache is not None else None
        self._plans: dict[str, str] = {}  # the account's plan label (`_auth/status_update`)
        self._pace: dict[str, pace.PaceHistory] = {}
        self._active: dict[str, pace.ActiveClock] = {}  # per Agent: the time its turns ran
        self._ignored: dict[str, int] = {}
        self.quota = QuotaReader(self)

    async def start(self, task_group: TaskGroup) -> None:
        """Read the cache's last states, then run the reset watch and the cache writer."""
        self._task_group = task_group
        task_group.start_soon(self._reset_watch)
        if self._writer is not None:
            task_group.start_soon(self._writer.run)
        if self.cache is None:
            return
        view = await anyio.to_thread.run_sync(self.cache.load)
        now = self._clock()
        for agent, state in view.states.items():
            if agent in self._table.runtimes and state is not None:
                # Figures from another process's sessions: no session of this one vouches
                # for them, even once it has its own (until it observes anew).
                self._states[agent] = self._announced[agent] = lim.inspect(
                    state, agent, now, False, True)
        if view.file_status != "missing":  # a first run has no cache yet: not news
            for warning in view.warnings:
                log.warning("%s", warning)

    async def aclose(self, deadline: float | None = None) -> None:
        """Nothing is written after: see `CacheWriter.aclose`."""
        self._closed = True
        if self._writer is not None:
            await self._writer.aclose(deadline)

    def abandon(self) -> None:
        """Whatever still waits for the cache's lock gives up now (`CacheWriter.abandon`)."""
        if self._writer is not None:
            self._writer.abandon()

    # ------------------------------------------------------------------ sources

    def on_status(self, event: StatusChanged) -> None:
        """A session became ready (after setup or a turn): refresh that Agent's limits."""
        live = self._table.sessions.get(event.session_id)
        if live is None:
            return
        was, now_in = event.old in TURN_STATUSES, event.new in TURN_STATUSES
        if was != now_in:
            clock = self._active.setdefault(live.agent, pace.ActiveClock())
            (clock.start if now_in else clock.stop)(self._clock())
        if event.new == "ready" and self._task_group is not None and not self._closed:
            self._task_group.start_soon(self._refresh_quietly, live.agent)
        if event.new in ("error", "closed", "ready"):
            self.source_changed(self._table.runtime(live.agent))

    async def on_ext(self, runtime: AgentRuntime, method: str, params: Any) -> None:
        """A custom notification: the Agent's pushed `updated` limits if v1 is negotiated,
        else a passive source's (a plan label, a codex rate-limit push)."""
        capability = runtime.capability
        if runtime.quota:
            log.debug("%s: notification %s not read (the agent speaks the quota RFD)",
                      runtime.name, method)
            return
        if capability is None:
            self._on_passive_notification(runtime, method, params)
            return
        if method != capability.updated_method:
            log.debug("%s: ignored notification %s", runtime.name, method)
            return
        if not runtime.live_sessions():
            return  # notifications from a session-less connection carry no live source
        self._accept(runtime.name, params)

    # ------------------------------------------------------------------ passive sources

    def _on_passive_notification(self, runtime: AgentRuntime, method: str, params: Any) -> None:
        plan = passive.plan_from_notification(method, params)
        if plan is not None:
            self._plans[runtime.name] = plan  # applied with the next translated snapshot
            return
        now = self._clock()
        self._observe(runtime, passive.from_notification(
            method, params, self._states.get(runtime.name), now), now)

    def on_update(self, runtime: AgentRuntime, acp_id: str, update: ParsedUpdate) -> None:
        """Every `session/update` of the Agent's connection: a `quota_update` (the RFD),
        or rate-limit `_meta` on a `usage_update` (claude, codex, kimi), is an observation
        of the whole account."""
        if update.kind not in ("usage_update", "quota_update"):
            return
        live = self._table.find(runtime.name, acp_id)
        if live is not None and live.attaching is not None and live.attach_updates is None:
            return  # a `session/load` replay: history, not a reading of the account now
        if update.kind == "quota_update":
            self.quota.on_update(runtime, acp_id, update.raw)
            return
        if runtime.quota or not passive.passive_sources_apply(runtime.capability):
            return
        now = self._clock()
        self._observe(runtime, passive.from_session_update(
            update.raw, self._states.get(runtime.name), now,
            plan=self._plans.get(runtime.name)), now)

    def on_prompt_error(self, runtime: AgentRuntime, error: RpcError) -> Block | None:
        """A turn the agent refused: a refusal for quota (`quotaExceeded`, or an agent's
        own rate-limit error) marks the limit reached; returns it, with its reset when
        known, for the governor."""
        refusal = self.quota.refusal(runtime, error)
        if refusal is not None:
            return Block(refusal.message, refusal.resets_at)
        rejected = passive.from_prompt_error(error.code, error.data)
        if rejected is None:
            return None
        if not runtime.quota and passive.passive_sources_apply(runtime.capability):
            self._observe(runtime, rejected, self._clock())
        now = self._clock()
        return Block(error.message or "rate limit reached",
                     block_reset(self._states.get(runtime.name), now))

    def on_agent_running(self, agent: str) -> None:
        """An Agent's process started: one that speaks the quota RFD is read at once,
        without a session (the statusline before the first chat)."""
        runtime = self._table.runtimes.get(agent)
        if runtime is not None and runtime.quota:
            self.request_refresh(agent)

    # ------------------------------------------------------------------ for quota_reader

    def clock(self) -> float:
        return self._clock()

    def state(self, agent: str) -> lim.LimitsState | None:
        """The stored state (not inspected)."""
        return self._states.get(agent)

    def set_state(self, agent: str, state: lim.LimitsState) -> None:
        self._set(agent, state)

    def restore(self, agent: str, state: lim.LimitsState | None) -> None:
        """Put back the state a read began with (None: none was stored)."""
        if state is not None:
            self._set(agent, state)
            return
        self._states.pop(agent, None)
        self.source_changed(self._table.runtime(agent))

    def live_for(self, runtime: AgentRuntime, state: lim.LimitsState | None) -> bool:
        return self._live_for(runtime, state)

    def holder_changed(self, runtime: AgentRuntime) -> None:
        self._update_holder(runtime)

    def log_ignored(self, agent: str, source: str, reason: str) -> None:
        self._log_ignored(agent, source, reason)

    def in_background(self, write: Callable[[], None]) -> None:
        """Run a blocking write (to the limits cache) in a worker thread, not waited for."""
        if self._task_group is not None and not self._closed:
            self._task_group.start_soon(anyio.to_thread.run_sync, write)

    def active_time(self, agent: str) -> float | None:
        """The Agent's active clock now (seconds its turns ran), None before its first."""
        clock = self._active.get(agent)
        return None if clock is None else clock.read(self._clock())

    def _observe(self, runtime: AgentRuntime, observation: passive.Observation | None,
                 now: float) -> None:
        if observation is None:
            return
        agent = runtime.name
        if isinstance(observation, passive.Ignored):
            self._log_ignored(agent, observation.source, observation.reason)
            return
        try:
            state = passive.apply(self._states.get(agent), agent, observation, now)
        except ValueError as exc:  # a translator's bug must not stop the connection
            self._log_ignored(agent, observation.source, str(exc))
            return
        self._set(agent, lim.inspect(state, agent, now, self._live_for(runtime, state), True))
        self._update_holder(runtime)

    def _log_ignored(self, agent: str, source: str, reason: str) -> None:
        count = self._ignored[agent] = self._ignored.get(agent, 0) + 1
        if count <= MAX_IGNORED_LOGS:
            log.warning("%s: ignored %s: %s", agent, source, lim.sanitize(reason[:300]))
        if count == MAX_IGNORED_LOGS:
            log.warning("%s: more unusable rate-limit data will not be logged", agent)

    def request_refresh(self, agent: str) -> None:
        """Re-read the Agent's limits in the background (after a model or mode change)."""
        if self._task_group is not None and not self._closed:
            self._task_group.start_soon(self._refresh_quietly, agent)

    def pace_history(self, agent: str) -> pace.PaceHistory | None:
        """The Agent's pace samples (for `render_detail(pace=…)` and `pace_alerts`)."""
        return self._pace.get(agent)

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
            if live.model.status not in _NOT_LIVE:
                return live
        return None

    def _live_for(self, runtime: AgentRuntime, state: lim.LimitsState | None) -> bool:
        """Whether a live session vouches for `state`: a v1 source, or for translated
        figures (which need no capability) any live session of the Agent."""
        if self._source(runtime) is not None:
            return True
        if runtime.quota:
            # The RFD needs no session to read (`quota/read` without one): the running
            # process vouches for its figures.
            return runtime.connected
        if runtime.capability is not None or state is None or state.source is None:
            return False
        return runtime.connected and any(
            live.model.status not in _NOT_LIVE for live in runtime.sessions)

    def _update_holder(self, runtime: AgentRuntime) -> None:
        """Keep this process's liveness record in the cache right (`louise inspect`)."""
        live = self._live_for(runtime, self._states.get(runtime.name))
        if live != runtime.holder and self._writer is not None:
            runtime.holder = live
            self._writer.holder(runtime.name, live)

    def source_changed(self, runtime: AgentRuntime) -> None:
        """Re-inspect after a session became ready or a source may have gone; keep cache
        liveness records right. Without a stored state, what inspection derives (an
        initialized session without the extension: `unsupported`) is announced, not stored."""
        self._update_holder(runtime)
        agent = runtime.name
        current = self._states.get(agent)
        state = self.inspect(agent)
        if current is not None:
            if state != current:
                self._set(agent, state)
        elif state != self._announced.get(agent, lim.LimitsState(agent, "not_observed")):
            self._announced[agent] = state
            self._emitter.emit(LimitsChanged(agent, state))

    # ------------------------------------------------------------------ states

    def inspect(self, agent: str, now: float | None = None) -> lim.LimitsState:
        """The Agent's limits state by the spec's inspection rules; starts nothing."""
        runtime = self._table.runtime(agent)
        observed = runtime.observed and any(
            s.model.status not in ("error", "closed") for s in runtime.sessions)
        state = self._states.get(agent)
        return lim.inspect(state, agent, self._clock() if now is None else now,
                           self._live_for(runtime, state), observed)

    def _set(self, agent: str, state: lim.LimitsState) -> None:
        previous = self._states.get(agent)
        self._states[agent] = state
        now = self._clock()
        self._pace[agent] = pace.record(self._pace.get(agent), state, now,
                                        active=self.active_time(agent))
        if state.status in ("fresh", "empty", "unlimited", "stale", "unavailable"):
            if self._writer is not None:
                self._writer.put(agent, state)
        self._wake_reset_watch.set()
        if previous != state and self._announced.get(agent) != state:
            self._announced[agent] = state
            self._emitter.emit(LimitsChanged(agent, state))

    def _accept(self, agent: str, payload: Any) -> lim.LimitsState:
        previous = self._states.get(agent)
        try:
            snapshot = lim.parse_snapshot(payload)
        except lim.LimitsError as exc:
            state = lim.failed(previous, lim.malformed_note(str(exc)), agent=agent)
        else:
            state = lim.accepted(agent, snapshot, self._clock())
        self._set(agent, state)
        return state

    async def refresh(self, agent: str) -> lim.LimitsState:
        """Read the Agent's limits through its first capable live session, if any.

        Without one, returns the inspected state and sends nothing. Concurrent refreshes
        of one Agent are de-duplicated. An answer from a source that closed meanwhile is
        ignored; the read moves to the next capable session (failover), if there is one.
        A read that fails (an error, no answer in time) leaves the spec's failure state
        (`stale` keeping the last snapshot, else `unavailable`) with the reason; what this
        returns is always the state now held, never a `loading` left behind."""
        runtime = self._table.runtime(agent)
        if runtime.refreshing is not None:
            # De-duplicated: share the read already in flight.
            await runtime.refreshing.wait()
            return self.inspect(agent)
        done = runtime.refreshing = anyio.Event()
        before = self._states.get(agent)
        read = self.quota.read if runtime.quota else self._read
        try:
            for _attempt in range(MAX_FAILOVERS):
                result = await read(runtime)
                if result is not None:
                    return result
            if self._source(runtime) is not None and not runtime.quota:
                # Every source it tried went away while another is still there.
                self._set(agent, lim.failed(before, "ACP account limits read lost its "
                                            f"session {MAX_FAILOVERS} times", agent=agent))
        finally:
            runtime.refreshing = None
            done.set()
            current = self._states.get(agent)
            if current is not None and current.status == "loading":
                # The read never concluded (cancelled, or every source went away): the
                # state before it, inspected now, decides (stale/unavailable when no source).
                base = before if before is not None else current
                self._set(agent, lim.inspect(
                    base, agent, self._clock(), self._live_for(runtime, base), True))
        return self.inspect(agent)

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
        except AcpError as exc:
            if self._source_gone(runtime, source, generation):
                return None
            if isinstance(exc, RpcError):
                reason = f"ACP account limits read failed: {exc.reason}"
            elif isinstance(exc, RequestTimeout):
                reason = (f"ACP account limits read timed out: no answer within "
                          f"{exc.seconds:g} s")
            else:
                reason = f"ACP account limits read failed: {exc}"
            state = lim.failed(self._states.get(agent), reason, agent=agent)
            self._set(agent, state)
            return state
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
