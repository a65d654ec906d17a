"""Threshold notifications: each escalation of each window alerts once per reset cycle.

A window is identified by (bucket id, duration, resets_at): a new `resets_at` is a new cycle
and starts from scratch. Escalations: ≤20 % left (warning), ≤10 % left (error) — both
thresholds configurable — and reached
(error; only for the most-used window of a bucket that reports `reachedType`). A window first
seen already past several thresholds gives one alert, for the highest. Only a `fresh` state
alerts: stale, loading or unavailable data must not raise a current-sounding alarm.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from louise.limits.snapshot import Bucket, Window
from louise.limits.state import LimitsState
from louise.limits.text import format_duration, format_remaining, format_until, sanitize

AlertKey = tuple[str, int, int]
"""(bucket id, window duration in minutes, resets_at)."""

AlertMemory = Mapping[AlertKey, int]
"""What has been alerted: the highest rank per window and cycle. Opaque to callers: pass back
whatever `threshold_alerts` returned."""

_EMPTY: AlertMemory = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Alert:
    """An account limit near or reached, said once for its bucket and window."""

    level: Literal["warning", "error"]
    message: str
    bucket_id: str
    duration_mins: int
    resets_at: int


def _used(window: Window) -> float:
    return window.used_percent


class Escalations:
    """One call's new alerts, and the memory it returns: each window cycle (its
    `AlertKey`) alerts once per escalation (`rank`), the highest first. Cycles whose reset
    passed are forgotten (a key with reset 0, none known, is kept)."""

    def __init__(self, seen: AlertMemory | None, now: float) -> None:
        self.memory = {key: rank for key, rank in (seen or _EMPTY).items()
                       if key[2] == 0 or key[2] > now}
        self.alerts: list[Alert] = []

    def new(self, key: AlertKey, rank: int) -> bool:
        """Whether the cycle `key` reached `rank` only now (it is then remembered)."""
        if self.memory.get(key, 0) >= rank:
            return False
        self.memory[key] = rank
        return True

    def add(self, level: Literal["warning", "error"], message: str, key: AlertKey) -> None:
        self.alerts.append(Alert(level, message, *key))

    def result(self) -> tuple[list[Alert], AlertMemory]:
        return self.alerts, MappingProxyType(self.memory)


def running_windows(state: LimitsState, now: float) -> Iterator[tuple[Bucket, Window]]:
    """The windows of a `fresh` state whose cycle still runs, bucket by bucket, shortest
    first (nothing for stale, loading or unavailable data: it must not raise a
    current-sounding alarm)."""
    snapshot = state.snapshot
    if state.status != "fresh" or snapshot is None:
        return
    for bucket in snapshot.buckets:
        for window in sorted(bucket.windows, key=lambda w: w.duration_mins):
            if window.resets_at > now:
                yield bucket, window


def window_key(bucket_id: str, window: Window) -> AlertKey:
    """The window cycle a figure belongs to: (bucket id, duration, reset)."""
    return (bucket_id, window.duration_mins, window.resets_at)


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
    if state.status != "fresh" or state.snapshot is None:
        return [], _EMPTY if seen is None else seen
    book = Escalations(seen, now)
    agent = sanitize(state.agent)
    reached: dict[str, Window] = {  # the most-used window of a bucket that reports it
        bucket.id: max(bucket.windows, key=_used)  # the first of equals
        for bucket in state.snapshot.buckets if bucket.reached_type is not None and bucket.windows}
    for bucket, window in running_windows(state, now):
        remaining = 100 - window.used_percent
        if reached.get(bucket.id) is window:
            rank = 3
        elif remaining <= error_left:
            rank = 2
        elif remaining <= warning_left:
            rank = 1
        else:
            continue
        key = window_key(bucket.id, window)
        if not book.new(key, rank):
            continue
        what = f"{agent} {sanitize(bucket.display_name)} {format_duration(window.duration_mins)}"
        if rank == 3:
            reached_type = sanitize(bucket.reached_type or "").replace("_", " ")
            message = f"{what} limit reached ({reached_type}); "
        else:
            message = f"{what} has {format_remaining(remaining)} remaining; "
        book.add("warning" if rank == 1 else "error",
                 message + f"resets in {format_until(window.resets_at, now)}", key)
    return book.result()
