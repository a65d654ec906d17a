"""threshold_alerts(): once per escalation per window and reset cycle, only for fresh states."""

from __future__ import annotations

from typing import Any

import pytest

from louise.limits import (
    Alert,
    AlertMemory,
    LimitsState,
    accepted,
    failed,
    loading,
    parse_snapshot,
    threshold_alerts,
)

NOW = 4_000_000_000
RESET = NOW + 2 * 3600


def window(used: float, mins: int = 300, resets: int = RESET) -> dict[str, Any]:
    return {"usedPercent": used, "windowDurationMins": mins, "resetsAt": resets}


def state_of(*buckets: dict[str, Any], now: float = NOW, agent: str = "codex") -> LimitsState:
    payload = {"buckets": list(buckets), "defaultBucketId": buckets[0]["id"]}
    return accepted(agent, parse_snapshot(payload), now)


def one_window(used: float, resets: int = RESET, **extra: Any) -> LimitsState:
    return state_of({"id": "req", "label": "Requests", "windows": [window(used, resets=resets)],
                     **extra})


def levels(alerts: list[Alert]) -> list[str]:
    return [alert.level for alert in alerts]


def test_nothing_below_the_thresholds() -> None:
    alerts, seen = threshold_alerts(one_window(79.9), None, NOW)
    assert alerts == []
    assert dict(seen) == {}


def test_escalation_alerts_once_per_step() -> None:
    seen: AlertMemory | None = None
    alerts, seen = threshold_alerts(one_window(80), seen, NOW)
    assert [(a.level, a.message) for a in alerts] == [
        ("warning", "codex Requests 5h has 20% remaining; resets in 2h")
    ]
    alerts, seen = threshold_alerts(one_window(85), seen, NOW)
    assert alerts == []
    alerts, seen = threshold_alerts(one_window(90), seen, NOW)
    assert [(a.level, a.message) for a in alerts] == [
        ("error", "codex Requests 5h has 10% remaining; resets in 2h")
    ]
    alerts, seen = threshold_alerts(one_window(99.5), seen, NOW)
    assert alerts == []
    alerts, seen = threshold_alerts(one_window(99.5, reachedType="short_window"), seen, NOW)
    assert [(a.level, a.message) for a in alerts] == [
        ("error", "codex Requests 5h limit reached (short window); resets in 2h")
    ]
    alerts, seen = threshold_alerts(one_window(100, reachedType="short_window"), seen, NOW)
    assert alerts == []


def test_first_seen_past_several_thresholds_gives_one_alert_for_the_highest() -> None:
    alerts, seen = threshold_alerts(one_window(95), None, NOW)
    assert levels(alerts) == ["error"]
    assert "has 5% remaining" in alerts[0].message
    alerts, _ = threshold_alerts(one_window(85), seen, NOW)
    assert alerts == []  # going back down does not re-alert the lower step
    reached, _ = threshold_alerts(one_window(100, reachedType="hard"), None, NOW)
    assert [a.message for a in reached] == [
        "codex Requests 5h limit reached (hard); resets in 2h"
    ]


def test_a_new_reset_cycle_alerts_again() -> None:
    _, seen = threshold_alerts(one_window(92), None, NOW)
    later = RESET + 60
    alerts, seen = threshold_alerts(one_window(92, resets=RESET + 5 * 3600), seen, later)
    assert levels(alerts) == ["error"]
    alerts, _ = threshold_alerts(one_window(92, resets=RESET + 5 * 3600), seen, later)
    assert alerts == []


def test_memory_forgets_finished_cycles_and_is_not_mutated() -> None:
    _, seen = threshold_alerts(one_window(92), None, NOW)
    snapshot_of_seen = dict(seen)
    _, newer = threshold_alerts(one_window(92, resets=RESET + 9000), seen, RESET + 1)
    assert dict(seen) == snapshot_of_seen
    assert ("req", 300, RESET) not in newer
    assert ("req", 300, RESET + 9000) in newer


def test_the_memory_cannot_be_modified_by_the_caller() -> None:
    _, seen = threshold_alerts(one_window(92), None, NOW)
    with pytest.raises(TypeError):
        seen[("req", 300, RESET)] = 0  # type: ignore[index]


