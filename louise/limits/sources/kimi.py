"""kimi-code: `usage_update._meta.kimiCode.rateLimits` → an ACP quota RFD snapshot.

As proposed publicly for kimi-code's ACP adapter (MoonshotAI/kimi-code#2716: a
`usage_update` after each turn with `_meta.kimiCode`, its billing mode and the Coding
Plan's quota as the Kimi runtime reads it from its usage service). The field names of
`rateLimits` are not settled, so both shapes that service is seen to use are read:

- the service's own: `{"usage": {"limit": "100", "used": "26", "remaining": "74",
  "resetTime": "2026-08-11T15:53:05Z"}, "limits": [{"window": {"duration": 300,
  "timeUnit": "TIME_UNIT_MINUTE"}, "detail": {…same fields…}}]}`;
- a list of rows `{"name" | "title", "used", "limit", "remaining", "duration",
  "timeUnit", "resetTime" | "resetAt"}`.

Mapping (the RFD's own Kimi example): one pool `plan`; a meter per row, the summary row
`weekly`, a window row named by its length (`five_hour` for 300 minutes); `used`,
`limit` and `remaining` as amounts without a unit (the service reports none); `duration`
and `timeUnit` as the window; the reset time as `resetsAt`. A window or unit the service
did not report is left out, never guessed. `billingMode: "api_key"` has no quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from louise.limits.sources._values import Garbage, first, mapping, text

SOURCE: Final = "kimi rate-limit metadata"
META_KEY: Final = "kimiCode"
MAX_ROWS: Final = 16
_UNITS: Final = {"MINUTE": 1, "HOUR": 60, "DAY": 1440}


def _amount(value: object) -> dict[str, Any] | None:
    """A decimal string as the service sends it (`"100"`), or a whole number."""
    if isinstance(value, str) and value.strip().isdigit() and len(value) <= 20:
        return {"value": value.strip()}
    if type(value) is int and 0 <= value < 10**18:
        return {"value": str(value)}
    return None


def _window(raw: Mapping[str, Any]) -> tuple[str, int] | None:
    """(ISO 8601 duration, minutes) from `duration` and `timeUnit`."""
    duration = raw.get("duration")
    unit = raw.get("timeUnit")
    if type(duration) is not int or duration <= 0 or not isinstance(unit, str):
        return None
    found = _UNITS.get(unit.removeprefix("TIME_UNIT_"))
    if found is None:
        return None
    minutes = duration * found
    from louise.limits.quota import duration_text  # the RFD's module: with kimi's first figures

    return duration_text(minutes), minutes


def _meter(meter_id: str, label: str | None, detail: Mapping[str, Any],
           window: tuple[str, int] | None) -> dict[str, Any] | None:
    meter: dict[str, Any] = {"id": meter_id}
    name = text(first(detail, "name", "title"), 80) or label
    if name is not None:
        meter["label"] = name
    for key in ("used", "limit", "remaining"):
        amount = _amount(detail.get(key))
        if amount is not None:
            meter[key] = amount
    if "used" not in meter and "remaining" not in meter:
        return None  # the RFD: a meter carries a share, an amount or a status
    if window is not None:
        meter["window"] = window[0]
    reset = first(detail, "resetTime", "resetAt", "reset_time", "reset_at")
    from louise.limits.quota import parse_instant

    instant = parse_instant(reset)
    if instant is not None:
        meter["resetsAt"] = instant.text
    return meter


def _window_label(window: tuple[str, int] | None) -> str | None:
    if window is None:
        return None
    from louise.limits.text import format_duration

    return f"{format_duration(window[1])} limit"


def _rows(rate_limits: object) -> list[tuple[str, str | None, Mapping[str, Any],
                                             tuple[str, int] | None]]:
    rows: list[tuple[str, str | None, Mapping[str, Any], tuple[str, int] | None]] = []
    raw = mapping(rate_limits)
    if raw is not None:
        summary = mapping(raw.get("usage"))
        if summary is not None:
            rows.append(("weekly", "Weekly limit", summary, _window(summary)))
        limits = raw.get("limits")
        for item in limits[:MAX_ROWS] if isinstance(limits, list) else []:
            entry = mapping(item)
            detail = mapping(entry.get("detail")) if entry is not None else None
            window_raw = mapping(entry.get("window")) if entry is not None else None
            if detail is not None:
                window = _window(window_raw) if window_raw is not None else None
                rows.append(("", _window_label(window), detail, window))
    elif isinstance(rate_limits, list):
        for item in rate_limits[:MAX_ROWS]:
            entry = mapping(item)
            if entry is not None:
                window = _window(entry)
                rows.append(("", _window_label(window), entry, window))
    return rows


def translate(meta: object, now: float) -> dict[str, Any] | None:
    """The RFD snapshot (wire shape) of a `_meta.kimiCode` value observed at `now`, or
    None when it holds no quota (API-key billing). Raises `Garbage` when unusable."""
    from louise.limits.quota import format_instant

    raw = mapping(meta)
    if raw is None:
        raise Garbage(f"{META_KEY} is not an object")
    if raw.get("billingMode") == "api_key":
        return None
    rate_limits = raw.get("rateLimits")
    if rate_limits is None:
        return None
    rows = _rows(rate_limits)
    if not rows:
        raise Garbage(f"{META_KEY}.rateLimits holds no usage rows")
    meters: list[dict[str, Any]] = []
    seen: set[str] = set()
    for meter_id, label, detail, window in rows:
        if not meter_id:
            minutes = window[1] if window is not None else None
            meter_id = "five_hour" if minutes == 300 else (
                f"window_{minutes}m" if minutes is not None else "limit")
        while meter_id in seen:
            meter_id += "_"
        meter = _meter(meter_id, label, detail, window)
        if meter is not None:
            seen.add(meter_id)
            meters.append(meter)
    if not meters:
        raise Garbage(f"{META_KEY}.rateLimits rows carry no amounts")
    return {"updatedAt": format_instant(now),
            "pools": [{"id": "plan", "label": "Kimi Code", "meters": meters}]}
