"""Pace: from successive observations of one quota window, how much work is left in it.

A window is one cycle of one bucket's window: (bucket id, duration, resets_at) — the same
key the threshold alerts use; a new `resets_at` starts a new cycle with no history.
`record` keeps, per window, the last `MAX_SAMPLES` (time, used percent) pairs of `fresh`
states; `project` fits the rate between the oldest and the newest sample of the cycle.

The time is *active* time when the caller has it (the registry's clock of the time the
Agent's turns ran, see `ActiveClock`): quota is spent while turns run, so a rate measured
through an idle night would be meaningless, and a projection run through idle time would
say "full by now" next to a figure that still has 20 % left. The projection is therefore
work left: "out after ~1h20 of work at this pace", compared with the time to the reset
as if the work went on from now. Without active time (a caller that passes none), the
receipt time stands in.

Nothing is projected from too little: at least two samples `MIN_SPAN_SECONDS` apart with
usage rising. Usage that fell (a provider correction) restarts the history, and so does
usage that changed while no turn ran (someone else spent it). Everything is pure and
bounded: history is an immutable mapping, pruned of finished cycles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from louise.limits.alerts import (
    Alert,
    AlertKey,
    AlertMemory,
    Escalations,
    running_windows,
    window_key,
)
from louise.limits.snapshot import Window
from louise.limits.state import LimitsState
from louise.limits.text import format_duration, format_until, sanitize

MAX_SAMPLES: Final = 16
MAX_WINDOWS: Final = 64
MIN_SPAN_SECONDS: Final = 60.0

Sample = tuple[float, float]
"""(active time in seconds, else receipt time; used percent)."""

PaceHistory = Mapping[AlertKey, tuple[Sample, ...]]
"""Samples per window cycle. Opaque to callers: pass back what `record` returned."""

_EMPTY: PaceHistory = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Pace:
    """The projection for one window: its rate, and the work (in seconds of active time)
    that empties it at that rate from the last figure."""

    rate_per_hour: float  # percentage points per hour of work
    work_left: float  # seconds of work until it is full, at this rate
    resets_at: int

    def runs_out_before_reset(self, now: float) -> bool:
        """Whether work going on from `now` at this rate empties it before its reset."""
        return now + self.work_left < self.resets_at


class ActiveClock:
    """Seconds during which at least one turn of the Agent ran (`start`/`stop` per turn,
    counted; the wall clock passed in). Pure: the caller feeds it."""

    __slots__ = ("_running", "_since", "_total")

    def __init__(self) -> None:
        self._total = 0.0
        self._running = 0
        self._since = 0.0

    def start(self, now: float) -> None:
        if self._running == 0:
            self._since = now
        self._running += 1

    def stop(self, now: float) -> None:
        if self._running == 0:
            return
        self._running -= 1
        if self._running == 0:
            self._total += max(0.0, now - self._since)

    def read(self, now: float) -> float:
        """Active seconds so far (the running turns' time included)."""
        if self._running:
            return self._total + max(0.0, now - self._since)
        return self._total

    @property
    def running(self) -> bool:
        return self._running > 0


def record(history: PaceHistory | None, state: LimitsState, now: float,
           active: float | None = None) -> PaceHistory:
    """`history` with the windows of `state` added (only a `fresh` state is a new
    observation; anything else returns the history unchanged, pruned of past cycles).
    `active`: the Agent's active time now (`ActiveClock.read`); None: the receipt time."""
    previous = _EMPTY if history is None else history
    kept = {key: samples for key, samples in previous.items() if key[2] > now}
    snapshot = state.snapshot
    if state.status == "fresh" and snapshot is not None and state.updated_at is not None:
        at = state.updated_at if active is None else active
        for bucket in snapshot.buckets:
            for window in bucket.windows:
                if window.resets_at <= now:
                    continue
                key = window_key(bucket.id, window)
                samples = kept.get(key, ())
                used = window.used_percent
                if samples and samples[-1][0] >= at:
                    if used == samples[-1][1]:
                        continue  # the same observation again
                    # Changed while no turn of this Agent ran (another client spent it):
                    # no rate describes that; start again from here.
                    samples = ()
                if samples and used < samples[-1][1]:
                    samples = ()  # usage fell: the old rate no longer describes it
                kept[key] = (*samples, (at, used))[-MAX_SAMPLES:]
    if len(kept) > MAX_WINDOWS:
        # Keep the windows observed most recently.
        newest = sorted(kept, key=lambda key: kept[key][-1][0], reverse=True)[:MAX_WINDOWS]
        kept = {key: kept[key] for key in newest}
    if kept == dict(previous):
        return previous
    return MappingProxyType(kept)


def project(history: PaceHistory | None, key: AlertKey, *, now: float | None = None
            ) -> Pace | None:
    """The pace of one window, or `None` without enough rising samples. `now` (on the
    samples' clock, i.e. active time) takes off the work done since the last figure,
    which the last figure does not show yet; never below nothing left."""
    samples = (history or _EMPTY).get(key)
    if not samples or len(samples) < 2:
        return None
    (t0, used0), (t1, used1) = samples[0], samples[-1]
    span = t1 - t0
    if span < MIN_SPAN_SECONDS or used1 <= used0:
        return None
    rate = (used1 - used0) / span  # percentage points per second
    work_left = max(0.0, 100.0 - used1) / rate
    if now is not None and now > t1:
        work_left = max(0.0, work_left - (now - t1))
    return Pace(rate * 3600.0, work_left, key[2])


def format_rate(rate_per_hour: float) -> str:
    """A rate in plain figures: `+1,670 %/h`, `+12 %/h`, `+0.5 %/h` (never an exponent)."""
    if rate_per_hour >= 10:
        return f"+{rate_per_hour:,.0f} %/h"
    if rate_per_hour >= 0.1:
        return f"+{rate_per_hour:.1f} %/h".replace(".0 ", " ")
    return "+<0.1 %/h"


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
    """`out after ~1h20 of work at this pace`, or `lasts until its reset at this pace`
    (work going on from `now`). Never "full by now": the figure shown is what is left."""
    if not pace.runs_out_before_reset(now):
        return "lasts until its reset at this pace"
    return f"out after {format_eta(pace.work_left)} of work at this pace"


def pace_line(
    bucket_id: str, window: Window, history: PaceHistory | None, now: float
) -> str | None:
    """The detail view's line for one window (`Pace: out after ~1h20 of work at this pace
    (+12 %/h)`), or `None` when there is no projection."""
    pace = project(history, window_key(bucket_id, window))
    if pace is None:
        return None
    return f"Pace: {describe(pace, now)} ({format_rate(pace.rate_per_hour)})"


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
    if state.status != "fresh" or state.snapshot is None:
        return [], MappingProxyType({}) if seen is None else seen
    book = Escalations(seen, now)
    agent = sanitize(state.agent)
    for bucket, window in running_windows(state, now):
        if 100 - window.used_percent <= warning_left:
            continue
        key = window_key(bucket.id, window)
        pace = project(history, key)
        if pace is None or not pace.runs_out_before_reset(now) or not book.new(key, 1):
            continue
        duration = format_duration(window.duration_mins)
        book.add("warning", f"{agent} {sanitize(bucket.display_name)} {duration} window: "
                            f"{describe(pace, now)} (resets in "
                            f"{format_until(window.resets_at, now)})", key)
    return book.result()
