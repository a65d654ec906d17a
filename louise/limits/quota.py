"""The ACP Quotas and Limits RFD's wire shapes, validated into values. Pure.

Follows the draft `docs/rfds/quotas-and-limits.mdx` of agentclientprotocol/
agent-client-protocol at commit 7d0724d78c3e928f0e5b9604ea3a236476cfe857 (initial draft
2026-10-06): a `QuotaSnapshot` (`pools` of `meters`, `updatedAt`) carried by the
`quota_update` session update and returned by `quota/read`, and the `quotaExceeded` error.

Validation, as the RFD and louise's rules ask:

- a snapshot that is not an object, whose `pools` is not a list or whose `updatedAt` is
  not an RFC 3339 time is refused whole: `QuotaError`, one line naming the field;
- an invalid pool or meter is skipped (the RFD: "Clients SHOULD skip individual invalid
  entries rather than reject the whole snapshot"), and `QuotaSnapshot.skipped` says which
  and why, one line each (bounded);
- omitted and `null` are the same ("not reported"); a bool is never a number; a numeric
  string is never a number, and a `Quantity` value is never a JSON number;
- unknown fields (`_meta` included) are ignored at every level;
- everything is bounded: pools, meters per pool, string lengths.

Nothing here invents a value: a field the agent did not send stays `None`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

RFD_COMMIT: Final = "7d0724d78c3e928f0e5b9604ea3a236476cfe857"
QUOTA_UPDATE: Final = "quota_update"
READ_METHOD: Final = "quota/read"
# The RFD's placeholder code until one is assigned in the ACP-reserved range.
QUOTA_EXCEEDED_CODE: Final = -32003

MAX_POOLS: Final = 32
MAX_METERS: Final = 16
MAX_ID: Final = 200
MAX_LABEL: Final = 200
MAX_WORD: Final = 64  # a state, a status, a unit
MAX_VALUE: Final = 40  # digits of a Quantity's decimal value
MAX_SKIPPED: Final = 8

POOL_STATES: Final = ("available", "exhausted", "not_enabled", "not_permitted", "not_eligible")
METER_STATUSES: Final = ("ok", "warning", "exceeded")

# Compiled (and cached by `re`) when an agent first sends a quota, not at every start.
_DECIMAL = r"-?[0-9]+(?:\.[0-9]+)?"
_RFC3339 = (
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})")
_DURATION = (
    r"P(?:([0-9]+)Y)?(?:([0-9]+)M)?(?:([0-9]+)W)?(?:([0-9]+)D)?"
    r"(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]+)?)S)?)?")
_YEAR_SECONDS: Final = 10_000 * 366 * 86_400


class QuotaError(ValueError):
    """A snapshot refused whole; `str(error)` is one line naming the field."""


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact amount: `value` is the decimal string as sent; `unit` as sent, or None."""

    value: str
    unit: str | None = None

    @property
    def is_money(self) -> bool:
        """An ISO 4217 currency code (three uppercase letters)."""
        unit = self.unit
        return unit is not None and len(unit) == 3 and unit.isascii() and unit.isupper() \
            and unit.isalpha()


@dataclass(frozen=True, slots=True)
class Duration:
    """An ISO 8601 duration as sent (`text`), and its length in whole minutes when it has
    a fixed one (`PT5H` 300, `P7D` 10080; `P1M` has none: months differ)."""

    text: str
    minutes: int | None
    seconds: float | None  # the fixed length, when there is one


@dataclass(frozen=True, slots=True)
class Instant:
    """An RFC 3339 time as sent, and its value (microseconds since the epoch, exact)."""

    text: str
    micros: int

    @property
    def seconds(self) -> int:
        """Whole Unix seconds (rounded down)."""
        return self.micros // 1_000_000


@dataclass(frozen=True, slots=True)
class Meter:
    id: str
    label: str | None = None
    used_percent: float | None = None
    used: Quantity | None = None
    limit: Quantity | None = None
    remaining: Quantity | None = None
    window: Duration | None = None
    resets_at: Instant | None = None
    status: str | None = None

    @property
    def display_name(self) -> str:
        return self.label if self.label is not None else self.id


