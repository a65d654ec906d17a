"""RFD snapshots as louise's limits states: label, detail, alerts, stale rules, the cache
form, and a `quotaExceeded` refusal shown as "reached, resets …"."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from louise import limits as lim
from louise.limits.quota import parse_quota_exceeded, parse_quota_snapshot
from louise.limits.quota_render import quota_alerts
from tests.unit.test_limits_quota import (
    CODEX,
    EXAMPLE_UPDATE,
    EXCEEDED_ERROR,
    KIMI,
    NOW,
    seconds,
)


def state_of(payload: dict[str, object], source: str = "quota_update",
             agent: str = "claude") -> lim.LimitsState:
    return lim.accepted_quota(agent, parse_quota_snapshot(payload), NOW, source)


def test_an_rfd_state_is_fresh_with_its_projection() -> None:
    state = state_of(EXAMPLE_UPDATE)
    assert state.status == "fresh" and state.source == "quota_update"
    assert state.snapshot is not None and state.snapshot.default_bucket_id == "plan"
    empty = state_of({"updatedAt": "2026-10-06T13:10:00Z", "pools": []})
    assert empty.status == "empty"


def test_label_first_pool_unnamed_most_urgent_pool_wins() -> None:
    label = lim.render_label(state_of(CODEX), NOW)
    assert label is not None
    assert label.text == "limits 58%/5h ↻5h 83%/7d ↻5d" and label.level == "ok"
    reached = lim.render_label(state_of(EXAMPLE_UPDATE), NOW)
    assert reached is not None and reached.level == "error"
    assert reached.text == "limits 0%/5h ↻5h 36%/7d ↻3d"
    overage_first = copy.deepcopy(EXAMPLE_UPDATE)
    overage_first["pools"].reverse()
    named = lim.render_label(state_of(overage_first), NOW)
    assert named is not None and named.text.startswith("limits Plan usage 0%/5h")


def test_label_of_amounts_and_of_no_pools() -> None:
    kimi = lim.render_label(state_of(KIMI), NOW)
    assert kimi is not None and kimi.text == "limits 65%/7d ↻4d 20%/5h ↻4h"
    assert kimi.level == "warning"  # the 5h window is 80 % used
    none = lim.render_label(state_of({"updatedAt": "2026-10-06T13:10:00Z", "pools": []}), NOW)
    assert none == lim.Label("limits n/a", "neutral")
    stale = lim.failed(state_of(CODEX), "read failed")
    label = lim.render_label(stale, NOW)
    assert label is not None and label.text.endswith(" stale") and label.level == "warning"


def test_detail_shows_pools_state_words_amounts_and_the_agents_time() -> None:
    lines = lim.render_detail(state_of(EXAMPLE_UPDATE), NOW)
    text = "\n".join(lines)
    assert "Source: quota_update" in lines
    assert "As of: 2026-10-06 13:10:00 UTC (the agent's time)" in lines
    assert "### Plan usage (plan) · exhausted" in lines
    assert "- 5-hour limit (five_hour): 100% used · 0% left · exceeded" in lines
    assert "  Window: 5h · Resets: in 5h (2026-10-06 18:00 UTC)" in lines
    assert "### Extra usage (extra_usage) · available" in lines
    assert ("- Monthly spend limit (monthly_cap): $12.40 of $50.00 · 24.8% used · "
            "75.2% left · ok") in lines
    assert "  Resets: in 26d (2026-11-01 00:00 UTC)" in lines
    codex = "\n".join(lim.render_detail(state_of(CODEX), NOW))
    assert "- balance: 118.5 credits left" in codex
    assert "- Monthly spend limit (spend_cap): 31.5 credits of 150 credits" in codex
    assert "  Window: 1mo" in codex
    assert "0%" not in codex.split("spend_cap")[1].split("\n")[0]  # no invented share
    assert text.count("### ") == 2


def test_unknown_and_underscore_states_render_as_unavailable() -> None:
    payload = copy.deepcopy(CODEX)
    payload["pools"][0]["state"] = "_vendor_paused"
    payload["pools"][1]["state"] = "suspended"
    lines = lim.render_detail(state_of(payload), NOW)
    assert "### codex · unavailable" in lines and "### Credits (credits) · unavailable" in lines


def test_stale_after_a_reset_of_a_period_that_is_not_a_window() -> None:
    state = state_of(EXAMPLE_UPDATE)
    after_cap = float(seconds("2026-11-01T00:00:01Z"))
    assert lim.inspect(state, "claude", after_cap, True, True).status == "stale"
    codex = state_of(CODEX)  # P1M without a reset time: nothing passes
    assert lim.inspect(codex, "claude", NOW + 60, True, True).status == "fresh"


def test_the_cache_form_round_trips_and_rederives_the_projection() -> None:
    state = lim.refused(state_of(EXAMPLE_UPDATE), "claude", parse_quota_exceeded(
        EXCEEDED_ERROR["code"], EXCEEDED_ERROR["message"], EXCEEDED_ERROR["data"], NOW),
        "quotaExceeded", NOW + 1)
    value = lim.state_to_json(state)
    assert value["quota"]["pools"][0]["id"] == "plan"
    assert value["refusal"] == {"message": "5-hour limit reached", "poolId": "plan",
                                "meterId": "five_hour", "resetsAt": "2026-10-06T18:00:00.000Z"}
    assert lim.state_from_json(value) == state
    tampered = copy.deepcopy(value)
    tampered["snapshot"]["buckets"] = []  # a damaged projection is derived again
    assert lim.state_from_json(tampered).snapshot == state.snapshot


def test_a_refusal_reads_reached_resets_until_new_figures() -> None:
    refusal = parse_quota_exceeded(EXCEEDED_ERROR["code"], EXCEEDED_ERROR["message"],
                                   EXCEEDED_ERROR["data"], NOW)
    assert refusal is not None
    state = lim.refused(state_of(CODEX), "claude", refusal, "quotaExceeded", NOW)
    label = lim.render_label(state, NOW)
    assert label == lim.Label("limits reached ↻5h", "error")
    assert ("Reached: 5-hour limit reached (plan/five_hour) · resets in 5h "
            "(2026-10-06 18:00 UTC)") in lim.render_detail(state, NOW)
    after = lim.render_label(state, float(seconds("2026-10-06T18:00:01Z")))
    assert after is not None and not after.text.startswith("limits reached")
    renewed = lim.accepted_quota("claude", parse_quota_snapshot(CODEX), NOW + 5, "quota_update")
    assert renewed.refusal is None
    bare = lim.refused(None, "gemini", refusal, "quotaExceeded", NOW)
    assert bare.snapshot is not None and bare.snapshot.buckets[0].id == "plan"
    assert lim.render_label(bare, NOW) == lim.Label("limits reached ↻5h", "error")


def test_alerts_once_per_meter_and_escalation() -> None:
    payload = copy.deepcopy(CODEX)
    payload["pools"][0]["meters"][0]["status"] = "warning"  # the agent's grading, at 42 %
    state = state_of(payload)
    alerts, memory = quota_alerts(state, state.quota, None, NOW)  # type: ignore[arg-type]
    assert [a.message for a in alerts] == [
        "claude codex primary: 58% left; resets in 5h"]
    again, _ = quota_alerts(state, state.quota, memory, NOW)  # type: ignore[arg-type]
    assert again == []
    reached = state_of(EXAMPLE_UPDATE)
    alerts, _ = quota_alerts(reached, reached.quota, None, NOW)  # type: ignore[arg-type]
    assert [a.level for a in alerts] == ["error"]
    assert alerts[0].message == "claude Plan usage 5-hour limit: limit reached; resets in 5h"


def test_the_limits_cache_keeps_an_rfd_state_within_its_bounds(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from louise.storage.limits_cache import LimitsCache
    from louise.storage.limits_cache_bounds import MAX_WINDOWS

    cache = LimitsCache(tmp_path / "limits.json")
    state = state_of(EXAMPLE_UPDATE)
    assert cache.record_state("claude", state) == state
    assert cache.load().states["claude"] == state
    many = copy.deepcopy(CODEX)
    many["pools"][0]["meters"] = [
        {"id": f"m{i}", "usedPercent": i, "window": "PT5H", "resetsAt": "2026-10-06T18:00:00Z"}
        for i in range(16)]
    stored = cache.record_state("codex", state_of(many, agent="codex"))
    assert stored.quota is not None and len(stored.quota.pools[0].meters) == MAX_WINDOWS
    assert stored.snapshot is not None and len(stored.snapshot.buckets[0].windows) == MAX_WINDOWS
    caplog.clear()
    cache.record_state("claude", state)  # what is stored is within bounds: nothing to cut
    assert "cut to its bounds" not in caplog.text
    assert cache.load().states["codex"] == stored
