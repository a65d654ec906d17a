"""Pace: from successive observations of one quota window, when it runs out at this rate.

A window is one cycle of one bucket's window: (bucket id, duration, resets_at) — the same
key the threshold alerts use; a new `resets_at` starts a new cycle with no history.
`record` keeps, per window, the last `MAX_SAMPLES` (receipt time, used percent) pairs of
`fresh` states; `project` fits the rate between the oldest and the newest sample of the
cycle and says when the window would be full at that rate, if before its reset.

Nothing is projected from too little: at least two samples `MIN_SPAN_SECONDS` apart with
usage rising. Usage that fell (a provider correction) restarts the history. Everything is
pure and bounded: history is an immutable mapping, pruned of finished cycles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from louise.limits.alerts import Alert, AlertKey, AlertMemory
from louise.limits.render import format_duration, format_until, sanitize
from louise.limits.snapshot import Window
from louise.limits.state import LimitsState

MAX_SAMPLES: Final = 16
MAX_WINDOWS: Final = 64
MIN_SPAN_SECONDS: Final = 60.0

Sample = tuple[float, float]
"""(receipt time in Unix seconds, used percent)."""

PaceHistory = Mapping[AlertKey, tuple[Sample, ...]]
"""Samples per window cycle. Opaque to callers: pass back what `record` returned."""

_EMPTY: PaceHistory = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Pace:
    """The projection for one window at `now`."""

    rate_per_hour: float  # percentage points per hour
    runs_out_at: float | None  # Unix seconds; None when the window lasts until its reset
    resets_at: int

    @property
    def runs_out_before_reset(self) -> bool:
        return self.runs_out_at is not None


def window_key(bucket_id: str, window: Window) -> AlertKey:
    return (bucket_id, window.duration_mins, window.resets_at)


def record(history: PaceHistory | None, state: LimitsState, now: float) -> PaceHistory:
    """`history` with the windows of `state` added (only a `fresh` state is a new
    observation; anything else returns the history unchanged, pruned of past cycles)."""
    previous = _EMPTY if history is None else history
    kept = {key: samples for key, samples in previous.items() if key[2] > now}
    snapshot = state.snapshot
    if state.status == "fresh" and snapshot is not None and state.updated_at is not None:
        at = state.updated_at
        for bucket in snapshot.buckets:
            for window in bucket.windows:
                if window.resets_at <= now:
                    continue
                key = window_key(bucket.id, window)
                samples = kept.get(key, ())
                if samples and samples[-1][0] >= at:
                    continue  # the same observation again (or an older one)
                if samples and window.used_percent < samples[-1][1]:
                    samples = ()  # usage fell: the old rate no longer describes it
                kept[key] = (*samples, (at, window.used_percent))[-MAX_SAMPLES:]
    if len(kept) > MAX_WINDOWS:
        # Keep the windows observed most recently.
        newest = sorted(kept, key=lambda key: kept[key][-1][0], reverse=True)[:MAX_WINDOWS]
        kept = {key: kept[key] for key in newest}
    if kept == dict(previous):
        return previous
    return MappingProxyType(kept)


def project(history: PaceHistory | None, key: AlertKey) -> Pace | None:
    """The pace of one window, or `None` without enough rising samples."""
    samples = (history or _EMPTY).get(key)
    if not samples or len(samples) < 2:
        return None
    (t0, used0), (t1, used1) = samples[0], samples[-1]
    span = t1 - t0
    if span < MIN_SPAN_SECONDS or used1 <= used0:
        return None
    rate = (used1 - used0) / span  # percentage points per second
    out_at = t1 + (100.0 - used1) / rate
    resets_at = key[2]
    return Pace(rate * 3600.0, out_at if out_at < resets_at else None, resets_at)


def format_eta(seconds: float) -> str:
    """A rough duration: `~45m`, `~1h20`, `~2d3h` (under a minute: `~1m`)."""
    minutes = max(1, math.ceil(seconds / 60))
    if minutes < 60:
        return f"~{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"~{hours}h{minutes:02d}" if minutes else f"~{hours}h"
    days, hours = divmod(hours, 24)
    return f"~{days}d{hours}h" if hours else f"~{days}d"


def describe(pace: Pace, now: float) -> str:
    """`out in ~1h20 at this pace`, or `lasts until its reset at this pace`."""
    if pace.runs_out_at is None:
        return "lasts until its reset at this pace"
    if pace.runs_out_at <= now:
        return "full by now at this pace"
    return f"out in {format_eta(pace.runs_out_at - now)} at this pace"


def pace_line(
    bucket_id: str, window: Window, history: PaceHistory | None, now: float
) -> str | None:
    """The detail view's line for one window (`Pace: out in ~1h20 at this pace (+12%/h)`),
    or `None` when there is no projection."""
    pace = project(history, window_key(bucket_id, window))
    if pace is None:
        return None
    return f"Pace: {describe(pace, now)} (+{pace.rate_per_hour:.3g}%/h)"


def pace_alerts(
    state: LimitsState,
    history: PaceHistory | None,
    seen: AlertMemory | None,
    now: float,
    *,
    warning_left: float = 20.0,
) -> tuple[list[Alert], AlertMemory]:
    """Alerts for windows that will run out before their reset at the current pace, while
    they still have more than `warning_left` % left (after that the threshold alerts
    speak). One per window cycle; only for a `fresh` state. `seen` is the memory returned
    by the previous call (separate from the threshold alerts' memory)."""
    previous: AlertMemory = MappingProxyType({}) if seen is None else seen
    snapshot = state.snapshot
    if state.status != "fresh" or snapshot is None:
        return [], previous
    memory = {key: rank for key, rank in previous.items() if key[2] > now}
    alerts: list[Alert] = []
    agent = sanitize(state.agent)
    for bucket in snapshot.buckets:
        label = sanitize(bucket.display_name)
        for window in sorted(bucket.windows, key=lambda w: w.duration_mins):
            if window.resets_at <= now or 100 - window.used_percent <= warning_left:
                continue
            key = window_key(bucket.id, window)
            pace = project(history, key)
            if pace is None or pace.runs_out_at is None or key in memory:
                continue
            memory[key] = 1
            duration = format_duration(window.duration_mins)
            alerts.append(
                Alert(
                    "warning",
                    f"{agent} {label} {duration} window: {describe(pace, now)} "
                    f"(resets in {format_until(window.resets_at, now)})",
                    bucket.id,
                    window.duration_mins,
                    window.resets_at,
                )
            )
    return alerts, MappingProxyType(memory)