@dataclass(frozen=True, slots=True)
class Pool:
    id: str
    meters: tuple[Meter, ...] = ()
    label: str | None = None
    state: str | None = None

    @property
    def display_name(self) -> str:
        return self.label if self.label is not None else self.id

    @property
    def usable(self) -> bool | None:
        """True only for `available`; False for any other state (unknown ones too: the
        RFD forbids inferring usability from them); None when the state is absent."""
        if self.state is None:
            return None
        return self.state == "available"


@dataclass(frozen=True, slots=True)
class QuotaSnapshot:
    """A validated snapshot. `skipped`: one line per invalid entry left out."""

    pools: tuple[Pool, ...]
    updated_at: Instant
    skipped: tuple[str, ...] = field(default=(), compare=False)

    def pool(self, pool_id: str) -> Pool | None:
        return next((pool for pool in self.pools if pool.id == pool_id), None)


@dataclass(frozen=True, slots=True)
class QuotaExceeded:
    """A request refused because a quota limit was reached (`quotaExceeded`). Every field
    is optional on the wire; `resets_at` is the agent's, else its `retryAfter` added to the
    time the error was received."""

    message: str
    pool_id: str | None = None
    meter_id: str | None = None
    resets_at: int | None = None
    retry_after: Duration | None = None


# --------------------------------------------------------------------------- scalars


