"""The ACP Quotas RFD side of the limits observer: `quota_update` pushes, `quota/read`
(with a session, or without one: an agent's start, `louise inspect --refresh`) and the
`quotaExceeded` error, for an Agent that advertises `quota`. Then the RFD is that Agent's
only limits source: its vendor `_meta` and the v1 extension are not read.

Snapshots are ordered by the agent's own `updatedAt`, per agent process and per scope
(`AgentRuntime.quota_order`): an older one is ignored, never louise's clock compared. A
read without a session stands alone: it fills the state while no session's snapshot has
come, and never replaces one. A malformed snapshot is refused whole with one line naming
the field (the state keeps its last good figures, `stale`, with that note).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from louise import limits as lim
from louise.acp.errors import INVALID_PARAMS, AcpError, RequestTimeout, RpcError

if TYPE_CHECKING:  # the RFD's parsing is imported when an agent first sends a quota
    from louise.limits.quota import QuotaExceeded
    from louise.registry.records import AgentRuntime, LiveSession

log = logging.getLogger("louise.registry")

PUSHED = "quota_update"
READ = "quota/read"
REFUSED = "quotaExceeded error"
_NOT_LIVE = ("error", "closed", "starting")


class LimitsStates(Protocol):
    """Where the reader keeps what it reads: the Agents' limits states (the registry's
    `LimitsObserver`)."""

    def clock(self) -> float: ...

    def state(self, agent: str) -> lim.LimitsState | None:
        """The stored state (not inspected)."""

    def set_state(self, agent: str, state: lim.LimitsState) -> None: ...

    def restore(self, agent: str, state: lim.LimitsState | None) -> None:
        """Put back the state a read began with (None: none was stored)."""

    def inspect(self, agent: str, now: float | None = None) -> lim.LimitsState: ...

    def live_for(self, runtime: AgentRuntime, state: lim.LimitsState | None) -> bool: ...

    def holder_changed(self, runtime: AgentRuntime) -> None: ...

    def log_ignored(self, agent: str, source: str, reason: str) -> None: ...


class QuotaReader:
    """Reads and records RFD snapshots into one registry's limits states."""

    def __init__(self, observer: LimitsStates) -> None:
        self._observer = observer
        self._unasked: set[str] = set()  # Agents that pushed without advertising (logged once)

    # ------------------------------------------------------------------ push

    def on_update(self, runtime: AgentRuntime, acp_id: str, raw: dict[str, Any]) -> None:
        """A `quota_update` on one of the Agent's sessions."""
        agent = runtime.name
        if not runtime.quota:
            if agent not in self._unasked:
                self._unasked.add(agent)
                log.warning("%s sent quota_update without advertising quota; ignored", agent)
            return
        self._record(runtime, acp_id, raw, PUSHED)

    def _record(self, runtime: AgentRuntime, scope: str | None, payload: Any,
                source: str) -> lim.LimitsState:
        from louise.limits.quota import QuotaError, parse_quota_snapshot

        observer = self._observer
        agent = runtime.name
        previous = observer.state(agent)
        try:
            quota = parse_quota_snapshot(payload)
        except QuotaError as exc:
            observer.log_ignored(agent, source, str(exc))
            state = lim.failed(previous, str(exc), agent=agent)
            observer.set_state(agent, state)
            return state
        for line in quota.skipped:
            observer.log_ignored(agent, source, f"skipped {line}")
        order = runtime.quota_order
        if scope is None and order.has_session_scope():
            # The RFD: a read without a session never replaces a session's snapshot.
            return observer.inspect(agent)
        if not order.accept(scope, quota):
            log.debug("%s: an older quota snapshot (%s) ignored", agent,
                      quota.updated_at.text)
            return observer.inspect(agent)
        now = observer.clock()
        state = lim.accepted_quota(agent, quota, now, source)
        state = lim.inspect(state, agent, now, observer.live_for(runtime, state), True)
        observer.set_state(agent, state)
        observer.holder_changed(runtime)
        return state

    # ------------------------------------------------------------------ read

    @staticmethod
    def scope(runtime: AgentRuntime) -> LiveSession | None:
        """The session a read goes through: the Agent's first live one, else none."""
        return next((live for live in runtime.sessions if live.model.status not in _NOT_LIVE),
                    None)

    async def read(self, runtime: AgentRuntime) -> lim.LimitsState | None:
        """One `quota/read`, through the first live session or without one; None when the
        agent process went away meanwhile (the caller may try again)."""
        observer = self._observer
        agent = runtime.name
        connection = runtime.connection
        if connection is None or not runtime.connected or not runtime.quota:
            return observer.inspect(agent)
        live = self.scope(runtime)
        scope = live.acp_id if live is not None else None
        generation = runtime.generation
        before = observer.state(agent)
        observer.set_state(agent, lim.loading(before, agent=agent))
        try:
            payload = await connection.read_quota(scope)
        except AcpError as exc:
            if runtime.generation != generation:
                return None
            if scope is None and isinstance(exc, RpcError) and exc.code == INVALID_PARAMS:
                # The agent answers only for a session: nothing failed, nothing is known.
                log.info("%s answers quota/read only for a session (%s)", agent, exc.message)
                observer.restore(agent, before)
                return observer.inspect(agent)
            if isinstance(exc, RequestTimeout):
                reason = f"quota/read timed out: no answer within {exc.seconds:g} s"
            elif isinstance(exc, RpcError):
                reason = f"quota/read failed: {exc.reason}"
            else:
                reason = f"quota/read failed: {exc}"
            state = lim.failed(observer.state(agent), reason, agent=agent)
            observer.set_state(agent, state)
            return state
        if runtime.generation != generation:
            return None
        current = observer.state(agent)
        if current is not None and current.status == "loading":
            observer.restore(agent, before)  # the read's outcome decides, below
        return self._record(runtime, scope, payload, READ)

    # ------------------------------------------------------------------ refusal

    def refusal(self, runtime: AgentRuntime, error: RpcError) -> QuotaExceeded | None:
        """A `quotaExceeded` refusal (any agent may send one, with the capability or
        without): recorded as reached, resetting when the agent said."""
        from louise.limits.quota import parse_quota_exceeded

        observer = self._observer
        now = observer.clock()
        refusal = parse_quota_exceeded(error.code, error.message, error.data, now)
        if refusal is None:
            return None
        agent = runtime.name
        state = lim.refused(observer.state(agent), agent, refusal, REFUSED, now)
        observer.set_state(agent, lim.inspect(state, agent, now,
                                              observer.live_for(runtime, state), True))
        observer.holder_changed(runtime)
        return refusal
