"""Account limits v1 (docs/account-limits-v1.md): pure validation, states and rendering.

No I/O anywhere in this package: functions take the payload, the state and `now` (Unix
seconds) and return immutable values. `louise.limits.sources` translates real agents' own
rate-limit signals into snapshots; `louise.limits.pace` projects when a window runs out.
The durable cross-process cache is `louise.storage.limits_cache`; the shell view is
`louise inspect`.
"""

from __future__ import annotations

from louise.limits.errors import (
    ERROR_NO_LIVE_SESSION,
    ERROR_RESET_PASSED,
    MALFORMED_SNAPSHOT,
    MSG_BUCKET_ID,
    MSG_BUCKET_METADATA,
    MSG_BUCKET_UNIQUE_WINDOWS,
    MSG_DEFAULT_BUCKET_MALFORMED,
    MSG_DEFAULT_BUCKET_MISSING,
    MSG_RESET_CREDITS,
    MSG_SNAPSHOT_BUCKETS,
    MSG_SNAPSHOT_UNLIMITED,
    MSG_WINDOW,
    VALIDATION_MESSAGES,
    LimitsError,
    malformed_note,
)
from louise.limits.render import bucket_rank, choose_bucket, render_detail, render_label
from louise.limits.state import (
    STATUSES,
    LimitsState,
    accepted,
    accepted_quota,
    failed,
    inspect,
    loading,
    reached_by_rejection,
    refused,
    reset_passed,
    state_from_json,
    state_to_json,
    translated,
)
from louise.limits.text import (
    Label,
    format_age,
    format_duration,
    format_percent,
    format_remaining,
    format_until,
    format_utc,
    sanitize,
)

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Any

    from louise.limits.alerts import Alert, AlertKey, AlertMemory, threshold_alerts
    from louise.limits.capability import NAMESPACE, Capability, negotiate
    from louise.limits.pace import PaceHistory, pace_alerts
    from louise.limits.quota import (
        QuotaError,
        QuotaExceeded,
        QuotaSnapshot,
        parse_quota_exceeded,
        parse_quota_snapshot,
        quota_to_wire,
    )
    from louise.limits.quota_order import Freshness
    from louise.limits.snapshot import (
        Bucket,
        Credits,
        ResetCredit,
        ResetCredits,
        Snapshot,
        Window,
        parse_snapshot,
        snapshot_to_wire,
    )

# Imported on first use (PEP 562): `louise inspect` needs none of them, and each module
# costs start-up time (a frozen slotted dataclass is about 1 ms to build).
_LAZY: dict[str, str] = {
    "Alert": "alerts", "AlertKey": "alerts", "AlertMemory": "alerts",
    "threshold_alerts": "alerts", "NAMESPACE": "capability", "Capability": "capability",
    "negotiate": "capability", "PaceHistory": "pace", "pace_alerts": "pace",
    "Freshness": "quota_order", "QuotaError": "quota", "QuotaExceeded": "quota",
    "QuotaSnapshot": "quota", "parse_quota_exceeded": "quota",
    "parse_quota_snapshot": "quota", "quota_to_wire": "quota",
    # a snapshot's: read or made only where there is one (a first `louise inspect`
    # without a cache file has none)
    "Bucket": "snapshot", "Credits": "snapshot", "ResetCredit": "snapshot",
    "ResetCredits": "snapshot", "Snapshot": "snapshot", "Window": "snapshot",
    "parse_snapshot": "snapshot", "snapshot_to_wire": "snapshot",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ERROR_NO_LIVE_SESSION",
    "ERROR_RESET_PASSED",
    "MALFORMED_SNAPSHOT",
    "MSG_BUCKET_ID",
    "MSG_BUCKET_METADATA",
    "MSG_BUCKET_UNIQUE_WINDOWS",
    "MSG_DEFAULT_BUCKET_MALFORMED",
    "MSG_DEFAULT_BUCKET_MISSING",
    "MSG_RESET_CREDITS",
    "MSG_SNAPSHOT_BUCKETS",
    "MSG_SNAPSHOT_UNLIMITED",
    "MSG_WINDOW",
    "NAMESPACE",
    "STATUSES",
    "VALIDATION_MESSAGES",
    "Alert",
    "AlertKey",
    "AlertMemory",
    "Bucket",
    "Capability",
    "Credits",
    "Freshness",
    "Label",
    "LimitsError",
    "LimitsState",
    "PaceHistory",
    "QuotaError",
    "QuotaExceeded",
    "QuotaSnapshot",
    "ResetCredit",
    "ResetCredits",
    "Snapshot",
    "Window",
    "accepted",
    "accepted_quota",
    "bucket_rank",
    "choose_bucket",
    "failed",
    "format_age",
    "format_duration",
    "format_percent",
    "format_remaining",
    "format_until",
    "format_utc",
    "inspect",
    "loading",
    "malformed_note",
    "negotiate",
    "pace_alerts",
    "parse_quota_exceeded",
    "parse_quota_snapshot",
    "parse_snapshot",
    "quota_to_wire",
    "reached_by_rejection",
    "refused",
    "render_detail",
    "render_label",
    "reset_passed",
    "sanitize",
    "snapshot_to_wire",
    "state_from_json",
    "state_to_json",
    "threshold_alerts",
    "translated",
]
