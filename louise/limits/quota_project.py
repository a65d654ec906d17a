"""Between the RFD's snapshots and louise's account-limits v1 model. Pure.

- `project(quota)`: the v1 `Snapshot` louise's labels, alerts, pace and v1 clients work
  on. A pool is a bucket (the first pool is the default: the agent controls the order);
  a meter is a window when it has a share used, a fixed window length and a reset time.
  The share is `usedPercent` (over 100 counts as 100), else `used` over `limit` when both
  are plain amounts of the same unit (v1 has no amounts). A meter without one of the
  three (a balance, a monthly period, a spend cap without a reset) is not a v1 window;
  the RFD view shows it. A pool `exhausted`, or a meter `exceeded`, marks the bucket
  reached (`reachedType` is the word).
- `from_v1(snapshot, updated_at)`: the RFD snapshot a v1 one stands for (`louise proxy`
  answers RFD clients with what it translated): a bucket is a pool, a window a meter with
  `usedPercent`, `window` and `resetsAt`; a reached bucket is `exhausted` and its fullest
  window `exceeded`; credits are a `credits` meter (the balance `remaining`). A plan name
  has no place in the RFD and is left out; so is a status the agent did not send.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Final

from louise.limits.quota import (
    Duration,
    Meter,
    Pool,
    Quantity,
    QuotaSnapshot,
    duration_text,
    format_instant,
    parse_instant,
)
from louise.limits.snapshot import Bucket, Snapshot, Window

# Meter ids and labels for the windows a v1 snapshot names by length only.
_WINDOW_NAMES: Final[dict[int, tuple[str, str]]] = {
    300: ("five_hour", "5-hour limit"),
    1440: ("daily", "Daily limit"),
    10080: ("seven_day", "Weekly limit"),
}
REACHED_WORDS: Final = ("exhausted", "exceeded")


def share_used(meter: Meter) -> float | None:
    """The share of the meter used, in percent: `usedPercent`, else `used` over `limit`
    (same unit, limit above zero); None when the agent sent neither."""
    if meter.used_percent is not None:
        return meter.used_percent
    used, limit = meter.used, meter.limit
    if used is None or limit is None or used.unit != limit.unit:
        return None
    try:
        total = Decimal(limit.value)
        if total <= 0:
            return None
        return float(Decimal(used.value) / total * 100)
    except (InvalidOperation, ArithmeticError):
        return None


def reached(pool: Pool) -> str | None:
    """Why the pool counts as reached: its state `exhausted`, or a meter `exceeded`."""
    if pool.state == "exhausted":
        return "exhausted"
    if any(meter.status == "exceeded" for meter in pool.meters):
        return "exceeded"
    return None


def project(quota: QuotaSnapshot) -> Snapshot:
    """The v1 snapshot of an RFD one (see the module docstring)."""
    buckets = []
    for pool in quota.pools:
        windows = []
        for meter in pool.meters:
            used = share_used(meter)
            window = meter.window
            if used is None or window is None or window.minutes is None \
                    or meter.resets_at is None or meter.resets_at.seconds <= 0:
                continue
            windows.append(Window(min(used, 100.0), window.minutes, meter.resets_at.seconds))
        buckets.append(Bucket(pool.id, tuple(windows), pool.label, reached(pool)))
    default = quota.pools[0].id if quota.pools else None
    return Snapshot(tuple(buckets), default)


def _decimal_text(value: float) -> str:
    if value.is_integer():
        return str(int(value))
    return format(Decimal(repr(value)), "f")


def from_v1(snapshot: Snapshot, updated_at: float) -> QuotaSnapshot:
    """The RFD snapshot for a v1 one observed at `updated_at` (Unix seconds)."""
    pools = []
    for bucket in snapshot.buckets:
        fullest = max(bucket.windows, key=lambda w: w.used_percent) \
            if bucket.reached_type is not None and bucket.windows else None
        meters: list[Meter] = []
        seen: set[str] = set()
        for window in sorted(bucket.windows, key=lambda w: w.duration_mins):
            meter_id, label = _WINDOW_NAMES.get(
                window.duration_mins, (f"window_{window.duration_mins}m",
                                       f"{window.duration_mins}-minute limit"))
            while meter_id in seen:
                meter_id += "_"
            seen.add(meter_id)
            text = duration_text(window.duration_mins)
            resets = format_instant(window.resets_at)
            instant = parse_instant(resets)
            meters.append(Meter(
                meter_id, label, float(window.used_percent),
                window=Duration(text, window.duration_mins, window.duration_mins * 60.0),
                resets_at=instant,
                status="exceeded" if window is fullest else None))
        credits = bucket.credits
        if credits is not None and credits.balance is not None and not credits.unlimited:
            meters.append(Meter("credits", "Credits", remaining=Quantity(
                _decimal_text(float(credits.balance)), "credits")))
        state = "exhausted" if bucket.reached_type is not None else None
        pools.append(Pool(bucket.id, tuple(meters), bucket.label, state))
    stamp = format_instant(updated_at)
    instant = parse_instant(stamp)
    assert instant is not None  # format_instant writes RFC 3339
    return QuotaSnapshot(tuple(pools), instant)
