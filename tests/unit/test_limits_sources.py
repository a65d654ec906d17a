"""Translators of real agents' rate-limit signals (captured shapes), and the state rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from louise import limits as lim
from louise.limits import sources
from louise.limits.sources import Ignored, Rejected, Translated

NOW = 1_788_450_000.0
R5 = 1_788_465_600  # five-hour reset
R7 = 1_789_005_600  # seven-day reset

# claude-agent-acp 0.101.0 / Claude Code 2.1.318: every field the payload can carry.
CLAUDE_FULL: dict[str, Any] = {
    "status": "allowed_warning",
    "resetsAt": R5,
    "rateLimitType": "five_hour",
    "utilization": 0.78,
    "overageStatus": "allowed",
    "overageResetsAt": 1_790_812_800,
    "isUsingOverage": False,
    "surpassedThreshold": 0.75,
    "unifiedWindows": {
        "five_hour": {"utilization": 0.78, "resetsAt": R5, "status": "allowed_warning",
                      "surpassedThreshold": 0.75},
        "seven_day": {"utilization": 0.13, "resetsAt": R7},
    },
}


def usage(meta: dict[str, Any]) -> dict[str, Any]:
    return {"sessionUpdate": "usage_update", "used": 45196, "size": 200000, "_meta": meta}


def claude(info: Any, state: lim.LimitsState | None = None, **kw: Any) -> Any:
    return sources.from_session_update(usage({"_claude/rateLimit": info}), state, NOW, **kw)


def windows(snapshot: lim.Snapshot, bucket_id: str = "claude") -> list[tuple[int, float, int]]:
    bucket = snapshot.bucket(bucket_id)
    assert bucket is not None
    return [(w.duration_mins, w.used_percent, w.resets_at) for w in bucket.windows]


# ----------------------------------------------------------------------------- claude


def test_claude_every_field() -> None:
    obs = claude(CLAUDE_FULL, plan="Claude Max")
    assert isinstance(obs, Translated) and obs.source == "claude rate-limit metadata"
    snap = obs.snapshot
    assert snap.default_bucket_id == "claude"
    assert windows(snap) == [(300, 78.0, R5), (10080, 13.0, R7)]
    bucket = snap.default_bucket
    assert bucket is not None and bucket.reached_type is None
    assert bucket.plan_type == "Claude Max" and bucket.label == "Claude"
    state = sources.apply(None, "claude", obs, NOW)
    label = lim.render_label(state, NOW)
    assert label is not None and label.text == "limits 22%/5h ↻5h 87%/7d ↻7d"


def test_claude_model_windows_are_their_own_buckets() -> None:
    info = {"status": "allowed_warning", "rateLimitType": "seven_day_opus",
            "utilization": 0.9, "resetsAt": R7,
            "unifiedWindows": {"five_hour": {"utilization": 0.1, "resetsAt": R5}}}
    obs = claude(info)
    assert isinstance(obs, Translated)
    assert windows(obs.snapshot, "seven_day_opus") == [(10080, 90.0, R7)]
    opus = obs.snapshot.bucket("seven_day_opus")
    assert opus is not None and opus.label == "Opus"
    # The statusline shows the most urgent bucket, named like Claude names it.
    label = lim.render_label(sources.apply(None, "claude", obs, NOW), NOW)
    assert label is not None and label.text == "limits Opus 10%/7d ↻7d"


def test_claude_minimal_and_missing_fields() -> None:
    # The metadata mirror's minimal form: nothing a window can be made of.
    assert claude({"status": "allowed", "resetsAt": None, "rateLimitType": None,
                   "isUsingOverage": False}) is None
    # A window without its reset (or without utilization) is left out, never invented.
    obs = claude({"status": "allowed", "unifiedWindows": {
        "five_hour": {"utilization": 0.2}, "seven_day": {"utilization": 0.3, "resetsAt": R7}}})
    assert isinstance(obs, Translated) and windows(obs.snapshot) == [(10080, 30.0, R7)]
    # Utilization above 1 is clamped to a full window.
    obs = claude({"status": "allowed", "unifiedWindows": {
        "five_hour": {"utilization": 1.02, "resetsAt": R5}}})
    assert isinstance(obs, Translated) and windows(obs.snapshot) == [(300, 100.0, R5)]


@pytest.mark.parametrize("info", [
    "rejected", 42, None, [], {"status": 42}, {"status": "maybe"},
    {"status": "allowed", "unifiedWindows": "five_hour"},
])
def test_claude_garbage_is_ignored_with_a_reason(info: Any) -> None:
    obs = claude(info)
    assert isinstance(obs, Ignored) and obs.source == "claude rate-limit metadata"
    assert "_claude/rateLimit" in obs.reason


@pytest.mark.parametrize("bad", [
    {"utilization": "0.5", "resetsAt": R5}, {"utilization": True, "resetsAt": R5},
    {"utilization": float("nan"), "resetsAt": R5}, {"utilization": -0.1, "resetsAt": R5},
    {"utilization": 0.5, "resetsAt": -5}, {"utilization": 0.5, "resetsAt": 10**20},
    {"utilization": 0.5, "resetsAt": "soon"}, "window",
])
def test_claude_bad_window_values_are_left_out(bad: Any) -> None:
    obs = claude({"status": "allowed", "unifiedWindows": {
        "five_hour": bad, "seven_day": {"utilization": 0.5, "resetsAt": R7}}})
    assert isinstance(obs, Translated) and windows(obs.snapshot) == [(10080, 50.0, R7)]


def test_claude_incremental_events_merge_into_the_previous_translation() -> None:
    first = claude(CLAUDE_FULL)
    assert isinstance(first, Translated)
    state = sources.apply(None, "claude", first, NOW)
    # An event carrying only the 5h window keeps the 7d one from before.
    later = claude({"status": "allowed", "unifiedWindows": {
        "five_hour": {"utilization": 0.8, "resetsAt": R5}}}, state)
    assert isinstance(later, Translated)
    assert windows(later.snapshot) == [(300, 80.0, R5), (10080, 13.0, R7)]
    # ...but not from a state of another source (v1: source None).
    v1 = lim.accepted("claude", first.snapshot, NOW)
    alone = claude({"status": "allowed", "unifiedWindows": {
        "five_hour": {"utilization": 0.8, "resetsAt": R5}}}, v1)
    assert isinstance(alone, Translated) and windows(alone.snapshot) == [(300, 80.0, R5)]
    # A window whose reset passed is dropped from the merge.
    after_reset = sources.from_session_update(
        usage({"_claude/rateLimit": {"status": "allowed", "unifiedWindows": {
            "seven_day": {"utilization": 0.2, "resetsAt": R7}}}}), state, R5 + 1)
    assert isinstance(after_reset, Translated)
    assert windows(after_reset.snapshot) == [(10080, 20.0, R7)]


def test_claude_rejection_marks_the_window_reached_and_allowed_clears_it() -> None:
    rejected = claude({"status": "rejected", "rateLimitType": "five_hour", "resetsAt": R5})
    assert isinstance(rejected, Translated)
    bucket = rejected.snapshot.default_bucket
    assert bucket is not None and bucket.reached_type == "five_hour"
    assert windows(rejected.snapshot) == [(300, 100.0, R5)]  # full; the agent's reset
    state = sources.apply(None, "claude", rejected, NOW)
    allowed = claude({"status": "allowed", "unifiedWindows": {
        "five_hour": {"utilization": 0.01, "resetsAt": R5 + 18000}}}, state)
    assert isinstance(allowed, Translated)
    cleared = allowed.snapshot.default_bucket
    assert cleared is not None and cleared.reached_type is None
    overage = claude({"status": "rejected", "rateLimitType": "overage"})
    assert isinstance(overage, Translated)
    bucket = overage.snapshot.bucket("overage")
    assert bucket is not None and bucket.reached_type == "overage" and bucket.windows == ()


def test_claude_plan_label_from_auth_status() -> None:
    account = {"authStatus": {"kind": "account", "label": "Claude Max",
                              "account": {"plan": "max"}}}
    assert sources.plan_from_notification("_auth/status_update", account) == "Claude Max"
    for params in ({"authStatus": {"kind": "api_key", "label": "Anthropic API key"}},
                   {"authStatus": {"kind": "none", "label": "Not logged in"}},
                   {"authStatus": "x"}, None, []):
        assert sources.plan_from_notification("_auth/status_update", params) is None
    assert sources.plan_from_notification("_other", account) is None


def test_updates_without_rate_limits_are_not_observations() -> None:
    for update in ({"sessionUpdate": "usage_update", "used": 1, "size": 2},
                   {"sessionUpdate": "usage_update", "_meta": {"_claude/model": "x"}},
                   {"sessionUpdate": "agent_message_chunk", "_meta": {"_claude/rateLimit": {}}},
                   None, "usage_update", {"sessionUpdate": "usage_update", "_meta": []}):
        assert sources.from_session_update(update, None, NOW) is None


# ----------------------------------------------------------------------------- codex

CODEX_SNAPSHOT: dict[str, Any] = {
    "limitId": "codex", "limitName": None, "normalModelSlug": None,
    "primary": {"usedPercent": 53, "windowDurationMins": 300, "resetsAt": R5},
    "secondary": {"usedPercent": 41, "windowDurationMins": 10080, "resetsAt": R7},
    "credits": {"hasCredits": True, "unlimited": False, "balance": "12.5"},
    "rateLimitReachedType": None, "planType": "plus",
}


def test_codex_usage_update_meta_list_every_field() -> None:
    other = {"limitId": "codex_other", "limitName": "gpt-5.2-codex-sonic",
             "primary": {"usedPercent": 80, "windowDurationMins": 60, "resetsAt": R5},
             "rateLimitReachedType": "rate_limit_reached"}
    obs = sources.from_session_update(usage({"_codex/rateLimits": [CODEX_SNAPSHOT, other]}),
                                      None, NOW)
    assert isinstance(obs, Translated) and obs.source == "codex rate-limit metadata"
    snap = obs.snapshot
    assert snap.default_bucket_id == "codex"
    assert windows(snap, "codex") == [(300, 53.0, R5), (10080, 41.0, R7)]
    codex = snap.bucket("codex")
    assert codex is not None and codex.label == "Codex" and codex.plan_type == "plus"
    assert codex.credits == lim.Credits(12.5, False)
    second = snap.bucket("codex_other")
    assert second is not None and second.reached_type == "rate_limit_reached"
    assert second.label == "gpt-5.2-codex-sonic"


def test_codex_push_replaces_only_its_limit() -> None:
    first = sources.from_notification("_account/rate_limits_update",
                                      {"rateLimits": CODEX_SNAPSHOT}, None, NOW)
    assert isinstance(first, Translated)
    state = sources.apply(None, "codex", first, NOW)
    push = {"rateLimits": {"limitId": "codex_other", "primary": {
        "usedPercent": 10, "windowDurationMins": 60, "resetsAt": R5}}}
    second = sources.from_notification("_account/rate_limits_update", push, state, NOW)
    assert isinstance(second, Translated)
    assert [b.id for b in second.snapshot.buckets] == ["codex", "codex_other"]
    assert windows(second.snapshot, "codex") == windows(first.snapshot, "codex")


def test_codex_snake_case_session_file_shape() -> None:
    # What codex 0.166.0 writes in a rollout file's token_count event.
    rollout = {"limit_id": "codex", "limit_name": None,
               "primary": {"used_percent": 24.0, "window_minutes": 300, "resets_at": R5},
               "secondary": {"used_percent": 13.0, "window_minutes": 10080, "resets_at": R7},
               "credits": None, "plan_type": None}
    obs = sources.from_session_update(usage({"_codex/rateLimits": rollout}), None, NOW)
    assert isinstance(obs, Translated)
    assert windows(obs.snapshot, "codex") == [(300, 24.0, R5), (10080, 13.0, R7)]


def test_codex_missing_duration_or_reset_leaves_the_window_out() -> None:
    sparse = {"limitId": "codex",
              "primary": {"usedPercent": 25, "resetsAt": R5},
              "secondary": {"usedPercent": 48, "windowDurationMins": 10080}}
    obs = sources.from_session_update(usage({"_codex/rateLimits": [sparse]}), None, NOW)
    assert isinstance(obs, Translated) and windows(obs.snapshot, "codex") == []


@pytest.mark.parametrize("payload", [None, 7, "x", [], [1, "a"], {"nothing": 1},
                                     {"rateLimits": None}])
def test_codex_garbage_is_ignored(payload: Any) -> None:
    obs = sources.from_notification("_account/rate_limits_update", payload, None, NOW)
    assert isinstance(obs, Ignored) and obs.source == "codex rate-limit metadata"


def test_codex_is_bounded() -> None:
    many = [{"limitId": f"l{i}", "primary": {"usedPercent": 1, "windowDurationMins": 60,
                                             "resetsAt": R5}} for i in range(1000)]
    obs = sources.from_session_update(usage({"_codex/rateLimits": many}), None, NOW)
    assert isinstance(obs, Translated) and len(obs.snapshot.buckets) == 32
    huge = {"limitId": "x" * 10_000, "primary": None}
    obs = sources.from_session_update(usage({"_codex/rateLimits": huge}), None, NOW)
    assert isinstance(obs, Translated) and len(obs.snapshot.buckets[0].id) == 80


# ----------------------------------------------------------------------------- rejections


def test_rejections_by_dialect() -> None:
    claude_refusal = sources.from_prompt_error(-32603, {"errorKind": "rate_limit"})
    assert claude_refusal == Rejected("claude rate-limit metadata", "rate_limit", "claude",
                                      "Claude")
    gemini = sources.from_prompt_error(429, None)
    assert isinstance(gemini, Rejected) and gemini.source == "gemini rate-limit error"
    vibe = sources.from_prompt_error(-31001, {"provider": "mistral", "model": "devstral"})
    assert vibe == Rejected("vibe rate-limit error", "rate_limit", "vibe", "Vibe")
    assert sources.from_prompt_error(-31001, None) is None  # vibe's code, not vibe's shape
    assert sources.from_prompt_error(-32603, {"errorKind": "overloaded"}) is None
    assert sources.from_prompt_error(-32000, None) is None


def test_rejection_without_data_invents_no_reset() -> None:
    rejected = sources.from_prompt_error(429, "x")
    assert rejected is not None
    state = sources.apply(None, "gemini", rejected, NOW)
    assert state.status == "fresh" and state.source == "gemini rate-limit error"
    assert state.snapshot is not None
    bucket = state.snapshot.default_bucket
    assert bucket is not None and bucket.windows == () and bucket.reached_type == "rate_limit"
    label = lim.render_label(state, NOW)
    assert label == lim.Label("limits reached", "error")  # bucket named like the Agent
    # No reset is ever passed, so only the loss of a live session makes it stale.
    later = lim.inspect(state, "gemini", NOW + 10**6, True, True)
    assert later.status == "fresh"
    assert lim.inspect(state, "gemini", NOW, False, True).status == "stale"


def test_rejection_keeps_the_translated_windows() -> None:
    obs = claude(CLAUDE_FULL)
    assert isinstance(obs, Translated)
    state = sources.apply(None, "claude", obs, NOW)
    rejected = sources.from_prompt_error(-32603, {"errorKind": "rate_limit"})
    assert rejected is not None
    after = sources.apply(state, "claude", rejected, NOW + 5)
    assert after.snapshot is not None and state.snapshot is not None
    assert windows(after.snapshot) == windows(state.snapshot)
    assert after.updated_at == NOW + 5 and after.source == state.source


def test_passive_sources_apply_only_without_v1() -> None:
    assert sources.passive_sources_apply(None)
    assert not sources.passive_sources_apply(lim.Capability("_r", "_u"))


# ----------------------------------------------------------------------------- states


def test_translated_state_round_trips_and_keeps_its_source() -> None:
    obs = claude(CLAUDE_FULL)
    assert isinstance(obs, Translated)
    state = lim.translated("claude", obs.snapshot, obs.source, NOW)
    assert lim.state_from_json(lim.state_to_json(state)) == state
    assert lim.failed(state, "boom").source == state.source
    assert lim.loading(state).source == state.source
    assert lim.inspect(state, "claude", R5 + 1, True, True).source == state.source
    # A v1 state is written exactly as before (no "source" key).
    v1 = lim.accepted("claude", obs.snapshot, NOW)
    assert "source" not in lim.state_to_json(v1)
    with pytest.raises(ValueError):
        lim.state_from_json({**lim.state_to_json(state), "source": 5})
    with pytest.raises(ValueError):
        lim.translated("claude", obs.snapshot, "", NOW)


def test_detail_names_the_source() -> None:
    obs = claude(CLAUDE_FULL)
    assert isinstance(obs, Translated)
    lines = lim.render_detail(lim.translated("claude", obs.snapshot, obs.source, NOW), NOW)
    assert "Source: claude rate-limit metadata" in lines
    assert not any(line.startswith("Source:") for line in
                   lim.render_detail(lim.accepted("claude", obs.snapshot, NOW), NOW))


def test_translators_never_mutate_their_input() -> None:
    info = copy.deepcopy(CLAUDE_FULL)
    claude(info)
    assert info == CLAUDE_FULL
    payload = [copy.deepcopy(CODEX_SNAPSHOT)]
    sources.from_session_update(usage({"_codex/rateLimits": payload}), None, NOW)
    assert payload == [CODEX_SNAPSHOT]
