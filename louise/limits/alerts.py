"""Threshold notifications: each escalation of each window alerts once per reset cycle.

A window is identified by (bucket id, duration, resets_at): a new `resets_at` is a new cycle
and starts from scratch. Escalations: ≤20 % left (warning), ≤10 % left (error) — both
thresholds configurable — and reached
(error; only for the most-used window of a bucket that reports `reachedType`). A window first
seen already past several thresholds gives one alert, for the highest. Only a `fresh` state
alerts: stale, loading or unavailable data must not raise a current-sounding alarm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from louise.limits.render import format_duration, format_remaining, format_until, sanitize
from louise.limits.snapshot import Window
from louise.limits.state import LimitsState

AlertKey = tuple[str, int, int]
"""(bucket id, window duration in minutes, resets_at)."""

AlertMemory = Mapping[AlertKey, int]
"""What has been alerted: the highest rank per window and cycle. Opaque to callers: pass back
whatever `threshold_alerts` returned."""

_EMPTY: AlertMemory = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Alert:
    level: Literal["warning", "error"]
    message: str
    bucket_id: str
    duration_mins: int
    resets_at: int


def _used(window: Window) -> float:
    return window.used_percent


def _duration(window: Window) -> int:
    return window.duration_mins


def threshold_alerts(
    state: LimitsState,
    seen: AlertMemory | None,
    now: float,
    *,
    warning_left: float = 20.0,
    error_left: float = 10.0,
) -> tuple[list[Alert], AlertMemory]:
    """New alerts for `state` at `now`, and the memory to pass to the next call.

    `seen` is `None` the first time. Windows whose reset time has passed are skipped (their
    cycle is over and their numbers are no longer current) and forgotten.
    """
    previous = _EMPTY if seen is None else seen
    snapshot = state.snapshot
    if state.status != "fresh" or snapshot is None:
        return [], previous
    memory = {key: rank for key, rank in previous.items() if key[2] > now}
    alerts: list[Alert] = []
    agent = sanitize(state.agent)
    for bucket in snapshot.buckets:
        reached: Window | None = None
        if bucket.reached_type is not None and bucket.windows:
            reached = max(bucket.windows, key=_used)  # the first of equals
        label = sanitize(bucket.display_name)
        for window in sorted(bucket.windows, key=_duration):
            if window.resets_at <= now:
                continue
            remaining = 100 - window.used_percent
            if window is reached:
                rank = 3
            elif remaining <= error_left:
                rank = 2
            elif remaining <= warning_left:
                rank = 1
            else:
                continue
            key = (bucket.id, window.duration_mins, window.resets_at)
            if memory.get(key, 0) >= rank:
                continue
            memory[key] = rank
            duration = format_duration(window.duration_mins)
            until = format_until(window.resets_at, now)
            if rank == 3:
                reached_type = sanitize(bucket.reached_type or "").replace("_", " ")
                message = f"{agent} {label} {duration} limit reached ({reached_type}); "
            else:
                left = format_remaining(remaining)
                message = f"{agent} {label} {duration} has {left} remaining; "
            alerts.append(
                Alert(
                    "warning" if rank == 1 else "error",
                    message + f"resets in {until}",
                    bucket.id,
                    window.duration_mins,
                    window.resets_at,
                )
            )
    return alerts, MappingProxyType(memory)