def parse_instant(value: object) -> Instant | None:
    """An RFC 3339 time (`2026-10-06T18:00:00Z`, `…T18:00:00.123+02:00`), else None."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    match = re.fullmatch(_RFC3339, value)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7) or ""
    zone = match.group(8)
    try:
        moment = datetime(year, month, day, hour, minute, min(second, 59), tzinfo=UTC)
    except ValueError:
        return None
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 23 or minutes > 59:
            return None
        moment -= sign * timedelta(hours=hours, minutes=minutes)
    micros = int((fraction[1:] + "000000")[:6]) if fraction else 0
    # A leap second (:60) counts as the last second of its minute.
    whole = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(seconds=1)
    return Instant(value, whole * 1_000_000 + micros)


def format_instant(seconds: float) -> str:
    """RFC 3339 in UTC with milliseconds, as the RFD asks agents to send it."""
    millis = math.floor(seconds * 1000)
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def parse_duration(value: object) -> Duration | None:
    """An ISO 8601 duration (`PT5H`, `P7D`, `P1M`, `PT30S`), else None."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    match = re.fullmatch(_DURATION, value)
    if match is None or value in ("P", "PT") or value.endswith("T"):
        return None
    years, months, weeks, days, hours, minutes = (
        int(match.group(i)) if match.group(i) else 0 for i in range(1, 7))
    seconds = float(match.group(7)) if match.group(7) else 0.0
    if years or months:
        return Duration(value, None, None)  # calendar periods have no fixed length
    total = (((weeks * 7 + days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if total > _YEAR_SECONDS:
        return None
    whole = int(total // 60) if total % 60 == 0 else None
    return Duration(value, whole if whole else None, total)


def duration_text(minutes: int) -> str:
    """The ISO 8601 duration of a whole number of minutes (`PT5H`, `P7D`, `PT90M`)."""
    if minutes % 1440 == 0:
        return f"P{minutes // 1440}D"
    if minutes % 60 == 0:
        return f"PT{minutes // 60}H"
    return f"PT{minutes}M"


def _text(value: object, limit: int) -> str | None:
    """A non-empty string, cut to `limit` characters; None otherwise."""
    if not isinstance(value, str) or value == "":
        return None
    return value[:limit]


def _number(value: object) -> float | None:
    if type(value) is int:
        return float(value)
    if type(value) is float and math.isfinite(value):
        return value
    return None


def parse_quantity(value: object) -> Quantity | None:
    """`{"value": "12.40", "unit": "USD"}`; the value a decimal string, never a number."""
    if not isinstance(value, dict):
        return None
    amount = value.get("value")
    if not isinstance(amount, str) or len(amount) > MAX_VALUE or not re.fullmatch(_DECIMAL, amount):
        return None
    unit = value.get("unit")
    if unit is not None and not (isinstance(unit, str) and 0 < len(unit) <= MAX_WORD
                                 and unit.isprintable()):
        return None
    return Quantity(amount, unit)


# --------------------------------------------------------------------------- entries


class _Skip(ValueError):
    """One entry is invalid: `str(error)` says which field and why."""


def _optional(raw: dict[str, Any], key: str, parse: Any, what: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    parsed = parse(value)
    if parsed is None:
        raise _Skip(f"{key} is not {what}")
    return parsed


def _word(value: object) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_WORD else None


def _percent(value: object) -> float | None:
    number = _number(value)
    return number if number is not None and number >= 0 else None


def _parse_meter(raw: object) -> Meter:
    if not isinstance(raw, dict):
        raise _Skip("is not an object")
    meter_id = raw.get("id")
    if not isinstance(meter_id, str) or not 0 < len(meter_id) <= MAX_ID:
        raise _Skip("id is not a non-empty string")
    label = raw.get("label")
    if label is not None and not isinstance(label, str):
        raise _Skip("label is not a string")
    meter = Meter(
        id=meter_id,
        label=_text(label, MAX_LABEL),
        used_percent=_optional(raw, "usedPercent", _percent, "a number from 0"),
        used=_optional(raw, "used", parse_quantity, "a Quantity"),
        limit=_optional(raw, "limit", parse_quantity, "a Quantity"),
        remaining=_optional(raw, "remaining", parse_quantity, "a Quantity"),
        window=_optional(raw, "window", parse_duration, "an ISO 8601 duration"),
        resets_at=_optional(raw, "resetsAt", parse_instant, "an RFC 3339 time"),
        status=_optional(raw, "status", _word, "a status word"),
    )
    if meter.used_percent is None and meter.used is None and meter.remaining is None \
            and meter.status is None:
        raise _Skip("has none of usedPercent, used, remaining or status")
    return meter


def _parse_pool(raw: object, where: str, skipped: list[str]) -> Pool:
    if not isinstance(raw, dict):
        raise _Skip("is not an object")
    pool_id = raw.get("id")
    if not isinstance(pool_id, str) or not 0 < len(pool_id) <= MAX_ID:
        raise _Skip("id is not a non-empty string")
    label = raw.get("label")
    if label is not None and not isinstance(label, str):
        raise _Skip("label is not a string")
    state = _optional(raw, "state", _word, "a state word")
    raw_meters = raw.get("meters")
    if not isinstance(raw_meters, list):
        raise _Skip("meters is not a list")
    meters: list[Meter] = []
    seen: set[str] = set()
    for index, item in enumerate(raw_meters):
        if len(meters) >= MAX_METERS:
            _note(skipped, f"{where}.meters[{index}:]: more than {MAX_METERS} meters")
            break
        try:
            meter = _parse_meter(item)
            if meter.id in seen:
                raise _Skip(f"id {meter.id[:40]!r} is not unique in its pool")
        except _Skip as exc:
            _note(skipped, f"{where}.meters[{index}] {exc}")
            continue
        seen.add(meter.id)
        meters.append(meter)
    return Pool(pool_id, tuple(meters), _text(label, MAX_LABEL), state)


def _note(skipped: list[str], line: str) -> None:
    if len(skipped) < MAX_SKIPPED:
        skipped.append(line)


def parse_quota_snapshot(payload: object) -> QuotaSnapshot:
    """A `QuotaSnapshot` from a `quota_update` (its `sessionUpdate` ignored) or a
    `quota/read` result. Raises `QuotaError` when the snapshot itself is malformed."""
    if not isinstance(payload, dict):
        raise QuotaError("quota snapshot is not an object")
    raw_pools = payload.get("pools")
    if not isinstance(raw_pools, list):
        raise QuotaError("quota snapshot: pools is not a list")
    updated = parse_instant(payload.get("updatedAt"))
    if updated is None:
        raise QuotaError("quota snapshot: updatedAt is not an RFC 3339 time")
    pools: list[Pool] = []
    seen: set[str] = set()
    skipped: list[str] = []
    for index, item in enumerate(raw_pools):
        if len(pools) >= MAX_POOLS:
            _note(skipped, f"pools[{index}:]: more than {MAX_POOLS} pools")
            break
        where = f"pools[{index}]"
        try:
            pool = _parse_pool(item, where, skipped)
            if pool.id in seen:
                raise _Skip(f"id {pool.id[:40]!r} is not unique")
        except _Skip as exc:
            _note(skipped, f"{where} {exc}")
            continue
        seen.add(pool.id)
        pools.append(pool)
    return QuotaSnapshot(tuple(pools), updated, tuple(skipped))


def parse_quota_exceeded(code: object, message: object, data: object,
                         now: float) -> QuotaExceeded | None:
    """A JSON-RPC error that is `quotaExceeded`, else None. Each data field is read when it
    has the RFD's type and left out otherwise (the error still counts)."""
    if type(code) is not int or code != QUOTA_EXCEEDED_CODE:
        return None
    raw = data if isinstance(data, dict) else {}
    resets = parse_instant(raw.get("resetsAt"))
    retry = parse_duration(raw.get("retryAfter"))
    resets_at = resets.seconds if resets is not None else None
    if resets_at is None and retry is not None and retry.seconds is not None:
        resets_at = math.ceil(now + retry.seconds)
    return QuotaExceeded(
        _text(message, 300) or "quota exceeded",
        _text(raw.get("poolId"), MAX_ID), _text(raw.get("meterId"), MAX_ID),
        resets_at, retry)


# --------------------------------------------------------------------------- wire


def _quantity_to_wire(quantity: Quantity) -> dict[str, Any]:
    wire: dict[str, Any] = {"value": quantity.value}
    if quantity.unit is not None:
        wire["unit"] = quantity.unit
    return wire


def meter_to_wire(meter: Meter) -> dict[str, Any]:
    wire: dict[str, Any] = {"id": meter.id}
    if meter.label is not None:
        wire["label"] = meter.label
    if meter.used_percent is not None:
        wire["usedPercent"] = meter.used_percent
    for key, quantity in (("used", meter.used), ("limit", meter.limit),
                          ("remaining", meter.remaining)):
        if quantity is not None:
            wire[key] = _quantity_to_wire(quantity)
    if meter.window is not None:
        wire["window"] = meter.window.text
    if meter.resets_at is not None:
        wire["resetsAt"] = meter.resets_at.text
    if meter.status is not None:
        wire["status"] = meter.status
    return wire


def quota_to_wire(snapshot: QuotaSnapshot) -> dict[str, Any]:
    """The RFD's JSON shape; `parse_quota_snapshot(quota_to_wire(s)) == s`."""
    pools = []
    for pool in snapshot.pools:
        wire: dict[str, Any] = {"id": pool.id}
        if pool.label is not None:
            wire["label"] = pool.label
        if pool.state is not None:
            wire["state"] = pool.state
        wire["meters"] = [meter_to_wire(meter) for meter in pool.meters]
        pools.append(wire)
    return {"updatedAt": snapshot.updated_at.text, "pools": pools}


def quota_exceeded_data(refusal: QuotaExceeded) -> dict[str, Any]:
    """The `quotaExceeded` error's `data` (only what is known)."""
    data: dict[str, Any] = {}
    if refusal.pool_id is not None:
        data["poolId"] = refusal.pool_id
    if refusal.meter_id is not None:
        data["meterId"] = refusal.meter_id
    if refusal.resets_at is not None:
        data["resetsAt"] = format_instant(refusal.resets_at)
    if refusal.retry_after is not None:
        data["retryAfter"] = refusal.retry_after.text
    return data
