"""Reading loosely typed values out of an agent's payload, the way JSON produces them.

Every helper returns `None` for anything it cannot read (wrong type, bool for a number,
NaN, out of range): a translator decides what a missing value means, never a coercion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# Unix seconds beyond year 9999 are damage, not a reset time.
MAX_TIMESTAMP = 253_402_300_799


class Garbage(ValueError):
    """The payload is present but unusable; `str(error)` says why (for a log line)."""


_KINDS = {dict: "an object", list: "a list", str: "a string", bool: "a bool", int: "a number",
          float: "a number", type(None): "null"}


def kind(value: object) -> str:
    """What a JSON value is, for a log line: its type, or a string's first characters as
    `repr` shows them (control characters escaped: an agent chose them)."""
    if isinstance(value, str):
        return f"{value[:40]!r}" if len(value) <= 40 else f"{value[:40]!r}…"
    return _KINDS.get(type(value), type(value).__name__)


def mapping(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def number(value: object) -> float | None:
    """A finite JSON number (never a bool, never a numeric string)."""
    if type(value) is int:
        return float(value)
    if type(value) is float and math.isfinite(value):
        return value
    return None


def timestamp(value: object) -> int | None:
    """Positive whole Unix seconds (`1.7e9` and `1.7e9 + 0.4` both read, rounded down)."""
    seconds = number(value)
    if seconds is None or not 0 < seconds <= MAX_TIMESTAMP:
        return None
    return int(seconds)


def positive_int(value: object) -> int | None:
    count = number(value)
    if count is None or count <= 0 or not count.is_integer():
        return None
    return int(count)


def text(value: object, limit: int = 200) -> str | None:
    """A non-empty string, cut to `limit` characters (an agent controls its length)."""
    if not isinstance(value, str) or value == "":
        return None
    return value[:limit]


def percent(value: object) -> float | None:
    """A used percentage, clamped to 0–100 (a provider may report slightly over 100)."""
    used = number(value)
    if used is None or used < 0:
        return None
    return min(used, 100.0)


def first(source: Mapping[str, Any], *keys: str) -> object:
    """The first present, non-null value among `keys` (camelCase and snake_case spellings)."""
    for key in keys:
        value = source.get(key)
        if value is not None:
            return value
    return None
