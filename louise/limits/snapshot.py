"""Strict, whole-payload validation of an account-limits snapshot, and its typed value.

`parse_snapshot` follows docs/account-limits-v1.md to the letter: checks run in a fixed
order and the first failure raises `LimitsError` with one stable message. It is hand-written
(no pydantic) because every read and every pushed update goes through it.

JSON conventions applied here:
- `None` (JSON null) is the same as an absent optional field.
- A bool is never a number; numeric strings are never coerced.
- An integer is a number with no fractional part (`300` and `300.0`; not `1.5`).
- Numbers must be finite (NaN/Infinity are not JSON and are rejected wherever a number is).
- Objects are `dict`s and arrays are `list`s, as `json.loads` produces them.
- Unknown fields are ignored at every level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from louise.limits.errors import (
    MSG_BUCKET_ID,
    MSG_BUCKET_METADATA,
    MSG_BUCKET_UNIQUE_WINDOWS,
    MSG_DEFAULT_BUCKET_MALFORMED,
    MSG_DEFAULT_BUCKET_MISSING,
    MSG_RESET_CREDITS,
    MSG_SNAPSHOT_BUCKETS,
    MSG_SNAPSHOT_UNLIMITED,
    MSG_WINDOW,
    LimitsError,
)

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Any

_INF = math.inf


@dataclass(frozen=True, slots=True)
class Window:
    """One quota window. `used_percent` is consumed capacity (0–100), not remaining."""

    used_percent: float
    duration_mins: int
    resets_at: int


@dataclass(frozen=True, slots=True)
class Credits:
    """Workspace credits of a bucket; both fields optional (an empty object is valid)."""

    balance: float | None = None
    unlimited: bool | None = None


@dataclass(frozen=True, slots=True)
class Bucket:
    """One quota bucket: its windows, and what the agent says of it."""

    id: str
    windows: tuple[Window, ...] = ()
    label: str | None = None
    reached_type: str | None = None
    plan_type: str | None = None
    credits: Credits | None = None

    @property
    def display_name(self) -> str:
        """The human-facing name: the label, else the id (not sanitized)."""
        return self.label if self.label is not None else self.id


@dataclass(frozen=True, slots=True)
class ResetCredit:
    """One credit that resets a window early; every field optional."""

    id: str | None = None
    expires_at: int | None = None
    title: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class ResetCredits:
    """`available_count` is authoritative; `credits` is `None` when the wire omitted it."""

    available_count: int
    credits: tuple[ResetCredit, ...] | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A complete, validated snapshot (each accepted one replaces the previous entirely)."""

    buckets: tuple[Bucket, ...]
    default_bucket_id: str | None = None
    unlimited: bool = False
    reset_credits: ResetCredits | None = None

    @property
    def default_bucket(self) -> Bucket | None:
        for bucket in self.buckets:
            if bucket.id == self.default_bucket_id:
                return bucket
        return None

    def bucket(self, bucket_id: str) -> Bucket | None:
        for bucket in self.buckets:
            if bucket.id == bucket_id:
                return bucket
        return None


# --------------------------------------------------------------------------- validation
# Exact `type(...) is` checks keep bools out of numbers and are the fastest test in CPython.


def _optional_text(value: object) -> bool:
    """True when `value` is absent (None) or a non-empty string."""
    return value is None or (isinstance(value, str) and value != "")


def _positive_int(value: object) -> int | None:
    if type(value) is int:
        return value if value > 0 else None
    if type(value) is float and value > 0 and value.is_integer():
        return int(value)
    return None


def _non_negative_int(value: object) -> int | None:
    if type(value) is int:
        return value if value >= 0 else None
    if type(value) is float and value >= 0 and value.is_integer():
        return int(value)
    return None


def _parse_window(raw: object) -> Window:
    if not isinstance(raw, dict):
        raise LimitsError(MSG_WINDOW)
    used = raw.get("usedPercent")
    # NaN fails both comparisons, so it is rejected with everything out of range.
    if not ((type(used) is int or type(used) is float) and 0 <= used <= 100):
        raise LimitsError(MSG_WINDOW)
    duration = _positive_int(raw.get("windowDurationMins"))
    if duration is None:
        raise LimitsError(MSG_WINDOW)
    resets_at = _positive_int(raw.get("resetsAt"))
    if resets_at is None:
        raise LimitsError(MSG_WINDOW)
    return Window(used, duration, resets_at)


def _parse_credits(raw: object) -> Credits:
    if not isinstance(raw, dict):
        raise LimitsError(MSG_BUCKET_METADATA)
    balance = raw.get("balance")
    if balance is not None:
        if not (
            (type(balance) is int and balance >= 0)
            or (type(balance) is float and 0 <= balance < _INF)
        ):
            raise LimitsError(MSG_BUCKET_METADATA)
    unlimited = raw.get("unlimited")
    if unlimited is not None and unlimited is not True and unlimited is not False:
        raise LimitsError(MSG_BUCKET_METADATA)
    return Credits(balance, unlimited)


