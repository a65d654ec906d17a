"""The host's account limits: what each agent sends about its account, observed as the
agent sends it (whether or not a front end is attached) and written to this machine's
limits cache, so `louise inspect` and every front end here show it.

The sources are the registry's, parsed by the same pure functions (`louise.limits`,
`louise.limits.sources`): with the v1 extension negotiated, its `updated` notifications
and the answers to the reads front ends send; with the quota RFD advertised, its
`quota_update` pushes; otherwise the agents' own rate-limit signals (`usage_update`
`_meta`, codex's `_account/rate_limits_update`, a prompt refused for a rate limit). A
`session/load` replays history: its updates are no reading of the account now.

Cheap on the hot path: a notification is looked at only when a few byte searches say it
can carry limits (the proxy's `may_carry_limits`; with v1, when it is the `updated`
method), an answer only when its id is one this watches for (bounded).
One `CacheWriter` per host: one writer, off the event loop; the host holds each agent's
figures while the agent runs and releases them at exit within the exit budget."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, Protocol

from louise import limits as lim
from louise.limits import sources
from louise.limits.quota import QUOTA_UPDATE, QuotaError, parse_quota_snapshot
from louise.limits.quota_order import Freshness
from louise.proxy.core import may_carry_limits
from louise.storage.limits_cache import LimitsCache
from louise.storage.limits_cache_writer import CacheWriter

log = logging.getLogger("louise.serve")

MAX_WATCHED: Final = 256  # answers watched for per agent; the oldest forgotten first
MAX_IGNORED_LOGS: Final = 20  # per agent: one repeating unusable data cannot fill a log
_SAVED: Final = ("fresh", "empty", "unlimited", "stale", "unavailable")

# What a watched answer was the answer to.
_PROMPT: Final = "prompt"
_READ: Final = "read"
_LOAD: Final = "load"


class CacheSink(Protocol):
    """Where accepted states and this process's liveness changes go (`CacheWriter`)."""

    def put(self, agent: str, state: lim.LimitsState) -> None: ...

    def holder(self, agent: str, live: bool) -> None: ...


class HostLimits:
    """The host's one writer of the limits cache, shared by its agents."""

    def __init__(self, cache: LimitsCache | None = None) -> None:
        self.writer = CacheWriter(cache if cache is not None else LimitsCache())

    async def run(self) -> None:
        await self.writer.run()

    async def aclose(self) -> None:
        """The last write, then this process no longer holds any agent's figures;
        returns within the exit budget (`CacheWriter.aclose`)."""
        await self.writer.aclose()

    def for_agent(self, agent: str, clock: Callable[[], float]) -> AgentLimits:
        return AgentLimits(agent, self.writer, clock)


