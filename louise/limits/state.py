"""Observation states of one Agent's account limits, and their pure transitions.

A `LimitsState` is immutable; every transition returns a new one. Time is always passed in
(`now`, Unix seconds). The statuses and the inspection rules are the contract's
(docs/account-limits-v1.md, "LouiseLM observation states"):

- `accepted` replaces everything (error cleared); `failed` keeps the last good snapshot as
  `stale` or becomes `unavailable`; `loading` keeps a previous snapshot while a read runs.
- `inspect` is a read-time view: it never stores anything and never replenishes quota when a
  reset time passes; it only marks the state `stale` / `unavailable`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, get_args

from louise.limits.errors import ERROR_NO_LIVE_SESSION, ERROR_RESET_PASSED
from louise.limits.snapshot import Snapshot, parse_snapshot, snapshot_to_wire

Status = Literal[
    "not_observed", "unsupported", "loading", "fresh", "empty", "unlimited", "unavailable", "stale"
]
STATUSES: Final[tuple[str, ...]] = get_args(Status)

# Statuses that always carry a snapshot, and those that never do (`loading` may or may not).
_NEEDS_SNAPSHOT: Final = frozenset({"fresh", "empty", "unlimited", "stale"})
_NO_SNAPSHOT: Final = frozenset({"not_observed", "unsupported", "unavailable"})
_MAX_SECONDS: Final = 1e15


@dataclass(frozen=True, slots=True)
class LimitsState:
    """One Agent's limits observation. `updated_at` is local receipt time, not the agent's."""

    agent: str
    status: Status
    snapshot: Snapshot | None = None
    updated_at: float | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        # Cheap invariants so an impossible state (e.g. `fresh` without data) cannot exist,
        # whether built by a transition, by hand or from the cache file.
        if self.status not in STATUSES:
            raise ValueError(f"unknown limits status {self.status!r}")
        if self.snapshot is None and self.status in _NEEDS_SNAPSHOT:
            raise ValueError(f"a {self.status} limits state needs a snapshot")
        if self.snapshot is not None and self.status in _NO_SNAPSHOT:
            raise ValueError(f"a {self.status} limits state cannot carry a snapshot")
        if isinstance(self.updated_at, float) and not math.isfinite(self.updated_at):
            raise ValueError("updated_at must be a finite number of seconds")


def accepted(agent: str, snapshot: Snapshot, now: float) -> LimitsState:
    """A valid snapshot was received at `now`: `unlimited`, `empty` or `fresh`; error cleared."""
    status: Status
    if snapshot.unlimited:
        status = "unlimited"
    elif not snapshot.buckets:
        status = "empty"
    else:
        status = "fresh"
    return LimitsState(agent, status, snapshot, now, None)


def _agent_of(previous: LimitsState | None, agent: str | None) -> str:
    if previous is None:
        if agent is None:
            raise ValueError("an agent name is needed when there is no previous state")
        return agent
    if agent is not None and agent != previous.agent:
        raise ValueError(f"state of {previous.agent!r} passed for agent {agent!r}")
    return previous.agent


def failed(previous: LimitsState | None, message: str, agent: str | None = None) -> LimitsState:
    """A read or an update failed: `stale` keeping the last good snapshot, else `unavailable`."""
    name = _agent_of(previous, agent)
    if previous is not None and previous.snapshot is not None:
        return LimitsState(name, "stale", previous.snapshot, previous.updated_at, message)
    return LimitsState(name, "unavailable", None, None, message)


def loading(previous: LimitsState | None, agent: str | None = None) -> LimitsState:
    """A read is in flight; a previous snapshot (and its receipt time) stays visible."""
    name = _agent_of(previous, agent)
    if previous is not None and previous.snapshot is not None:
        return LimitsState(name, "loading", previous.snapshot, previous.updated_at, None)
    return LimitsState(name, "loading", None, None, None)


def reset_passed(snapshot: Snapshot, now: float) -> bool:
    """True when any window of any bucket has `resets_at <= now`."""
    return any(window.resets_at <= now for bucket in snapshot.buckets for window in bucket.windows)


def inspect(
    state: LimitsState | None,
    agent: str,
    now: float,
    live_capable: bool,
    observed: bool,
) -> LimitsState:
    """The state as it should be shown at `now` (starts nothing, stores nothing).

    - No cached state: `loading` if a live capable Session exists, else `unsupported` if an
      eligible Session was observed without the capability, else `not_observed`.
    - A window whose reset time has passed makes the state `stale` with `ERROR_RESET_PASSED`
      (the quota is not assumed replenished: only a new observation can say so).
    - Without a live capable Session, a snapshot is `stale` and a pending load `unavailable`;
      the error becomes `ERROR_NO_LIVE_SESSION` unless the state already has one.
    """
    if state is None:
        if live_capable:
            return LimitsState(agent, "loading")
        return LimitsState(agent, "unsupported" if observed else "not_observed")
    if state.agent != agent:
        raise ValueError(f"state of {state.agent!r} inspected as {agent!r}")
    status = state.status
    error = state.error
    snapshot = state.snapshot
    if snapshot is not None and reset_passed(snapshot, now):
        status = "stale"
        error = ERROR_RESET_PASSED
    if not live_capable:
        if snapshot is not None:
            status = "stale"
        elif status == "loading":
            status = "unavailable"
        if error is None:
            error = ERROR_NO_LIVE_SESSION
    if status == state.status and error == state.error:
        return state
    return replace(state, status=status, error=error)


# --------------------------------------------------------------------------- serialization


def state_to_json(state: LimitsState) -> dict[str, Any]:
    """A JSON-ready object (camelCase; the snapshot in its wire shape)."""
    return {
        "agent": state.agent,
        "status": state.status,
        "snapshot": None if state.snapshot is None else snapshot_to_wire(state.snapshot),
        "updatedAt": state.updated_at,
        "error": state.error,
    }


def state_from_json(value: object) -> LimitsState:
    """The inverse of `state_to_json`; raises `ValueError` (incl. `LimitsError`) when malformed.

    The snapshot is re-validated with `parse_snapshot`, so a hand-edited or damaged cache can
    never produce a state that a live payload could not.
    """
    if not isinstance(value, dict):
        raise ValueError("a limits state must be an object")
    agent = value.get("agent")
    if not isinstance(agent, str) or agent == "":
        raise ValueError("a limits state needs a non-empty agent name")
    status = value.get("status")
    if status not in STATUSES:
        raise ValueError(f"unknown limits status {status!r}")
    raw_snapshot = value.get("snapshot")
    snapshot = None if raw_snapshot is None else parse_snapshot(raw_snapshot)
    updated_at = value.get("updatedAt")
    if updated_at is not None and not (
        (type(updated_at) is int or type(updated_at) is float)
        and abs(updated_at) < _MAX_SECONDS
    ):
        # A receipt time is a clock reading: anything beyond ±31 million years is damage
        # (and would overflow float arithmetic when rendering ages).
        raise ValueError("updatedAt must be a plausible number of seconds or null")
    error = value.get("error")
    if error is not None and not isinstance(error, str):
        raise ValueError("error must be a string or null")
    return LimitsState(agent, status, snapshot, updated_at, error)
