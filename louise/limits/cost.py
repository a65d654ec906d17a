"""The quota cost of a turn: what the windows' used share rose by between the figures
before the turn and those after it, attributed to the turn that ran between them. Pure.

Only what the agent reported counts: a window must be in both snapshots, in the same
cycle (same reset time); a turn during which no new figures came has no cost to tell (not
zero: unknown). When other sessions of the same account ran at the same time, the figure
is shared, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from louise.limits.snapshot import Snapshot
from louise.limits.text import format_duration, sanitize

WindowKey = tuple[str, int, int]  # (bucket id, minutes, resets_at)


@dataclass(frozen=True, slots=True)
class WindowCost:
    """What one turn used of one limits window."""

    window: WindowKey
    label: str  # the bucket's name for a person
    percent: float  # percentage points of the window this turn used


@dataclass(frozen=True, slots=True)
class TurnCost:
    """One turn's cost per window, and how many other sessions' turns ran meanwhile."""

    windows: tuple[WindowCost, ...]
    shared_with: int = 0
    default_bucket: str | None = field(default=None, compare=False)

    def text(self) -> str:
        """`4% of the 5h window, 1% of the 7d window` (`<1%` for under one point), then
        `(shared: 1 other session ran meanwhile)` when the figure is not this turn's
        alone. The bucket is named when it is not the account's default one."""
        parts = []
        for cost in self.windows:
            amount = "<1%" if 0 < cost.percent < 1 else f"{cost.percent:.0f}%"
            name = "" if cost.window[0] == self.default_bucket else f"{cost.label} "
            parts.append(f"{amount} of the {name}{format_duration(cost.window[1])} window")
        text = ", ".join(parts)
        if self.shared_with:
            others = "session" if self.shared_with == 1 else "sessions"
            text += f" (shared: {self.shared_with} other {others} ran meanwhile)"
        return text

    def to_record(self) -> dict[str, Any]:
        return {"windows": [{"bucket": c.window[0], "minutes": c.window[1],
                             "resetsAt": c.window[2], "label": c.label,
                             "percent": round(c.percent, 3)} for c in self.windows],
                "sharedWith": self.shared_with, "defaultBucket": self.default_bucket}

    @classmethod
    def from_record(cls, record: object) -> TurnCost | None:
        """Back from `to_record` (a transcript's `turn_end`); None for anything else."""
        if not isinstance(record, Mapping) or not isinstance(record.get("windows"), list):
            return None
        windows = []
        for item in record["windows"][:16]:
            if not isinstance(item, Mapping):
                continue
            bucket, minutes, resets = item.get("bucket"), item.get("minutes"), \
                item.get("resetsAt")
            label, percent = item.get("label"), item.get("percent")
            if isinstance(bucket, str) and type(minutes) is int and minutes > 0 \
                    and type(resets) is int and isinstance(label, str) \
                    and isinstance(percent, (int, float)) and not isinstance(percent, bool):
                windows.append(WindowCost((bucket[:200], minutes, resets), label[:200],
                                          float(percent)))
        shared = record.get("sharedWith")
        default = record.get("defaultBucket")
        if not windows:
            return None
        return cls(tuple(windows), shared if type(shared) is int and shared >= 0 else 0,
                   default if isinstance(default, str) else None)


def turn_cost(before: Snapshot | None, after: Snapshot | None,
              shared_with: int = 0) -> TurnCost | None:
    """The cost of the turn between `before` and `after` (the Agent's figures when the
    turn began and when it ended), or None when it cannot be told: no figures on either
    side, or no new figures during the turn (`after is before`)."""
    if before is None or after is None or after is before:
        return None
    old: dict[WindowKey, float] = {
        (bucket.id, window.duration_mins, window.resets_at): window.used_percent
        for bucket in before.buckets for window in bucket.windows}
    costs = []
    for bucket in after.buckets:
        for window in sorted(bucket.windows, key=lambda w: w.duration_mins):
            key = (bucket.id, window.duration_mins, window.resets_at)
            if key in old:
                costs.append(WindowCost(key, sanitize(bucket.display_name),
                                        round(max(0.0, window.used_percent - old[key]), 3)))
    if not costs:
        return None
    return TurnCost(tuple(costs), shared_with, after.default_bucket_id)


def summed(costs: Sequence[TurnCost]) -> dict[tuple[str, int], tuple[str, float, int]]:
    """Per (bucket, minutes): (label, total points, turns), over the given turns (each
    window cycle's figures add up; a new cycle starts again from zero on its own key)."""
    totals: dict[tuple[str, int], tuple[str, float, int]] = {}
    for cost in costs:
        for window in cost.windows:
            key = (window.window[0], window.window[1])
            label, total, turns = totals.get(key, (window.label, 0.0, 0))
            totals[key] = (label, total + window.percent, turns + 1)
    return totals