class AgentLimits:
    """One agent process's account limits, as it sends them."""

    def __init__(self, agent: str, writer: CacheSink, clock: Callable[[], float]) -> None:
        self.agent = agent
        self._writer = writer
        self._clock = clock
        self.state: lim.LimitsState | None = None
        self._capability: lim.Capability | None = None  # the v1 extension, negotiated
        self._quota = False  # the quota RFD, advertised: then its only source
        self._plan: str | None = None
        self._order = Freshness()
        self._watched: OrderedDict[Any, tuple[str, str | None]] = OrderedDict()
        self._loading: dict[str, int] = {}  # sessions being loaded: their replay is history
        self._holding = False
        self._ignored = 0

    def initialized(self, result: dict[str, Any]) -> None:
        """The agent's `initialize` result: which of the sources it speaks."""
        caps = result.get("agentCapabilities")
        caps = caps if isinstance(caps, dict) else {}
        self._capability = lim.negotiate(caps)
        self._quota = isinstance(caps.get("quota"), dict)

    def stopped(self) -> None:
        """The agent's process is gone: this host no longer vouches for its figures."""
        if self._holding:
            self._holding = False
            self._writer.holder(self.agent, False)

    # -- what goes to the agent --------------------------------------------------------

    def to_agent(self, message: dict[str, Any]) -> None:
        """A request the host sends the agent: its answer is watched for when it can say
        something about the account (a prompt, a v1 read) or ends a load's replay."""
        method = message.get("method")
        if method is None or "id" not in message:
            return
        if method == "session/prompt":
            self._watch(message["id"], _PROMPT, None)
        elif method == "session/load":
            params = message.get("params")
            session = params.get("sessionId") if isinstance(params, dict) else None
            if isinstance(session, str):
                self._watch(message["id"], _LOAD, session)
                self._loading[session] = self._loading.get(session, 0) + 1
        elif self._capability is not None and method == self._capability.read_method:
            self._watch(message["id"], _READ, None)

    def _watch(self, request_id: Any, kind: str, session: str | None) -> None:
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return
        self._watched[request_id] = (kind, session)
        while len(self._watched) > MAX_WATCHED:
            _, (old_kind, old_session) = self._watched.popitem(last=False)
            if old_kind == _LOAD and old_session is not None:
                self._loaded(old_session)

    def _loaded(self, session: str) -> None:
        left = self._loading.pop(session, 0) - 1
        if left > 0:
            self._loading[session] = left

    # -- what comes from the agent -----------------------------------------------------

    def from_agent(self, line: bytes, message: dict[str, Any]) -> None:
        """One message of the agent (`line` as it came): observed when it can carry
        the account's limits."""
        if "method" not in message:
            if self._watched:
                self._answer(message)
            return
        if "id" in message:
            return
        method = message["method"]
        if self._capability is not None:  # the only source then: its own method
            if method == self._capability.updated_method:
                self._accept(message.get("params"), self._clock())
            return
        if not may_carry_limits(line):
            return
        params = message.get("params")
        now = self._clock()
        if method == "session/update" and isinstance(params, dict):
            session = params.get("sessionId")
            if isinstance(session, str) and session in self._loading:
                return  # a load's replay: history, not the account now
            update = params.get("update")
            if isinstance(update, dict) and update.get("sessionUpdate") == QUOTA_UPDATE:
                self._quota_update(session, update, now)
            elif not self._quota:
                self._observe(sources.from_session_update(update, self.state, now,
                                                          plan=self._plan), now)
            return
        if self._quota or not isinstance(method, str):
            return
        plan = sources.plan_from_notification(method, params)
        if plan is not None:
            self._plan = plan
        self._observe(sources.from_notification(method, params, self.state, now), now)

    def _answer(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return
        watched = self._watched.pop(request_id, None)
        if watched is None:
            return
        kind, session = watched
        now = self._clock()
        if kind == _LOAD and session is not None:
            self._loaded(session)
        elif kind == _READ and "result" in message:
            self._accept(message["result"], now)
        elif kind == _PROMPT and self._capability is None and not self._quota:
            error = message.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            if isinstance(error, dict) and isinstance(code, int) \
                    and not isinstance(code, bool):
                self._observe(sources.from_prompt_error(code, error.get("data")), now)

    # -- states ------------------------------------------------------------------------

    def _accept(self, payload: Any, now: float) -> None:
        """A v1 snapshot (an `updated` notification, a read's answer)."""
        try:
            snapshot = lim.parse_snapshot(payload)
        except lim.LimitsError as exc:
            self._set(lim.failed(self.state, lim.malformed_note(str(exc)), agent=self.agent),
                      now)
            return
        self._set(lim.accepted(self.agent, snapshot, now), now)

    def _quota_update(self, session: object, update: dict[str, Any], now: float) -> None:
        try:
            quota = parse_quota_snapshot(update)
        except QuotaError as exc:
            self._log_ignored(QUOTA_UPDATE, str(exc))
            return
        if self._order.accept(session if isinstance(session, str) else None, quota):
            self._set(lim.accepted_quota(self.agent, quota, now, QUOTA_UPDATE), now)

    def _observe(self, observation: sources.Observation | None, now: float) -> None:
        if observation is None:
            return
        if isinstance(observation, sources.Ignored):
            self._log_ignored(observation.source, observation.reason)
            return
        try:
            state = sources.apply(self.state, self.agent, observation, now)
        except ValueError as exc:  # a translator's bug must not stop the host
            self._log_ignored(observation.source, str(exc))
            return
        self._set(state, now)

    def _set(self, state: lim.LimitsState, now: float) -> None:
        # The running agent vouches for what it sent (as a live session does in a front end).
        state = lim.inspect(state, self.agent, now, True, True)
        self.state = state
        if not self._holding:
            self._holding = True
            self._writer.holder(self.agent, True)
        if state.status in _SAVED:
            self._writer.put(self.agent, state)

    def _log_ignored(self, source: str, reason: str) -> None:
        self._ignored += 1
        if self._ignored <= MAX_IGNORED_LOGS:
            log.warning("%s: ignored %s: %s", self.agent, source, lim.sanitize(reason[:300]))
        if self._ignored == MAX_IGNORED_LOGS:
            log.warning("%s: more unusable rate-limit data will not be logged", self.agent)
