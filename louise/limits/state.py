"""Observation states of one Agent's account limits, and their pure transitions.

A `LimitsState` is immutable; every transition returns a new one. Time is always passed in
(`now`, Unix seconds). The statuses and the inspection rules are the contract's
(docs/account-limits-v1.md, "LouiseLM observation states"):

- `accepted` replaces everything (error cleared); `failed` keeps the last good snapshot as
  `stale` or becomes `unavailable`; `loading` keeps a previous snapshot while a read runs.
- `inspect` is a read-time view: it never stores anything and never replenishes quota when a
  reset time passes; it only marks the state `stale` / `unavailable`.
- `translated` and `reached_by_rejection` are the passive sources (`louise.limits.sources`):
  a snapshot translated from an agent's own rate-limit signals, and a turn refused for a
  rate limit. Their states carry `source` (the provenance shown to a person); a state from
  the v1 extension has `source=None`. Every transition keeps the source of the snapshot it
  keeps.
- `accepted_quota` is a snapshot of the ACP Quotas RFD (`louise.limits.quota`): the state
  keeps it whole (`quota`) next to its v1 projection (`snapshot`), which the labels,
  alerts and pace read; `refused` records a `quotaExceeded` error (`refusal`: reached,
  and when it resets if the agent said).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from louise.limits.errors import ERROR_NO_LIVE_SESSION, ERROR_RESET_PASSED

# `louise.limits.snapshot` (six dataclasses) is imported where a snapshot is read or made:
# a first `louise inspect` without a cache file (and without the engine's compiled
# methods) needs none of it.
TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Any, Final, Literal

    # Imported where used: `louise inspect` of a cache without RFD states needs none.
    from louise.limits.quota import QuotaExceeded, QuotaSnapshot
    from louise.limits.snapshot import Snapshot

if TYPE_CHECKING:
    Status = Literal[
        "not_observed", "unsupported", "loading", "fresh", "empty", "unlimited", "unavailable",
        "stale"
    ]
# Status's values (a test checks they are the same): `Literal` is typing's, not imported
# when louise runs.
STATUSES: Final[tuple[str, ...]] = (
    "not_observed", "unsupported", "loading", "fresh", "empty", "unlimited", "unavailable",
    "stale")

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
    source: str | None = None  # None: the v1 extension; else a translator's provenance
    quota: QuotaSnapshot | None = None  # the RFD snapshot `snapshot` projects, if any
    refusal: QuotaExceeded | None = None  # the last `quotaExceeded`, until new figures

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
        if self.source is not None and (self.source == "" or self.snapshot is None):
            raise ValueError("a limits source names the provenance of a snapshot")
        if self.quota is not None and self.snapshot is None:
            raise ValueError("a quota snapshot comes with its projection")

    def refused_until(self, now: float) -> QuotaExceeded | None:
        """The `quotaExceeded` refusal still in force at `now` (reset unknown, or ahead)."""
        refusal = self.refusal
        if refusal is None or (refusal.resets_at is not None and refusal.resets_at <= now):
            return None
        return refusal


def accepted(
    agent: str, snapshot: Snapshot, now: float, source: str | None = None
) -> LimitsState:
    """A valid snapshot was received at `now`: `unlimited`, `empty` or `fresh`; error cleared.

    `source` is `None` for the v1 extension, else the translator's provenance."""
    status: Status
    if snapshot.unlimited:
        status = "unlimited"
    elif not snapshot.buckets:
        status = "empty"
    else:
        status = "fresh"
    return LimitsState(agent, status, snapshot, now, None, source)


def translated(agent: str, snapshot: Snapshot, source: str, now: float) -> LimitsState:
    """A snapshot translated from the agent's own rate-limit signals, received at `now`.

    The same states as a v1 snapshot (fresh when received; `inspect` makes it stale after a
    reset or without a live session of the Agent), with its provenance kept."""
    if source == "":
        raise ValueError("a translated snapshot needs its source")
    return accepted(agent, snapshot, now, source)


def accepted_quota(agent: str, quota: QuotaSnapshot, now: float, source: str) -> LimitsState:
    """An RFD snapshot received at `now` (`source`: `quota_update`, `quota/read`, or a
    translator's name): `empty` without pools, else `fresh`; any refusal is cleared."""
    from louise.limits.quota_project import project

    if source == "":
        raise ValueError("a quota snapshot needs its source")
    status: Status = "fresh" if quota.pools else "empty"
    return LimitsState(agent, status, project(quota), now, None, source, quota)


def refused(previous: LimitsState | None, agent: str, refusal: QuotaExceeded, source: str,
            now: float) -> LimitsState:
    """A request refused with `quotaExceeded` at `now`: reached, resetting when the agent
    said. An RFD state keeps its figures (the agent pushes the meter `exceeded` when it
    can; louise does not invent it); without one, the pool it named (else `quota`) is
    marked reached, as a refused turn of any agent is."""
    if previous is not None:
        _agent_of(previous, agent)
    if previous is not None and previous.quota is not None and previous.quota.pools \
            and previous.snapshot is not None:
        return LimitsState(agent, "fresh", previous.snapshot, now, None, previous.source,
                           previous.quota, refusal)
    base = reached_by_rejection(previous if previous is not None and previous.source == source
                                else None, agent, source, now, reached_type="quota_exceeded",
                                bucket_id=refusal.pool_id or "quota")
    return replace(base, refusal=refusal)


