"""The passive limits sources never raise: arbitrary JSON values in every field they read.

Each message is built from the shape real agents send (claude-agent-acp's
`_claude/rateLimit`, codex's rate-limit snapshots, `_auth/status_update`, prompt errors),
with every field either a plausible value or any JSON value at all (lists and objects
where strings belong, lone surrogates, huge numbers). Whatever arrives, a translator gives
`None`, `Ignored` (with a reason) or a valid observation, and applying a sequence of them
gives a state."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from louise import limits as lim
from louise.limits import sources
from louise.limits.sources import Ignored, Rejected, Translated, claude, codex

NOW = 1_788_450_000.0

# JSON as `json.loads` produces it, strings with lone surrogates (JSON's "\ud800") too.
json_text = st.one_of(st.text(max_size=6), st.sampled_from(["\ud800", "x\udfff", "", "\x1b["]))
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), json_text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(json_text, inner, max_size=3)),
    max_leaves=12,
)


def field(plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field as an agent may send it: a plausible value or any JSON value."""
    return st.one_of(plausible, json_values)


def shaped(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """An object with any subset of `fields` (each plausible or anything); now and then
    anything instead (rarely, so that the fields deep inside are reached often)."""
    shape = st.fixed_dictionaries({}, optional={k: field(v) for k, v in fields.items()})
    return st.one_of(shape, shape, shape, json_values)


timestamps = st.one_of(st.integers(min_value=1_788_000_000, max_value=1_800_000_000),
                       st.floats(min_value=0, max_value=2e9))
fractions = st.floats(min_value=-0.5, max_value=1.5)
claude_window = shaped({
    "utilization": fractions, "resetsAt": timestamps, "resets_at": timestamps,
    "status": st.sampled_from(["allowed", "allowed_warning", "rejected"]),
    "surpassedThreshold": fractions,
})
claude_info = shaped({
    "status": st.sampled_from(["allowed", "allowed_warning", "rejected"]),
    "resetsAt": timestamps,
    "rateLimitType": st.sampled_from([*claude.WINDOWS, "overage"]),
    "utilization": fractions,
    "overageStatus": st.sampled_from(["allowed", "rejected"]),
    "overageResetsAt": timestamps,
    "isUsingOverage": st.booleans(),
    "surpassedThreshold": fractions,
    "unifiedWindows": shaped({name: claude_window for name in claude.WINDOWS}),
})
codex_window = shaped({
    "usedPercent": st.floats(min_value=-5, max_value=105), "used_percent": st.integers(0, 100),
    "windowDurationMins": st.integers(-1, 20_000), "windowMinutes": st.integers(0, 300),
    "window_minutes": st.integers(0, 300), "resetsAt": timestamps, "resets_at": timestamps,
})
codex_snapshot = shaped({
    "limitId": st.sampled_from(["codex", "other", ""]), "limit_id": json_text,
    "limitName": json_text, "limit_name": json_text,
    "primary": codex_window, "secondary": codex_window,
    "credits": shaped({"hasCredits": st.booleans(), "unlimited": st.booleans(),
                       "balance": st.sampled_from(["12.5", "nan", "1e400", "-1", "x"])}),
    "planType": json_text, "plan_type": json_text,
    "rateLimitReachedType": json_text, "rate_limit_reached_type": json_text,
})
codex_payload = st.one_of(
    codex_snapshot,
    st.lists(codex_snapshot, max_size=3),
    shaped({"rateLimits": st.one_of(codex_snapshot, st.lists(codex_snapshot, max_size=3)),
            "rateLimitsByLimitId": st.dictionaries(json_text, codex_snapshot, max_size=3)}),
    st.dictionaries(json_text, codex_snapshot, max_size=3),
)
usage_update = shaped({
    "sessionUpdate": st.just("usage_update"),
    "used": st.integers(0, 10**6), "size": st.integers(0, 10**6),
    "_meta": shaped({claude.META_KEY: claude_info, codex.META_KEY: codex_payload}),
})
auth_status = shaped({"authStatus": shaped({
    "kind": st.sampled_from(["account", "apiKey"]), "label": json_text,
    "account": shaped({"plan": json_text})})})
prompt_error_data = shaped({"errorKind": st.just("rate_limit"), "provider": json_text,
                            "model": json_text})
error_codes = st.one_of(st.sampled_from([429, -31001, -32603]),
                        st.integers(min_value=-(2**63), max_value=2**63))

events = st.lists(st.one_of(
    st.tuples(st.just("update"), usage_update),
    st.tuples(st.just("notification"),
              st.tuples(st.sampled_from([codex.NOTIFICATION, claude.AUTH_STATUS_METHOD, "_x"]),
                        st.one_of(codex_payload, auth_status))),
    st.tuples(st.just("prompt_error"), st.tuples(error_codes, prompt_error_data)),
), min_size=1, max_size=6)


def observe(event: tuple[str, Any], state: lim.LimitsState | None,
            plan: str | None, now: float) -> tuple[sources.Observation | None, str | None]:
    kind, payload = event
    if kind == "update":
        return sources.from_session_update(payload, state, now, plan=plan), plan
    if kind == "notification":
        method, params = payload
        found = sources.plan_from_notification(method, params)
        assert found is None or (isinstance(found, str) and 0 < len(found) <= 80)
        return sources.from_notification(method, params, state, now), found or plan
    code, data = payload
    return sources.from_prompt_error(code, data), plan


@settings(max_examples=400)
@given(events)
def test_no_sequence_of_agent_messages_raises(sequence: list[tuple[str, Any]]) -> None:
    state: lim.LimitsState | None = None
    plan: str | None = None
    now = NOW
    for event in sequence:
        observation, plan = observe(event, state, plan, now)
        if isinstance(observation, Ignored):
            assert observation.source in sources.SOURCES and observation.reason
            continue
        if observation is None:
            continue
        assert isinstance(observation, Translated | Rejected)
        state = sources.apply(state, "agent", observation, now)
        assert state.snapshot is not None
        # What a translator accepted survives the cache's serialization.
        assert lim.state_from_json(lim.state_to_json(state)) == state
        lim.render_label(state, now)
        lim.render_detail(state, now)
        now += 60


@settings(max_examples=300)
@given(claude_info)
def test_claude_rate_limit_of_any_shape_is_translated_or_ignored(info: Any) -> None:
    observation = sources.from_session_update(
        {"sessionUpdate": "usage_update", "_meta": {claude.META_KEY: info}}, None, NOW)
    assert observation is None or isinstance(observation, Translated | Ignored)


def test_a_status_or_limit_type_of_the_wrong_type_is_ignored_with_a_reason() -> None:
    """The shapes that raised `TypeError: unhashable type` (issue 21, item 6)."""
    for info in ({"status": ["allowed"]}, {"status": {"kind": "allowed"}},
                 {"status": "rejected", "rateLimitType": ["five_hour"]},
                 {"status": "allowed", "rateLimitType": {"five_hour": 1}}):
        observation = sources.from_session_update(
            {"sessionUpdate": "usage_update", "_meta": {claude.META_KEY: info}}, None, NOW)
        assert isinstance(observation, Ignored), info
        assert observation.source == claude.SOURCE
        assert "a list" in observation.reason or "an object" in observation.reason
