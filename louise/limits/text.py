"""The words and numbers a limits figure is shown with: the label's shape and level,
percentages, durations, times until a reset and since an update, UTC (and local) times,
and `sanitize` for every string that comes from an agent (control characters become
spaces, so a payload can never break a statusline or a buffer line). Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from datetime import tzinfo
    from typing import Final, Literal

    Level = Literal["ok", "active", "warning", "error", "neutral"]

_MINUTE: Final = 60
_HOUR: Final = 3600
_DAY: Final = 86400

# C0 and C1 controls (category Cc) plus the Unicode line/paragraph separators, which split
# lines in Neovim just like a newline does.
_CONTROL_TO_SPACE: Final[dict[int, str]] = {
    **{code: " " for code in range(0x20)},
    **{code: " " for code in range(0x7F, 0xA0)},
    0x2028: " ",
    0x2029: " ",
}


@dataclass(frozen=True, slots=True)
class Label:
    """The statusline segment: its text and a level the UI maps to a highlight."""

    text: str
    level: Level


# --------------------------------------------------------------------------- formatting


def sanitize(text: str) -> str:
    """`text` with control characters (and line separators) replaced by spaces."""
    return text.translate(_CONTROL_TO_SPACE)


def format_remaining(remaining: float) -> str:
    """`<1%` for a value in (0, 1), otherwise a whole percent (`%.0f`: ties to even)."""
    if 0 < remaining < 1:
        return "<1%"
    return f"{max(0.0, remaining):.0f}%"


def format_percent(value: float) -> str:
    """A percentage for the detail view: `%g` precision, `<1%` for a value in (0, 1)."""
    if 0 < value < 1:
        return "<1%"
    return f"{max(0.0, value):g}%"


def format_duration(minutes: int) -> str:
    """In the largest unit that divides it exactly: 1440 → `1d`, 1500 → `25h`, 90 → `90m`."""
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    if minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m"


def format_until(timestamp: int, now: float) -> str:
    """Time until `timestamp`, rounded up: `Nm` under an hour (at least `1m`), `Nh` under a
    day, else `Nd`. A time already passed gives `1m` (the caller marks such data stale)."""
    # Integer arithmetic first: a timestamp may be any positive integer, far beyond what a
    # float can subtract exactly (or at all).
    whole_now = math.floor(now)
    fraction = now - whole_now
    delta = timestamp - whole_now
    if delta > 2 * _DAY:
        # ceil((delta - fraction) / DAY) == ceil(delta / DAY) for an integer delta and
        # 0 <= fraction < 1, and the result is in days whatever the fraction.
        return f"{-(-delta // _DAY)}d"
    seconds = max(0.0, delta - fraction)
    if seconds < _HOUR:
        return f"{max(1, math.ceil(seconds / _MINUTE))}m"
    if seconds < _DAY:
        return f"{math.ceil(seconds / _HOUR)}h"
    return f"{math.ceil(seconds / _DAY)}d"


def format_age(updated_at: float | None, now: float) -> str:
    """How long ago, rounded down: `just now` under a minute, then `Nm ago`, `Nh ago`,
    `Nd ago`; `never` without a time."""
    if updated_at is None:
        return "never"
    age = now - updated_at
    if age < _MINUTE:
        return "just now"
    if age < _HOUR:
        return f"{int(age // _MINUTE)}m ago"
    if age < _DAY:
        return f"{int(age // _HOUR)}h ago"
    return f"{int(age // _DAY)}d ago"


def format_utc(timestamp: float, *, seconds: bool = False, local: tzinfo | None = None) -> str:
    """`YYYY-MM-DD HH:MM[:SS] UTC`, followed by the time in `local` with its zone when that
    is not UTC (`2100-01-01 00:00 UTC · 01:00 CET`, the date too when it differs); a time
    outside what a calendar date can show is printed as raw Unix seconds instead."""
    from datetime import UTC, datetime, timedelta  # here: a label needs no calendar

    try:
        moment = datetime.fromtimestamp(timestamp, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return f"Unix time {timestamp}"
    clock = "%H:%M:%S" if seconds else "%H:%M"
    text = moment.strftime(f"%Y-%m-%d {clock} UTC")
    if local is None:
        return text
    try:
        there = moment.astimezone(local)
    except (OverflowError, ValueError, OSError):
        return text
    if there.utcoffset() == timedelta(0):
        return text
    zone = there.tzname() or there.strftime("%z")
    shown = there.strftime(clock if there.date() == moment.date() else f"%Y-%m-%d {clock}")
    return f"{text} · {shown} {zone}"


def format_number(value: float) -> str:
    """A balance as people write numbers: no exponent (`1000000`, `0.0001`, `24.5`)."""
    if isinstance(value, int):
        return str(value)  # ints print exactly, however large
    if value.is_integer():
        return str(int(value))
    from decimal import Decimal

    return format(Decimal(repr(value)), "f")


def reset_text(timestamp: int, now: float, local: tzinfo | None = None) -> str:
    if timestamp <= now:
        return f"reset time passed ({format_utc(timestamp, local=local)})"
    return f"in {format_until(timestamp, now)} ({format_utc(timestamp, local=local)})"
