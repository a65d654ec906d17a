"""render_detail: the limits view of every kind of state (the doc's example, no snapshot,
unlimited, stale, buckets without windows, reset credits, absurd timestamps). The label
and the formatting helpers: test_limits_render.py, whose helpers these tests use.
"""

from __future__ import annotations

from louise.limits import (
    LimitsState,
    accepted,
    failed,
    inspect,
    parse_snapshot,
    render_detail,
)
from tests.unit.test_limits_render import NOW, D, H, bucket, fresh, snapshot, window

# --------------------------------------------------------------------------- detail


def test_detail_of_the_doc_example() -> None:
    payload = {
        "defaultBucketId": "requests",
        "buckets": [
            {
                "id": "requests",
                "label": "Requests",
                "windows": [
                    {"usedPercent": 40.5, "windowDurationMins": 10080, "resetsAt": 4102452000},
                    {"usedPercent": 82, "windowDurationMins": 300, "resetsAt": 4102444800},
                ],
                "reachedType": "short_window",
                "planType": "example-plan",
                "credits": {"balance": 7.5, "unlimited": False},
            }
        ],
        "unlimited": False,
        "resetCredits": {
            "availableCount": 1,
            "credits": [
                {
                    "id": "reset-1",
                    "expiresAt": 4102448400,
                    "title": "Window reset",
                    "description": "One available reset credit.",
                }
            ],
        },
    }
    state = accepted("codex", parse_snapshot(payload), NOW - 3 * H)
    assert render_detail(state, NOW) == [
        "# Account limits",
        "",
        "Agent: codex",
        "Status: fresh",
        "Updated: 2099-12-31 19:00:00 UTC (3h ago)",
        "",
        "## Buckets",
        "",
        "### Requests (requests) [default]",
        "18% left · 82% used",
        "Window: 5h · Resets: in 2h (2100-01-01 00:00 UTC)",
        "59.5% left · 40.5% used",
        "Window: 7d · Resets: in 4h (2100-01-01 02:00 UTC)",
        "Reached: short_window · Reset credits available: 1",
        "Plan: example-plan",
        "Credits: 7.5",
        "",
        "Reset credits: 1",
        "- Window reset (reset-1) · Expires: in 3h (2100-01-01 01:00 UTC)",
        "  One available reset credit.",
    ]


def test_detail_of_states_without_snapshot() -> None:
    lines = render_detail(LimitsState("codex", "not_observed"), NOW)
    assert "Status: not observed" in lines
    assert not any(line.startswith("Updated") for line in lines)
    unsupported = render_detail(LimitsState("codex", "unsupported"), NOW)
    assert "This Agent does not advertise the account limits extension." in unsupported
    unavailable = render_detail(failed(None, "read\nfailed", agent="codex"), NOW)
    assert "Status: unavailable" in unavailable
    assert "Note: read failed" in unavailable


def test_detail_notes_for_unlimited_and_no_buckets() -> None:
    unlimited = accepted("codex", parse_snapshot({"buckets": [], "unlimited": True}), NOW)
    lines = render_detail(unlimited, NOW)
    assert "Account limits: unlimited" in lines and "Metered buckets: none" in lines
    assert "Updated: 2099-12-31 22:00:00 UTC (just now)" in lines
    empty = accepted("codex", parse_snapshot({"buckets": []}), NOW)
    assert "Metered buckets: none" in render_detail(empty, NOW)
    assert "Account limits: unlimited" not in render_detail(empty, NOW)


def test_detail_of_a_stale_state_shows_the_error_and_passed_resets() -> None:
    state = accepted("codex", snapshot(bucket("b", window(resets=NOW - 60))), NOW - 2 * D)
    inspected = inspect(state, "codex", NOW, True, True)
    lines = render_detail(inspected, NOW)
    assert "Status: stale" in lines
    assert "Note: account limits reset time passed without a confirmed refresh" in lines
    assert "Window: 5h · Resets: reset time passed (2099-12-31 21:59 UTC)" in lines
    assert "Updated: 2099-12-29 22:00:00 UTC (2d ago)" in lines


def test_detail_of_buckets_without_windows_label_or_balance() -> None:
    state = fresh(
        bucket("main", window(used=1)),
        bucket("credits", credits={"unlimited": True}),
        bucket("other", credits={}),
    )
    lines = render_detail(state, NOW)
    assert "### main [default]" in lines
    assert "### credits" in lines
    assert "No quota windows reported" in lines
    assert "Credits: unlimited" in lines
    assert "Credits: no balance reported" in lines


def test_detail_reset_credit_variants() -> None:
    payload = {
        "buckets": [],
        "resetCredits": {
            "availableCount": 3,
            "credits": [{}, {"id": "r2"}, {"title": "T", "expiresAt": NOW - 5}],
        },
    }
    lines = render_detail(accepted("codex", parse_snapshot(payload), NOW), NOW)
    assert lines[-4:] == [
        "Reset credits: 3",
        "- Reset credit",
        "- r2",
        "- T · Expired (2099-12-31 21:59 UTC)",
    ]


def test_detail_survives_absurd_timestamps_and_sanitizes_text() -> None:
    state = fresh(
        bucket(
            "b\n1",
            window(resets=10**30),
            label="L\x1b",
            reachedType="r\n",
            planType="p\t",
            credits={"balance": 10**40},
        )
    )
    lines = render_detail(state, NOW)
    assert "### L  (b 1) [default]" in lines
    assert f"Window: 5h · Resets: in {-(-(10**30 - NOW) // D)}d (Unix time {10**30})" in lines
    assert "Reached: r " in lines and "Plan: p " in lines
    assert f"Credits: {10**40}" in lines
    assert all("\n" not in line and "\x1b" not in line for line in lines)
