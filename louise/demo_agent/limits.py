"""The account-limits extension v1 as the demo agent speaks it (shared/docs/account-limits-v1.md).

Pure functions: the snapshot depends only on how many prompts the account has run, the
chosen `LimitsMode` and the wall clock. `resetsAt` must lie in the future for the
client to call the snapshot fresh, so it is derived from `time.time()` rounded down to
the hour: stable within a test, and at least 300 minutes ahead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal, get_args

JsonObject = dict[str, Any]

NAMESPACE = "io.github.euri10.louiselm"
READ_METHOD = "_io.github.euri10.louiselm/account_limits/read"
UPDATED_METHOD = "_io.github.euri10.louiselm/account_limits/updated"

# fresh: two metered buckets; empty: `buckets: []`; unlimited: explicit unlimited;
# invalid: fails the client's validation (usedPercent 150); error: reads answer an error.
LimitsMode = Literal["fresh", "empty", "unlimited", "invalid", "error"]
LIMITS_MODES: tuple[str, ...] = get_args(LimitsMode)

SAFE_ERROR_MESSAGE = "Account limits are temporarily unavailable"


def advertisement() -> JsonObject:
    """What goes into `agentCapabilities._meta` to negotiate the extension."""
    return {
        NAMESPACE: {
            "accountLimits": {
                "version": 1,
                "readMethod": READ_METHOD,
                "updatedMethod": UPDATED_METHOD,
            }
        }
    }


def _window(used_percent: float, minutes: int, anchor: int) -> JsonObject:
    return {
        "usedPercent": used_percent,
        "windowDurationMins": minutes,
        "resetsAt": anchor + minutes * 60,
    }


# The percentage points of the 5-hour request window one prompt uses: 1 lets a first hour
# of normal use (a prompt a minute) pass without a limit alert; LOUISE_DEMO_QUOTA_STEP=4
# (the old pace) reaches the limit after 22 prompts, for showing and testing alerts.
DEFAULT_QUOTA_STEP = 1.0


def snapshot(prompts: int, now: float, mode: LimitsMode = "fresh",
             step: float = DEFAULT_QUOTA_STEP) -> JsonObject:
    """A complete snapshot after `prompts` prompts; the same inputs give the same output.

    Each prompt uses `step` points of the 5-hour window and a set share of it of the
    others (with a step of a power of two the numbers are exact in binary floating point,
    so they compare equal in tests). `error` has no snapshot: the caller answers a
    JSON-RPC error instead.
    """
    if mode == "empty":
        return {"buckets": []}
    if mode == "unlimited":
        return {"buckets": [], "unlimited": True}
    anchor = int(now) // 3600 * 3600
    short = min(100, 12 + step * prompts)
    requests: JsonObject = {
        "id": "requests",
        "label": "Requests",
        "windows": [
            _window(150 if mode == "invalid" else short, 300, anchor),
            _window(min(100.0, 30.5 + step / 8 * prompts), 10080, anchor),
        ],
        "planType": "demo-pro",
    }
    if short >= 100:
        requests["reachedType"] = "short_window"
    tokens: JsonObject = {
        "id": "tokens",
        "label": "Tokens",
        "windows": [_window(min(100.0, 20.0 + step * 5 / 8 * prompts), 1440, anchor)],
        "credits": {"balance": max(0.0, 25.0 - step / 8 * prompts), "unlimited": False},
    }
    return {
        "defaultBucketId": "requests",
        "buckets": [requests, tokens],
        "unlimited": False,
        "resetCredits": {
            "availableCount": 1,
            "credits": [
                {
                    "id": "demo-reset-1",
                    "expiresAt": anchor + 7 * 24 * 3600,
                    "title": "Window reset",
                    "description": "One free reset of the 5-hour request window.",
                }
            ],
        },
    }


@dataclass
class Account:
    """The one account behind every session: usage grows with each prompt started."""

    prompts: int = 0
    mode: LimitsMode = "fresh"
    step: float = DEFAULT_QUOTA_STEP  # LOUISE_DEMO_QUOTA_STEP

    def current(self) -> JsonObject | None:
        """The snapshot to send now, or None when reads fail (mode `error`)."""
        if self.mode == "error":
            return None
        return snapshot(self.prompts, time.time(), self.mode, self.step)
