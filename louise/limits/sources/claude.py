"""claude-agent-acp: `usage_update._meta["_claude/rateLimit"]` → an account-limits snapshot.

Verified against claude-agent-acp 0.101.0 (`dist/acp-agent.js`: the SDK's
`rate_limit_event` becomes a `usage_update` with `_meta: {"_claude/rateLimit":
message.rate_limit_info}`) and the Claude Code binary it drives (2.1.318, agent SDK
0.3.318), which builds `rate_limit_info` from the model API's `anthropic-ratelimit-unified-*`
response headers::

    {"status": "allowed" | "allowed_warning" | "rejected",
     "resetsAt": 1788465600, "rateLimitType": "five_hour" | "seven_day" | "seven_day_opus"
       | "seven_day_sonnet" | "seven_day_overage_included" | "overage",
     "utilization": 0.78,            # 0–1, top level only on a warning or a rejection
     "overageStatus": …, "overageResetsAt": …, "isUsingOverage": false,
     "surpassedThreshold": 0.75,
     "unifiedWindows": {"five_hour": {"utilization": 0.24, "resetsAt": 1788465600,
                                      "status": …, "surpassedThreshold": …},
                        "seven_day": {…}, "seven_day_overage_included": {…}}}

Mapping (windows named as Claude names them): `five_hour` and `seven_day` are the 5h and 7d
windows of the default bucket `claude`; `seven_day_opus` / `seven_day_sonnet` /
`seven_day_overage_included` are a 7d window in buckets of their own (`7d opus`, …);
utilization × 100 is `usedPercent`. `overage` has no window duration, so it is never a
window (v1 forbids inventing one); a rejection on it marks an `overage` bucket reached.
A window needs both its utilization and its reset time; anything else is left out.

Events are incremental (each carries what the latest response's headers said), so the
translation starts from the previous translated snapshot: windows whose reset time is still
ahead are kept unless the event reports them anew. The reached state is recomputed from
each event: a `rejected` status marks the bucket of `rateLimitType` (or of a window whose
own status is `rejected`); any other status clears it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from louise.limits.snapshot import Snapshot
from louise.limits.sources._values import (
    Garbage,
    kind,
    mapping,
    number,
    percent,
    text,
    timestamp,
)

SOURCE: Final = "claude rate-limit metadata"
META_KEY: Final = "_claude/rateLimit"
AUTH_STATUS_METHOD: Final = "_auth/status_update"
DEFAULT_BUCKET: Final = "claude"
REJECTED_ERROR_KIND: Final = "rate_limit"

_STATUSES: Final = frozenset({"allowed", "allowed_warning", "rejected"})

# Claude's window name -> (bucket id, bucket label, window minutes).
WINDOWS: Final[dict[str, tuple[str, str, int]]] = {
    "five_hour": (DEFAULT_BUCKET, "Claude", 300),
    "seven_day": (DEFAULT_BUCKET, "Claude", 10080),
    "seven_day_opus": ("seven_day_opus", "Opus", 10080),
    "seven_day_sonnet": ("seven_day_sonnet", "Sonnet", 10080),
    "seven_day_overage_included": ("seven_day_overage_included", "Overage incl.", 10080),
}
_BUCKET_ORDER: Final = (
    DEFAULT_BUCKET,
    "seven_day_opus",
    "seven_day_sonnet",
    "seven_day_overage_included",
    "overage",
)
_LABELS: Final = {bucket: label for bucket, label, _ in WINDOWS.values()} | {
    "overage": "Overage"
}


def _window_reading(raw: Mapping[str, Any]) -> tuple[float, int] | None:
    fraction = number(raw.get("utilization"))
    reset = timestamp(raw.get("resetsAt", raw.get("resets_at")))
    if fraction is None or fraction < 0 or reset is None:
        return None
    used = percent(fraction * 100)
    return None if used is None else (used, reset)


def translate(
    info: object, previous: Snapshot | None, now: float, *, plan: str | None = None
) -> dict[str, Any] | None:
    """The complete wire snapshot after `info` (a `_claude/rateLimit` value), or `None` when
    it says nothing a snapshot can hold. Raises `Garbage` for a malformed value.

    `previous` is the last snapshot translated from this source (merged, see the module
    docstring); `plan` the account's plan label from `_auth/status_update`."""
    raw = mapping(info)
    if raw is None:
        raise Garbage(f"{META_KEY} is not an object")
    # Each field is type-checked before it is compared: a list or an object where a string
    # belongs is unusable data, never an exception (`in` a set would raise on one).
    status = raw.get("status")
    if not isinstance(status, str) or status not in _STATUSES:
        raise Garbage(f"{META_KEY} has no known status ({kind(status)})")
    limit_type = raw.get("rateLimitType")
    if limit_type is not None and not isinstance(limit_type, str):
        raise Garbage(f"{META_KEY}.rateLimitType is {kind(limit_type)}, not a string")
    # (bucket id, minutes) -> (used percent, resets_at)
    windows: dict[tuple[str, int], tuple[float, int]] = {}
    plans: dict[str, str] = {}
    if previous is not None:
        for kept in previous.buckets:
            if kept.plan_type is not None:
                plans[kept.id] = kept.plan_type
            for window in kept.windows:
                if window.resets_at > now:
                    windows[(kept.id, window.duration_mins)] = (
                        window.used_percent,
                        window.resets_at,
                    )
    reached: dict[str, str] = {}
    unified = mapping(raw.get("unifiedWindows"))
    if raw.get("unifiedWindows") is not None and unified is None:
        raise Garbage(f"{META_KEY}.unifiedWindows is not an object")
    for name, (bucket_id, _label, minutes) in WINDOWS.items():
        entry = mapping(unified.get(name)) if unified is not None else None
        if entry is None:
            continue
        reading = _window_reading(entry)
        if reading is not None:
            windows[(bucket_id, minutes)] = reading
        if status == "rejected" and entry.get("status") == "rejected":
            reached[bucket_id] = name
    if limit_type in WINDOWS:
        bucket_id, _label, minutes = WINDOWS[limit_type]
        reading = _window_reading(raw)
        reset = timestamp(raw.get("resetsAt"))
        if reading is None and status == "rejected" and reset is not None:
            # Refused on this window: it is full; the reset time is the agent's own.
            reading = (100.0, reset)
        if reading is not None:
            windows[(bucket_id, minutes)] = reading
    if status == "rejected":
        if limit_type in WINDOWS:
            reached[WINDOWS[limit_type][0]] = str(limit_type)
        elif limit_type == "overage":
            reached["overage"] = "overage"
        elif not reached:
            reached[DEFAULT_BUCKET] = REJECTED_ERROR_KIND
    if not windows and not reached:
        return None
    plan_label = text(plan)
    if plan_label is not None:
        plans[DEFAULT_BUCKET] = plan_label
    present = {bucket_id for bucket_id, _ in windows} | set(reached) | {DEFAULT_BUCKET}
    buckets = []
    for bucket_id in _BUCKET_ORDER:
        if bucket_id not in present:
            continue
        bucket: dict[str, Any] = {
            "id": bucket_id,
            "label": _LABELS[bucket_id],
            "windows": [
                {"usedPercent": used, "windowDurationMins": minutes, "resetsAt": reset}
                for (owner, minutes), (used, reset) in sorted(windows.items())
                if owner == bucket_id
            ],
        }
        if bucket_id in reached:
            bucket["reachedType"] = reached[bucket_id]
        if bucket_id in plans:
            bucket["planType"] = plans[bucket_id]
        buckets.append(bucket)
    return {"defaultBucketId": DEFAULT_BUCKET, "buckets": buckets}


def plan_from_auth_status(params: object) -> str | None:
    """The plan label of an `_auth/status_update` (`{"authStatus": {"kind": "account",
    "label": "Claude Max", …}}`), or `None` for any other identity (API key, gateway,
    logged out), whose label is not a plan."""
    raw = mapping(params)
    status = mapping(raw.get("authStatus")) if raw is not None else None
    if status is None or status.get("kind") != "account":
        return None
    return text(status.get("label"), 80)


def is_rejection(data: object) -> bool:
    """A `session/prompt` error whose data is `{"errorKind": "rate_limit"}`."""
    raw = mapping(data)
    return raw is not None and raw.get("errorKind") == REJECTED_ERROR_KIND
