"""codex: codex's `RateLimitSnapshot` → an account-limits snapshot.

codex-acp 2.6.0 (with codex 0.166.0) keeps these snapshots (from the app server's
`account/rateLimits/updated` and `account/rateLimits/read`) but shows them over ACP only in
the `/status` command's markdown. Two proposed wire shapes carry them structured, and both
are read here:

- `usage_update._meta["_codex/rateLimits"]` (codex-acp PR #334): a list of snapshots, one
  per limit;
- the notification `_account/rate_limits_update` advertised under
  `agentCapabilities._meta.rateLimits` (codex-acp PR #524, `docs/rate-limits-extension.md`):
  `{"rateLimits": <snapshot>}`, one limit per push, replacing that limit only.

A snapshot (camelCase from the app server; the snake_case spelling codex writes in its own
session files is read too)::

    {"limitId": "codex", "limitName": "Codex", "primary": {"usedPercent": 53,
     "windowDurationMins": 300, "resetsAt": 1789511479}, "secondary": {…},
     "credits": {"hasCredits": true, "unlimited": false, "balance": "12.5"},
     "planType": "plus", "rateLimitReachedType": "rate_limit_reached"}

Each limit is one bucket (id `limitId`, default `codex`); `primary` and `secondary` are its
windows when they carry a percentage, a duration and a reset time (none is invented; a
window missing one is left out). Limits not in a payload are kept from the previous
translated snapshot, as #524 specifies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from louise.limits.snapshot import Snapshot, snapshot_to_wire
from louise.limits.sources._values import (
    Garbage,
    first,
    mapping,
    number,
    percent,
    positive_int,
    text,
    timestamp,
)

SOURCE: Final = "codex rate-limit metadata"
META_KEY: Final = "_codex/rateLimits"
NOTIFICATION: Final = "_account/rate_limits_update"
DEFAULT_BUCKET: Final = "codex"
MAX_LIMITS: Final = 32


def _window(raw: object) -> dict[str, Any] | None:
    window = mapping(raw)
    if window is None:
        return None
    used = percent(first(window, "usedPercent", "used_percent"))
    minutes = positive_int(
        first(window, "windowDurationMins", "windowMinutes", "window_minutes")
    )
    reset = timestamp(first(window, "resetsAt", "resets_at"))
    if used is None or minutes is None or reset is None:
        return None
    return {"usedPercent": used, "windowDurationMins": minutes, "resetsAt": reset}


def _credits(raw: object) -> dict[str, Any] | None:
    credits = mapping(raw)
    if credits is None:
        return None
    out: dict[str, Any] = {}
    unlimited = credits.get("unlimited")
    if unlimited is True or unlimited is False:
        out["unlimited"] = unlimited
    balance = credits.get("balance")
    # codex sends the balance as a decimal string.
    if isinstance(balance, str) and len(balance) <= 40:
        try:
            balance = float(balance)
        except ValueError:
            balance = None
    amount = number(balance)
    if amount is not None and amount >= 0:
        out["balance"] = amount
    return out or None


def _bucket(raw: Mapping[str, Any]) -> dict[str, Any]:
    limit_id = text(first(raw, "limitId", "limit_id"), 80) or DEFAULT_BUCKET
    bucket: dict[str, Any] = {"id": limit_id, "windows": []}
    for key in ("primary", "secondary"):
        window = _window(raw.get(key))
        if window is not None:
            bucket["windows"].append(window)
    label = text(first(raw, "limitName", "limit_name"), 80)
    if label is None and limit_id == DEFAULT_BUCKET:
        label = "Codex"
    if label is not None:
        bucket["label"] = label
    reached = text(first(raw, "rateLimitReachedType", "rate_limit_reached_type"), 80)
    if reached is not None:
        bucket["reachedType"] = reached
    plan = text(first(raw, "planType", "plan_type"), 80)
    if plan is not None:
        bucket["planType"] = plan
    credits = _credits(raw.get("credits"))
    if credits is not None:
        bucket["credits"] = credits
    return bucket


def _is_snapshot(raw: Mapping[str, Any]) -> bool:
    return any(key in raw for key in ("primary", "secondary", "limitId", "limit_id"))


def _snapshots(payload: object) -> list[Mapping[str, Any]]:
    """The snapshots in any of the shapes: a list, `{"rateLimits": …}` (with an optional
    `rateLimitsByLimitId` map), a map keyed by limit id, or one bare snapshot."""
    if isinstance(payload, list):
        return [item for item in payload[:MAX_LIMITS] if mapping(item) is not None]
    raw = mapping(payload)
    if raw is None:
        return []
    if _is_snapshot(raw):
        return [raw]
    found: list[Mapping[str, Any]] = []
    by_id = mapping(first(raw, "rateLimitsByLimitId", "rate_limits_by_limit_id"))
    if by_id is not None:
        for limit_id, value in list(by_id.items())[:MAX_LIMITS]:
            entry = mapping(value)
            if entry is not None:
                found.append(entry if _is_snapshot(entry) and "limitId" in entry
                             else {**entry, "limitId": limit_id})
    nested = first(raw, "rateLimits", "rate_limits")
    if nested is not None and not found:
        found.extend(_snapshots(nested))
    if not found and by_id is None and nested is None:
        for limit_id, value in list(raw.items())[:MAX_LIMITS]:
            entry = mapping(value)
            if entry is not None and _is_snapshot(entry):
                found.append({**entry, "limitId": entry.get("limitId", limit_id)})
    return found[:MAX_LIMITS]


def translate(payload: object, previous: Snapshot | None, now: float) -> dict[str, Any]:
    """The complete wire snapshot after `payload`; raises `Garbage` when it holds no snapshot.

    Limits in `payload` replace the same limits of `previous` (the last snapshot translated
    from this source); the others are kept, with their windows whose reset is still ahead.
    """
    snapshots = _snapshots(payload)
    if not snapshots:
        raise Garbage("codex rate limits hold no snapshot")
    buckets: dict[str, dict[str, Any]] = {}
    if previous is not None:
        for bucket in snapshot_to_wire(previous)["buckets"]:
            bucket["windows"] = [w for w in bucket["windows"] if w["resetsAt"] > now]
            buckets[bucket["id"]] = bucket
    for raw in snapshots:
        bucket = _bucket(raw)
        buckets[bucket["id"]] = bucket
    if len(buckets) > MAX_LIMITS:
        raise Garbage("codex rate limits name too many limits")
    default = DEFAULT_BUCKET if DEFAULT_BUCKET in buckets else next(iter(buckets))
    return {"defaultBucketId": default, "buckets": list(buckets.values())}


def advertises_push(agent_capabilities: object) -> bool:
    """`agentCapabilities._meta.rateLimits` present: the agent pushes `NOTIFICATION`."""
    caps = mapping(agent_capabilities)
    meta = mapping(caps.get("_meta")) if caps is not None else None
    return meta is not None and mapping(meta.get("rateLimits")) is not None