@pytest.mark.parametrize(
    "make",
    [
        lambda s: failed(s, "x"),
        lambda s: loading(s),
        lambda s: LimitsState(s.agent, "stale", s.snapshot, s.updated_at, "no live"),
    ],
)
def test_only_fresh_states_alert(make: Any) -> None:
    state = make(one_window(99, reachedType="x"))
    alerts, seen = threshold_alerts(state, None, NOW)
    assert alerts == [] and dict(seen) == {}
    _, remembered = threshold_alerts(one_window(85), None, NOW)
    alerts, kept = threshold_alerts(state, remembered, NOW)
    assert alerts == [] and kept is remembered


def test_unlimited_empty_and_snapshotless_states_do_not_alert() -> None:
    for payload in ({"buckets": [], "unlimited": True}, {"buckets": []}):
        state = accepted("codex", parse_snapshot(payload), NOW)
        assert threshold_alerts(state, None, NOW)[0] == []
    assert threshold_alerts(loading(None, agent="codex"), None, NOW)[0] == []


def test_reached_alerts_for_the_most_used_window_only() -> None:
    state = state_of(
        {
            "id": "req",
            "label": "Requests",
            "reachedType": "weekly",
            "windows": [window(50, mins=300), window(97, mins=10080), window(97, mins=43200)],
        }
    )
    alerts, _ = threshold_alerts(state, None, NOW)
    assert [a.message for a in alerts] == [
        "codex Requests 7d limit reached (weekly); resets in 2h",
        "codex Requests 30d has 3% remaining; resets in 2h",
    ]
    assert levels(alerts) == ["error", "error"]
    assert [(a.bucket_id, a.duration_mins, a.resets_at) for a in alerts] == [
        ("req", 10080, RESET),
        ("req", 43200, RESET),
    ]


def test_reached_bucket_without_windows_does_not_alert() -> None:
    state = state_of({"id": "req", "reachedType": "weekly", "windows": []})
    assert threshold_alerts(state, None, NOW)[0] == []


def test_windows_past_their_reset_do_not_alert() -> None:
    state = state_of({"id": "req", "windows": [window(95, resets=NOW), window(95, mins=60)]})
    alerts, _ = threshold_alerts(state, None, NOW)
    assert [a.duration_mins for a in alerts] == [60]


def test_each_window_and_bucket_alerts_independently() -> None:
    state = state_of(
        {"id": "a", "label": "A", "windows": [window(81), window(91, mins=10080)]},
        {"id": "b", "windows": [window(82, mins=60)]},
    )
    alerts, seen = threshold_alerts(state, None, NOW)
    assert [(a.level, a.message) for a in alerts] == [
        ("warning", "codex A 5h has 19% remaining; resets in 2h"),
        ("error", "codex A 7d has 9% remaining; resets in 2h"),
        ("warning", "codex b 1h has 18% remaining; resets in 2h"),
    ]
    assert threshold_alerts(state, seen, NOW)[0] == []


def test_less_than_one_percent_and_sanitized_messages() -> None:
    state = state_of({"id": "r", "label": "Re\nq", "windows": [window(99.5)]}, agent="co\tdex")
    alerts, _ = threshold_alerts(state, None, NOW)
    assert [a.message for a in alerts] == ["co dex Re q 5h has <1% remaining; resets in 2h"]


def test_thresholds_are_configurable() -> None:
    from louise.limits import accepted, parse_snapshot, threshold_alerts

    now = 1_000_000.0
    snapshot = parse_snapshot({"defaultBucketId": "b", "buckets": [{"id": "b", "windows": [
        {"usedPercent": 65, "windowDurationMins": 300, "resetsAt": int(now) + 3600}]}]})
    state = accepted("agent", snapshot, now)
    assert threshold_alerts(state, None, now)[0] == []  # 35 % left: nothing by default
    alerts, _ = threshold_alerts(state, None, now, warning_left=40, error_left=5)
    assert [a.level for a in alerts] == ["warning"]
    alerts, _ = threshold_alerts(state, None, now, warning_left=50, error_left=40)
    assert [a.level for a in alerts] == ["error"]
