"""The governor: budgets checked before a turn starts, the quota cost of each turn, and
parking a turn refused for quota until the limit resets.

- Budgets (`[limits.budgets]`): a turn of a workspace whose turns used (across louise
  processes: the limits cache keeps each turn's cost) as much of a window as its share
  allows is refused before it is sent, with the reason.
- Cost: the Agent's figures when a turn begins and when it ends give what the turn used
  of each window (`louise.limits.cost`), shown on the turn's end line, kept per session
  and per workspace for the limits view, and written to the limits cache for budgets.
- Parking: a turn refused for quota (`Block`, from the limits observer) is *parked*: the
  turn keeps its place (the queue behind it waits, intact), `SessionParked` says until
  when, and at the reset the same prompt is sent again. Across every louise process of
  the account, the first parked turn due claims the reset in the limits cache and goes
  first; the others go once the agent accepted it, or stay parked until the new reset if
  it refused again: one resend, not a stampede. A reset the agent never gave is tried
  again after a growing delay (1 min, doubling up to 30). `unpark` (`:LouiseUnpark`),
  cancel and close end a park without a resend.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

import anyio

from louise.config.limits import LimitsConfig
from louise.limits.cost import TurnCost, summed, turn_cost
from louise.limits.governor import Block, budget_refusal
from louise.limits.text import format_duration, format_utc
from louise.registry.events import Emitter, SessionParked, SessionUnparked
from louise.registry.limits_observer import LimitsObserver
from louise.registry.records import (
    LiveSession,
    PromptWithdrawn,
    RegistryError,
    SessionTable,
    TurnFailed,
)
from louise.storage.limits_cache import LimitsCache
from louise.storage.limits_shared import claim_resume, record_spent, settle_resume

log = logging.getLogger("louise.registry")

FIRST_RETRY = 60.0
MAX_RETRY = 1800.0
WAIT_POLL = 0.5  # while another process's probe is out: how often its outcome is read
RESET_MARGIN = 1.0  # after the reset time, before sending (clocks differ a little)
MAX_COSTS = 256  # turns remembered per process for the limits view
READ_WAIT = 5.0  # before a turn, how long a limits read in flight is waited for

ParkOutcome = Literal["resend", "cancelled", "unparked"]


class QuotaRefused(TurnFailed):
    """A turn refused because a limit was reached (`block` says until when, if known)."""

    def __init__(self, message: str, block: Block) -> None:
        super().__init__(message)
        self.block = block


@dataclass(eq=False)
class _Turn:
    """A running turn the governor watches."""

    agent: str
    cwd: str
    before: tuple[object, float | None]  # (snapshot, its receipt time) when it began
    shared: set[str] = field(default_factory=set)


@dataclass(eq=False)
class _Park:
    """A parked turn: when it wakes and how it ended."""

    until: float
    known: bool
    wake: anyio.Event = field(default_factory=anyio.Event)
    outcome: ParkOutcome | None = None
    cycle: int | None = None  # the reset this park claimed in the cache (its probe)


class Governor:
    """One registry's budgets, turn costs and parked turns."""

    def __init__(self, table: SessionTable, emitter: Emitter, observer: LimitsObserver,
                 cache: LimitsCache | None, settings: LimitsConfig,
                 clock: Callable[[], float], *, park: bool) -> None:
        self._table = table
        self._emitter = emitter
        self._observer = observer
        self._cache = cache
        self.settings = settings
        self._clock = clock
        self.park_enabled = park and settings.park
        self._turns: dict[str, _Turn] = {}  # session key -> the turn running
        self._costs: list[tuple[str, str, str, TurnCost]] = []  # (agent, session, cwd, cost)
        self._parks: dict[str, _Park] = {}
        self._probes: dict[str, str] = {}  # session key -> agent, while its probe is out
        self._retry: dict[str, float] = {}  # session key -> next delay for an unknown reset
        # agent -> its risk by the figures before the read in flight (see `risk`)
        self._settled_risk: dict[str, str | None] = {}

    # ------------------------------------------------------------------ budgets

    async def check_budget(self, live: LiveSession) -> None:
        """Before a turn: the first `quota/read` of an RFD agent, in flight, is waited for
        a moment, so the turn's cost has figures to start from; RegistryError (with the
        reason) when the workspace's budget is used up."""
        runtime = self._table.runtime(live.agent)
        refreshing = runtime.refreshing
        known = self._observer.state(live.agent)
        if refreshing is not None and runtime.quota and (known is None or known.snapshot is None):
            with anyio.move_on_after(READ_WAIT):
                await refreshing.wait()
        budgets = self.settings.budgets
        if not budgets or self._cache is None:
            return
        import os

        workspace = os.path.normpath(live.cwd)
        if workspace not in budgets:
            return
        view = await anyio.to_thread.run_sync(self._cache.load)
        spent = view.spent.get(live.agent, ())
        state = self._observer.inspect(live.agent)
        reason = budget_refusal(state, workspace, budgets, spent, self._clock())
        if reason is not None:
            raise RegistryError(f"louise did not send this turn: {reason}")

    def risk(self, agent: str) -> str | None:
        """Why the Agent's next turn is likely to hit a limit (`[limits] confirm`), or None."""
        from louise.limits.governor import risk

        if not self.settings.confirm or agent not in self._table.runtimes:
            return None
        observer, now = self._observer, self._clock()
        state = observer.inspect(agent, now)
        if state.status == "loading":
            # Read again (after every turn): until the answer, the figures before the read
            # decide; a send in that moment would otherwise go without asking.
            return self._settled_risk.get(agent)
        found = risk(state, observer.pace_history(agent), now,
                     near_percent=self.settings.near_percent,
                     active=observer.active_time(agent))
        self._settled_risk[agent] = found
        return found

    # ------------------------------------------------------------------ cost

    def turn_began(self, live: LiveSession) -> None:
        state = self._observer.state(live.agent)
        before = (state.snapshot if state is not None else None,
                  state.updated_at if state is not None else None)
        turn = _Turn(live.agent, live.cwd, before)
        for key, other in self._turns.items():
            if other.agent == live.agent:
                other.shared.add(live.session_id)
                turn.shared.add(key)
        self._turns[live.session_id] = turn

    def turn_ended(self, live: LiveSession) -> TurnCost | None:
        """The turn's cost (None: no new figures came during it), remembered for the
        limits view and the budgets."""
        turn = self._turns.pop(live.session_id, None)
        if turn is None:
            return None
        state = self._observer.state(live.agent)
        if state is None or state.updated_at == turn.before[1]:
            return None
        before = turn.before[0]
        from louise.limits.snapshot import Snapshot

        cost = turn_cost(before if isinstance(before, Snapshot) else None, state.snapshot,
                         len(turn.shared))
        if cost is None:
            return None
        self._costs.append((live.agent, live.session_id, live.cwd, cost))
        del self._costs[:-MAX_COSTS]
        if self._cache is not None and self.settings.budgets:
            import os

            cache, now = self._cache, self._clock()
            entries = [(window.window, window.percent) for window in cost.windows]
            workspace = os.path.normpath(live.cwd)

            def write() -> None:
                try:
                    record_spent(cache, live.agent, workspace, entries, now)
                except (OSError, TimeoutError) as exc:
                    log.warning("could not record a turn's cost: %s", exc)

            self._observer.in_background(write)
        return cost

    def cost_lines(self, agent: str, session_id: str | None = None) -> list[str]:
        """What this process's turns of the Agent used, per session and per workspace."""
        costs = [item for item in self._costs if item[0] == agent]
        if not costs:
            return []
        lines = ["", "## What turns used (this louise)"]

        def line(what: str, items: list[TurnCost]) -> str:
            totals = summed(items)
            parts = [f"{total:.0f}% of the {label} {format_duration(minutes)} window"
                     for (_bucket, minutes), (label, total, _turns) in totals.items()]
            shared = " (some shared with other sessions)" if any(
                item.shared_with for item in items) else ""
            return f"{what}: {', '.join(parts)} in {len(items)} turn(s){shared}"

        sessions: dict[str, list[TurnCost]] = {}
        workspaces: dict[str, list[TurnCost]] = {}
        for _agent, session, cwd, cost in costs:
            sessions.setdefault(session, []).append(cost)
            workspaces.setdefault(cwd, []).append(cost)
        for session, items in sessions.items():
            live = self._table.sessions.get(session)
            title = (live.model.name or live.model.info.get("title")) if live else None
            name = title if isinstance(title, str) and title else session
            marker = " (this chat)" if session == session_id else ""
            lines.append(line(f"Session {name}{marker}", items))
        for cwd, items in workspaces.items():
            lines.append(line(f"Workspace {cwd}", items))
        return lines

    # ------------------------------------------------------------------ parking

    async def run(self, live: LiveSession, turn: Callable[[], Awaitable[str]]) -> str:
        """Run `turn` (one `session/prompt`); when the agent refuses it for quota, park it
        and run it again at the reset. Returns its stop reason (`cancelled` when the park
        was cancelled); an undone park raises PromptWithdrawn; with parking off, the
        refusal (`QuotaRefused`) is raised."""
        while True:
            try:
                reason = await turn()
            except QuotaRefused as refused:
                self.settled(live.session_id, False, refused.block)
                outcome = await self.park(live, refused.block)
                if outcome == "resend":
                    continue
                if outcome == "cancelled":
                    return "cancelled"
                if self.park_enabled:
                    raise PromptWithdrawn("unparked: the prompt was not sent again") \
                        from refused
                raise
            except BaseException:
                self.settled(live.session_id, True, None)  # not refused for quota
                raise
            self.settled(live.session_id, True, None)
            return reason

    def parked(self, session_id: str) -> tuple[float, bool] | None:
        """(until, whether that is the agent's reset time) of a parked turn, or None."""
        park = self._parks.get(session_id)
        return None if park is None else (park.until, park.known)

    def unpark(self, live: LiveSession, outcome: ParkOutcome = "unparked") -> bool:
        """End the session's park without a resend. False when it was not parked."""
        park = self._parks.get(live.session_id)
        if park is None or park.outcome is not None:
            return False
        park.outcome = outcome
        park.wake.set()
        return True

    async def park(self, live: LiveSession, block: Block) -> ParkOutcome:
        """Wait for the reset, then claim it: `resend` when this turn is to be sent again,
        else how the park ended (`cancelled`, `unparked`)."""
        if not self.park_enabled:
            return "unparked"
        key = live.session_id
        resets_at = block.resets_at
        while True:
            now = self._clock()
            known = resets_at is not None and resets_at > now - RESET_MARGIN
            if known:
                assert resets_at is not None
                until = float(resets_at)
            else:
                delay = self._retry.get(key, FIRST_RETRY)
                self._retry[key] = min(delay * 2, MAX_RETRY)
                until = now + delay
            park = self._parks[key] = _Park(until, known)
            self._announce(live, park, block.reason)
            outcome = await self._wait(park, until + (RESET_MARGIN if known else 0.0))
            if outcome is not None:
                return self._end(live, outcome)
            if not known or self._cache is None:
                return self._end(live, "resend")
            decision = await self._claim(live, park, int(until))
            if decision is None:
                return self._end(live, park.outcome or "cancelled")
            if isinstance(decision, tuple):
                resets_at = decision[1]  # refused again elsewhere: park until its reset
                continue
            return self._end(live, "resend")

    async def _claim(self, live: LiveSession, park: _Park, resets_at: int
                     ) -> Literal["resend"] | tuple[Literal["park"], int | None] | None:
        """The cache's decision for a due park: `resend` (a probe, or the probe went
        through), ("park", until) when the probe was refused, None when the park ended."""
        cache = self._cache
        assert cache is not None
        while park.outcome is None:
            try:
                decision, cycle, until = await anyio.to_thread.run_sync(
                    claim_resume, cache, live.agent, resets_at, live.session_id, self._clock())
            except (OSError, TimeoutError) as exc:
                log.warning("could not coordinate the resend through the limits cache (%s); "
                            "sending it", exc)
                return "resend"
            if decision == "probe":
                park.cycle = cycle
                self._probes[live.session_id] = live.agent
                return "resend"
            if decision == "go":
                return "resend"
            if decision == "park":
                return ("park", until)
            with anyio.move_on_after(WAIT_POLL):
                await park.wake.wait()
        return None

    async def _wait(self, park: _Park, until: float) -> ParkOutcome | None:
        delay = max(0.0, until - self._clock())
        with anyio.move_on_after(delay if math.isfinite(delay) else 0.0):
            await park.wake.wait()
        return park.outcome

    def _announce(self, live: LiveSession, park: _Park, reason: str) -> None:
        when = format_utc(park.until)
        log.info("%s: parked until %s (%s)", live.session_id, when, reason)
        self._emitter.emit(SessionParked(live.session_id, park.until, park.known, reason))

    def _end(self, live: LiveSession, outcome: ParkOutcome) -> ParkOutcome:
        self._parks.pop(live.session_id, None)
        self._emitter.emit(SessionUnparked(live.session_id, outcome))
        return outcome

    # ------------------------------------------------------------------ the probe

    def on_activity(self, session_id: str) -> None:
        """An update of the session's turn: a probe out for it was accepted."""
        if session_id in self._probes:
            self.settled(session_id, True, None)

    def settled(self, session_id: str, accepted: bool, block: Block | None) -> None:
        """The resent turn went through (`accepted`) or was refused again (`block`)."""
        if accepted:
            self._retry.pop(session_id, None)
        agent = self._probes.pop(session_id, None)
        if agent is None or self._cache is None:
            return
        cache = self._cache
        next_reset = block.resets_at if block is not None else None

        def write() -> None:
            try:
                settle_resume(cache, agent, session_id, accepted, next_reset)
            except (OSError, TimeoutError) as exc:
                log.warning("could not record the resend's outcome: %s", exc)

        self._observer.in_background(write)
