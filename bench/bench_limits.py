"""Throughput of account-limits validation and label rendering (one run, no assertions).

    .venv/bin/python bench/bench_limits.py

Prints `parse_snapshot` snapshots/s for a two-bucket payload (the issue's target is
>= 20,000/s) and `render_label` labels/s for the resulting fresh state.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from louise.limits import accepted, parse_snapshot, render_label

NOW = 4_102_400_000

# Two buckets with two windows each, plus credits and reset credits: a realistic payload,
# decoded from JSON text as the peer would hand it over.
PAYLOAD: object = json.loads(
    json.dumps(
        {
            "defaultBucketId": "requests",
            "unlimited": False,
            "buckets": [
                {
                    "id": "requests",
                    "label": "Requests",
                    "windows": [
                        {"usedPercent": 82, "windowDurationMins": 300, "resetsAt": NOW + 7200},
                        {"usedPercent": 40.5, "windowDurationMins": 10080, "resetsAt": NOW + 9e4},
                    ],
                    "reachedType": "short_window",
                    "planType": "example-plan",
                    "credits": {"balance": 7.5, "unlimited": False},
                },
                {
                    "id": "tokens",
                    "label": "Tokens",
                    "windows": [
                        {"usedPercent": 12, "windowDurationMins": 1440, "resetsAt": NOW + 3600},
                        {"usedPercent": 3.25, "windowDurationMins": 43200, "resetsAt": NOW + 9e5},
                    ],
                },
            ],
            "resetCredits": {
                "availableCount": 1,
                "credits": [{"id": "reset-1", "expiresAt": NOW + 3600, "title": "Window reset"}],
            },
        }
    )
)


def rate(function: Callable[[], object], seconds: float = 1.0) -> float:
    """Calls per second of `function`, measured over about `seconds`."""
    batch = 1000
    calls = 0
    start = time.perf_counter()
    while True:
        for _ in range(batch):
            function()
        calls += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls / elapsed


def main() -> None:
    snapshot = parse_snapshot(PAYLOAD)
    state = accepted("codex", snapshot, NOW)
    label = render_label(state, NOW)
    assert label is not None
    parse_rate = rate(lambda: parse_snapshot(PAYLOAD))
    label_rate = rate(lambda: render_label(state, NOW))
    print(f"parse_snapshot (two buckets): {parse_rate:,.0f} snapshots/s (target >= 20,000/s)")
    print(f"render_label ({label.text!r}): {label_rate:,.0f} labels/s")


if __name__ == "__main__":
    main()