def _parse_bucket(raw: object, seen_ids: set[str]) -> Bucket:
    if not isinstance(raw, dict):
        raise LimitsError(MSG_BUCKET_ID)
    bucket_id = raw.get("id")
    if not isinstance(bucket_id, str) or bucket_id == "":
        raise LimitsError(MSG_BUCKET_ID)
    raw_windows = raw.get("windows")
    if bucket_id in seen_ids or not isinstance(raw_windows, list):
        raise LimitsError(MSG_BUCKET_UNIQUE_WINDOWS)
    seen_ids.add(bucket_id)
    label = raw.get("label")
    reached_type = raw.get("reachedType")
    plan_type = raw.get("planType")
    if not (_optional_text(label) and _optional_text(reached_type) and _optional_text(plan_type)):
        raise LimitsError(MSG_BUCKET_METADATA)
    raw_credits = raw.get("credits")
    credits = None if raw_credits is None else _parse_credits(raw_credits)
    windows = tuple([_parse_window(window) for window in raw_windows])
    return Bucket(bucket_id, windows, label, reached_type, plan_type, credits)


def _parse_reset_credit(raw: object) -> ResetCredit:
    if not isinstance(raw, dict):
        raise LimitsError(MSG_RESET_CREDITS)
    credit_id = raw.get("id")
    title = raw.get("title")
    description = raw.get("description")
    if not (_optional_text(credit_id) and _optional_text(title) and _optional_text(description)):
        raise LimitsError(MSG_RESET_CREDITS)
    raw_expires = raw.get("expiresAt")
    expires_at = None
    if raw_expires is not None:
        expires_at = _positive_int(raw_expires)
        if expires_at is None:
            raise LimitsError(MSG_RESET_CREDITS)
    return ResetCredit(credit_id, expires_at, title, description)


def _parse_reset_credits(raw: object) -> ResetCredits:
    if not isinstance(raw, dict):
        raise LimitsError(MSG_RESET_CREDITS)
    count = _non_negative_int(raw.get("availableCount"))
    if count is None:
        raise LimitsError(MSG_RESET_CREDITS)
    raw_credits = raw.get("credits")
    if raw_credits is None:
        return ResetCredits(count, None)
    if not isinstance(raw_credits, list):
        raise LimitsError(MSG_RESET_CREDITS)
    return ResetCredits(count, tuple([_parse_reset_credit(item) for item in raw_credits]))


def parse_snapshot(payload: object) -> Snapshot:
    """Validate a complete wire snapshot (camelCase JSON value) into a `Snapshot`.

    Raises `LimitsError` (and nothing else) on the first failing check, in the contract's
    order: buckets array, `unlimited`, each bucket in turn (id, uniqueness/windows, metadata,
    windows), default bucket (malformed, then missing), reset credits.
    """
    if not isinstance(payload, dict):
        raise LimitsError(MSG_SNAPSHOT_BUCKETS)
    raw_buckets = payload.get("buckets")
    if not isinstance(raw_buckets, list):
        raise LimitsError(MSG_SNAPSHOT_BUCKETS)
    unlimited = payload.get("unlimited")
    if unlimited is None:
        unlimited = False
    elif unlimited is not True and unlimited is not False:
        raise LimitsError(MSG_SNAPSHOT_UNLIMITED)
    seen_ids: set[str] = set()
    buckets = tuple([_parse_bucket(raw, seen_ids) for raw in raw_buckets])
    default_id = payload.get("defaultBucketId")
    if default_id is not None:
        # An empty string is never a bucket id, so membership covers "non-empty" too.
        if not isinstance(default_id, str) or default_id not in seen_ids:
            raise LimitsError(MSG_DEFAULT_BUCKET_MALFORMED)
    elif buckets:
        raise LimitsError(MSG_DEFAULT_BUCKET_MISSING)
    raw_reset = payload.get("resetCredits")
    reset_credits = None if raw_reset is None else _parse_reset_credits(raw_reset)
    return Snapshot(buckets, default_id, unlimited, reset_credits)


# --------------------------------------------------------------------------- serialization


def _window_to_wire(window: Window) -> dict[str, Any]:
    return {
        "usedPercent": window.used_percent,
        "windowDurationMins": window.duration_mins,
        "resetsAt": window.resets_at,
    }


def _present(**fields: Any) -> dict[str, Any]:
    """The fields that are set (the wire leaves out the others)."""
    return {name: value for name, value in fields.items() if value is not None}


def _bucket_to_wire(bucket: Bucket) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "id": bucket.id,
        "windows": [_window_to_wire(window) for window in bucket.windows],
        **_present(label=bucket.label, reachedType=bucket.reached_type,
                   planType=bucket.plan_type),
    }
    if bucket.credits is not None:
        wire["credits"] = _present(balance=bucket.credits.balance,
                                   unlimited=bucket.credits.unlimited)
    return wire


def _reset_credit_to_wire(credit: ResetCredit) -> dict[str, Any]:
    return _present(id=credit.id, expiresAt=credit.expires_at, title=credit.title,
                    description=credit.description)


def snapshot_to_wire(snapshot: Snapshot) -> dict[str, Any]:
    """The camelCase JSON object `parse_snapshot` accepts; `parse_snapshot(wire) == snapshot`."""
    wire: dict[str, Any] = {
        "buckets": [_bucket_to_wire(bucket) for bucket in snapshot.buckets],
        "unlimited": snapshot.unlimited,
        **_present(defaultBucketId=snapshot.default_bucket_id),
    }
    if snapshot.reset_credits is not None:
        reset: dict[str, Any] = {"availableCount": snapshot.reset_credits.available_count}
        if snapshot.reset_credits.credits is not None:
            reset["credits"] = [_reset_credit_to_wire(c) for c in snapshot.reset_credits.credits]
        wire["resetCredits"] = reset
    return wire