def reached_by_rejection(
    previous: LimitsState | None,
    agent: str,
    source: str,
    now: float,
    *,
    reached_type: str = "rate_limit",
    bucket_id: str | None = None,
    bucket_label: str | None = None,
) -> LimitsState:
    """A turn was refused for a rate limit at `now`: mark the bucket reached.

    The previous snapshot is kept (its windows and reset times unchanged; no reset time is
    ever invented) with `reached_type` set on `bucket_id` (default: the default bucket).
    Without a previous snapshot, or when `bucket_id` is not in it, the bucket is added with
    no windows. The state is `fresh`: the refusal is a current observation.
    """
    if not reached_type:
        raise ValueError("reached_type must be a non-empty string")
    snapshot = previous.snapshot if previous is not None else None
    if previous is not None:
        _agent_of(previous, agent)
    buckets = list(snapshot.buckets) if snapshot is not None else []
    target = bucket_id
    if target is None:
        target = snapshot.default_bucket_id if snapshot is not None else None
    if target is None:
        target = "account"
    for index, bucket in enumerate(buckets):
        if bucket.id == target:
            buckets[index] = replace(bucket, reached_type=reached_type)
            break
    else:
        from louise.limits.snapshot import Bucket

        buckets.append(Bucket(target, (), bucket_label, reached_type))
    default_id = snapshot.default_bucket_id if snapshot is not None else None
    from louise.limits.snapshot import Snapshot, parse_snapshot, snapshot_to_wire

    result = Snapshot(
        tuple(buckets),
        default_id if default_id is not None else target,
        snapshot.unlimited if snapshot is not None else False,
        snapshot.reset_credits if snapshot is not None else None,
    )
    # An account declared unlimited that refuses a turn is not unlimited any more.
    if result.unlimited:
        result = replace(result, unlimited=False)
    # Through the one validator, so a bad bucket id fails here like any payload would.
    return LimitsState(
        agent, "fresh", parse_snapshot(snapshot_to_wire(result)), now, None, source
    )


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
        return LimitsState(
            name, "stale", previous.snapshot, previous.updated_at, message, previous.source,
            previous.quota, previous.refusal,
        )
    return LimitsState(name, "unavailable", None, None, message)


def loading(previous: LimitsState | None, agent: str | None = None) -> LimitsState:
    """A read is in flight; a previous snapshot (and its receipt time) stays visible."""
    name = _agent_of(previous, agent)
    if previous is not None and previous.snapshot is not None:
        return LimitsState(
            name, "loading", previous.snapshot, previous.updated_at, None, previous.source,
            previous.quota, previous.refusal,
        )
    return LimitsState(name, "loading", None, None, None)


def reset_passed(snapshot: Snapshot, now: float, quota: QuotaSnapshot | None = None) -> bool:
    """True when any window of any bucket has `resets_at <= now` (and, with `quota`, any
    meter's reset time, also of periods that are not v1 windows)."""
    if any(window.resets_at <= now for bucket in snapshot.buckets for window in bucket.windows):
        return True
    return quota is not None and any(
        meter.resets_at is not None and meter.resets_at.seconds <= now
        for pool in quota.pools for meter in pool.meters)


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
    if snapshot is not None and reset_passed(snapshot, now, state.quota):
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
    """A JSON-ready object (camelCase; the snapshot in its wire shape). `source` is written
    only for a translated state, so a v1 state reads the same as before."""
    from louise.limits.snapshot import snapshot_to_wire

    value: dict[str, Any] = {
        "agent": state.agent,
        "status": state.status,
        "snapshot": None if state.snapshot is None else snapshot_to_wire(state.snapshot),
        "updatedAt": state.updated_at,
        "error": state.error,
    }
    if state.source is not None:
        value["source"] = state.source
    if state.quota is not None:
        from louise.limits.quota import quota_to_wire

        value["quota"] = quota_to_wire(state.quota)
    if state.refusal is not None:
        from louise.limits.quota import quota_exceeded_data

        value["refusal"] = {"message": state.refusal.message,
                            **quota_exceeded_data(state.refusal)}
    return value


def _refusal_from_json(value: object) -> QuotaExceeded:
    from louise.limits.quota import QuotaExceeded, parse_duration, parse_instant

    if not isinstance(value, dict) or not isinstance(value.get("message"), str):
        raise ValueError("refusal must be an object with a message")
    resets = value.get("resetsAt")
    instant = parse_instant(resets)
    if resets is not None and instant is None:
        raise ValueError("refusal resetsAt must be an RFC 3339 time")
    retry = value.get("retryAfter")
    duration = parse_duration(retry)
    if retry is not None and duration is None:
        raise ValueError("refusal retryAfter must be an ISO 8601 duration")
    texts = {key: value.get(key) for key in ("poolId", "meterId")}
    for key, text in texts.items():
        if text is not None and not (isinstance(text, str) and 0 < len(text) <= 200):
            raise ValueError(f"refusal {key} must be a short string")
    return QuotaExceeded(value["message"][:300], texts["poolId"], texts["meterId"],
                         None if instant is None else instant.seconds, duration)


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
    raw_quota = value.get("quota")
    # With an RFD snapshot, the v1 one is its projection: derived below, never read.
    snapshot = None
    if raw_snapshot is not None and raw_quota is None:
        from louise.limits.snapshot import parse_snapshot

        snapshot = parse_snapshot(raw_snapshot)
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
    source = value.get("source")
    if source is not None and not (isinstance(source, str) and 0 < len(source) <= 200):
        raise ValueError("source must be a short non-empty string or null")
    quota = None
    if raw_quota is not None:
        from louise.limits.quota import QuotaError, parse_quota_snapshot
        from louise.limits.quota_project import project

        try:
            quota = parse_quota_snapshot(raw_quota)
        except QuotaError as exc:
            raise ValueError(str(exc)) from None
        if raw_snapshot is not None:
            snapshot = project(quota)
    raw_refusal = value.get("refusal")
    refusal = None if raw_refusal is None else _refusal_from_json(raw_refusal)
    return LimitsState(agent, status, snapshot, updated_at, error, source, quota, refusal)
