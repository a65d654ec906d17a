"""The governor's decisions, pure: when a refused turn may be sent again, whether a turn
about to be sent is likely to hit a limit, and whether a workspace's budget lets it start.

- `Block`: a turn refused for quota (`quotaExceeded`, claude's `rate_limit`, a 429, vibe's
  -31001), and until when, when known: the agent's own reset time, else the reset of the
  reached bucket's full window. No reset time is ever guessed: an unknown one stays None.
- `risk`: before sending, a window at or over `near_percent` used, or one the pace says
  runs out before its reset, gives one line saying so (the prompt asks for a second send).
- `budgets`: a workspace's share of a window (`[limits.budgets] "~/w" = { "5h" = 50 }`),
  against what its turns used this cycle (`Spent`), kept across louise processes in the
  limits cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from louise.limits.text import format_duration, format_remaining, format_until, sanitize

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Final

    from louise.limits.pace import PaceHistory
    from louise.limits.state import LimitsState

NEAR_PERCENT: Final = 95.0
# Work left at this pace under which the next turn is likely to use it up.
TURN_WORK_SECONDS: Final = 600.0


@dataclass(frozen=True, slots=True)
class Block:
    """A turn refused because a limit was reached; `resets_at` (Unix seconds) or None."""

    reason: str
    resets_at: int | None = None


def block_reset(state: LimitsState | None, now: float) -> int | None:
    """When the limit that refused a turn resets, from what the agent said: a
    `quotaExceeded` refusal's time, else the earliest reset ahead among the full
    (≥ 100 % used) windows of a reached bucket; None when the agent never said."""
    if state is None:
        return None
    refusal = state.refused_until(now)
    if refusal is not None:
        return refusal.resets_at
    snapshot = state.snapshot
    if snapshot is None:
        return None
    resets = [window.resets_at for bucket in snapshot.buckets
              if bucket.reached_type is not None
              for window in bucket.windows
              if window.used_percent >= 100 and window.resets_at > now]
    return min(resets) if resets else None


def risk(state: LimitsState | None, pace: PaceHistory | None, now: float, *,
         near_percent: float = NEAR_PERCENT, active: float | None = None) -> str | None:
    """Why the next turn is likely to hit a limit, or None: a reached bucket, a window at
    or over `near_percent` % used, or one with less than `TURN_WORK_SECONDS` of work
    left (before its reset) at the pace measured over active time (`active`: the Agent's
    active clock now, see `louise.limits.pace`). Only current (`fresh`) figures count."""
    if state is None or state.status != "fresh" or state.snapshot is None:
        return None
    from louise.limits.alerts import window_key
    from louise.limits.pace import project

    refusal = state.refused_until(now)
    if refusal is not None:
        until = f"; resets in {format_until(refusal.resets_at, now)}" \
            if refusal.resets_at is not None else ""
        return f"{sanitize(state.agent)}: limit reached{until}"
    for bucket in state.snapshot.buckets:
        name = sanitize(bucket.display_name)
        for window in sorted(bucket.windows, key=lambda w: w.duration_mins):
            if window.resets_at <= now:
                continue
            duration = format_duration(window.duration_mins)
            until = format_until(window.resets_at, now)
            if window.used_percent >= near_percent:
                left = format_remaining(100 - window.used_percent)
                return f"{name} {duration} window has {left} left (resets in {until})"
            pace_now = project(pace, window_key(bucket.id, window), now=active)
            if pace_now is not None and pace_now.runs_out_before_reset(now) \
                    and pace_now.work_left <= TURN_WORK_SECONDS:
                from louise.limits.pace import format_eta

                return (f"{name} {duration} window runs out after {format_eta(pace_now.work_left)}"
                        f" of work at this pace (resets in {until})")
    return None


# --------------------------------------------------------------------------- budgets

WindowKey = tuple[str, int, int]
"""(bucket id, window minutes, resets_at): one cycle of one window."""


@dataclass(frozen=True, slots=True)
class Spent:
    """What one workspace's turns used of one window cycle (percentage points) and in how
    many turns."""

    workspace: str
    window: WindowKey
    percent: float
    turns: int


def parse_budget_key(key: str) -> int | None:
    """A window named as louise names it (`5h`, `7d`, `90m`) in minutes, else None."""
    units = {"m": 1, "h": 60, "d": 1440}
    number, unit = key[:-1], key[-1:]
    if unit not in units or not number.isdigit() or int(number) <= 0:
        return None
    return int(number) * units[unit]


def budget_refusal(state: LimitsState | None, workspace: str,
                   budgets: Mapping[str, Mapping[int, float]], spent: Sequence[Spent],
                   now: float) -> str | None:
    """Why a turn of `workspace` may not start, or None. `budgets`: workspace (as
    configured, expanded) → window minutes → its share in percent. A turn is refused when
    what the workspace used of the current cycle, plus what its turns took on average,
    would pass its share."""
    if state is None or state.snapshot is None:
        return None
    shares = budgets.get(workspace)
    if not shares:
        return None
    for bucket in state.snapshot.buckets:
        for window in bucket.windows:
            share = shares.get(window.duration_mins)
            if share is None or window.resets_at <= now:
                continue
            key = (bucket.id, window.duration_mins, window.resets_at)
            used = [item for item in spent if item.workspace == workspace and item.window == key]
            total = sum(item.percent for item in used)
            turns = sum(item.turns for item in used)
            expected = total / turns if turns else 0.0
            if total + expected > share or total >= share:
                duration = format_duration(window.duration_mins)
                return (f"the budget of {sanitize(workspace)} is {share:g}% of the {duration} "
                        f"window and its turns used {total:.0f}% of it this cycle "
                        f"(about {expected:.0f}% a turn); it resets in "
                        f"{format_until(window.resets_at, now)}")
    return None
