"""The ACP Quotas RFD's shapes (louise.limits.quota), from the RFD's own examples
(docs/rfds/quotas-and-limits.mdx at agentclientprotocol/agent-client-protocol
7d0724d78c3e928f0e5b9604ea3a236476cfe857): every field, missing and null fields, unknown
fields ignored, malformed snapshots refused with one line, invalid entries skipped."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from louise import limits as lim
from louise.limits.quota import (
    QUOTA_EXCEEDED_CODE,
    Quantity,
    QuotaError,
    format_instant,
    parse_duration,
    parse_instant,
    parse_quota_exceeded,
    parse_quota_snapshot,
    quota_to_wire,
)
from louise.limits.quota_order import Freshness
from louise.limits.quota_project import from_v1, project, share_used
from louise.limits.quota_render import format_quantity, state_word

# ------------------------------------------------------------------ the RFD's examples

EXAMPLE_UPDATE: dict[str, Any] = json.loads("""
{
  "sessionUpdate": "quota_update",
  "updatedAt": "2026-10-06T13:10:00Z",
  "pools": [
    {
      "id": "plan",
      "label": "Plan usage",
      "state": "exhausted",
      "meters": [
        {
          "id": "five_hour",
          "label": "5-hour limit",
          "usedPercent": 100,
          "window": "PT5H",
          "resetsAt": "2026-10-06T18:00:00Z",
          "status": "exceeded"
        },
        {
          "id": "seven_day",
          "label": "Weekly limit",
          "usedPercent": 64,
          "window": "P7D",
          "resetsAt": "2026-10-09T09:00:00Z",
          "status": "ok"
        }
      ]
    },
    {
      "id": "extra_usage",
      "label": "Extra usage",
      "state": "available",
      "meters": [
        {
          "id": "monthly_cap",
          "label": "Monthly spend limit",
          "used": { "value": "12.40", "unit": "USD" },
          "limit": { "value": "50.00", "unit": "USD" },
          "usedPercent": 24.8,
          "resetsAt": "2026-11-01T00:00:00Z",
          "status": "ok"
        }
      ]
    }
  ]
}
""")

CODEX: dict[str, Any] = json.loads("""
{
  "updatedAt": "2026-10-06T13:10:00.000Z",
  "pools": [
    {"id": "codex", "state": "available", "meters": [
      {"id": "primary", "usedPercent": 42, "window": "PT5H",
       "resetsAt": "2026-10-06T18:00:00Z"},
      {"id": "secondary", "usedPercent": 17, "window": "P7D",
       "resetsAt": "2026-10-11T09:00:00Z"}]},
    {"id": "credits", "label": "Credits", "state": "available", "meters": [
      {"id": "balance", "remaining": { "value": "118.5", "unit": "credits" }},
      {"id": "spend_cap", "label": "Monthly spend limit",
       "used": { "value": "31.5", "unit": "credits" },
       "limit": { "value": "150", "unit": "credits" }, "window": "P1M"}]}
  ]
}
""")

GEMINI: dict[str, Any] = json.loads("""
{
  "updatedAt": "2026-10-06T13:10:00.000Z",
  "pools": [
    {"id": "gemini-2.5-pro", "label": "Gemini 2.5 Pro", "meters": [
      { "id": "quota", "usedPercent": 70, "resetsAt": "2026-10-07T07:00:00Z" }]},
    {"id": "gemini-2.5-flash", "label": "Gemini 2.5 Flash", "meters": [
      { "id": "quota", "usedPercent": 12, "resetsAt": "2026-10-07T07:00:00Z" }]},
    {"id": "ai_credits", "label": "AI credits", "state": "available", "meters": [
      { "id": "balance", "remaining": { "value": "950", "unit": "credits" } }]}
  ]
}
""")

COPILOT: dict[str, Any] = json.loads("""
{
  "updatedAt": "2026-10-06T13:10:00.000Z",
  "pools": [
    {"id": "premium_interactions", "label": "Premium requests", "state": "exhausted",
     "meters": [{"id": "monthly", "used": { "value": "300", "unit": "requests" },
                 "limit": { "value": "300", "unit": "requests" }, "usedPercent": 100,
                 "window": "P1M", "resetsAt": "2026-11-01T00:00:00Z",
                 "status": "exceeded"}]},
    {"id": "premium_overage", "label": "Additional premium requests",
     "state": "available",
     "meters": [{ "id": "overage", "used": { "value": "12", "unit": "requests" } }]}
  ]
}
""")

KIMI: dict[str, Any] = json.loads("""
{
  "updatedAt": "2026-10-06T13:10:00.000Z",
  "pools": [
    {"id": "plan", "meters": [
      {"id": "weekly", "label": "Weekly limit", "used": { "value": "350" },
       "limit": { "value": "1000" }, "remaining": { "value": "650" }, "window": "P7D",
       "resetsAt": "2026-10-10T00:00:00Z"},
      {"id": "five_hour", "label": "5h limit", "used": { "value": "80" },
       "limit": { "value": "100" }, "remaining": { "value": "20" }, "window": "PT5H",
       "resetsAt": "2026-10-06T16:30:00Z"}]}
  ]
}
""")

EXCEEDED_ERROR: dict[str, Any] = json.loads("""
{"code": -32003, "message": "5-hour limit reached",
 "data": {"poolId": "plan", "meterId": "five_hour", "resetsAt": "2026-10-06T18:00:00Z"}}
""")


def seconds(text: str) -> int:
    instant = parse_instant(text)
    assert instant is not None
    return instant.seconds


NOW = float(seconds("2026-10-06T13:10:00Z"))
EXAMPLES = [EXAMPLE_UPDATE, CODEX, GEMINI, COPILOT, KIMI]


# ------------------------------------------------------------------ every field


def test_the_rfd_example_reads_every_field() -> None:
    quota = parse_quota_snapshot(EXAMPLE_UPDATE)  # its `sessionUpdate` is not a field
    assert quota.updated_at.text == "2026-10-06T13:10:00Z"
    assert quota.updated_at.seconds == seconds("2026-10-06T13:10:00Z")
    assert quota.skipped == ()
    plan, extra = quota.pools
    assert (plan.id, plan.label, plan.state, plan.usable) == (
        "plan", "Plan usage", "exhausted", False)
    five, seven = plan.meters
    assert (five.id, five.label, five.used_percent, five.status) == (
        "five_hour", "5-hour limit", 100, "exceeded")
    assert five.window is not None and (five.window.text, five.window.minutes) == ("PT5H", 300)
    assert five.resets_at is not None and five.resets_at.seconds == seconds(
        "2026-10-06T18:00:00Z")
    assert (five.used, five.limit, five.remaining) == (None, None, None)
    assert seven.window is not None and seven.window.minutes == 10080
    assert (extra.id, extra.state, extra.usable) == ("extra_usage", "available", True)
    [cap] = extra.meters
    assert cap.used == Quantity("12.40", "USD") and cap.limit == Quantity("50.00", "USD")
    assert cap.used_percent == 24.8 and cap.window is None and cap.status == "ok"
    assert cap.used.is_money


@pytest.mark.parametrize("example", EXAMPLES, ids=["main", "codex", "gemini", "copilot", "kimi"])
def test_every_example_round_trips_through_the_wire(example: dict[str, Any]) -> None:
    quota = parse_quota_snapshot(example)
    wire = quota_to_wire(quota)
    assert parse_quota_snapshot(wire) == quota
    expected = {key: value for key, value in example.items() if key != "sessionUpdate"}
    assert wire == expected  # nothing added, nothing lost


def test_the_mapping_examples_keep_what_each_agent_reports() -> None:
    codex = parse_quota_snapshot(CODEX)
    balance, cap = codex.pools[1].meters
    assert balance.remaining == Quantity("118.5", "credits") and balance.used_percent is None
    assert cap.window is not None and cap.window.text == "P1M" and cap.window.minutes is None
    assert format_quantity(balance.remaining) == "118.5 credits"
    gemini = parse_quota_snapshot(GEMINI)
    assert gemini.pools[0].state is None and gemini.pools[0].usable is None
    assert gemini.pools[0].meters[0].window is None
    kimi = parse_quota_snapshot(KIMI)
    weekly = kimi.pools[0].meters[0]
    assert weekly.used == Quantity("350") and weekly.used.unit is None
    assert format_quantity(weekly.used) == "350"
    assert share_used(weekly) == 35.0  # used over limit: the client's arithmetic, shown
    copilot = parse_quota_snapshot(COPILOT)
    assert format_quantity(copilot.pools[0].meters[0].used) == "300 requests"  # type: ignore[arg-type]


# ------------------------------------------------------------------ null, missing, unknown


def test_null_is_the_same_as_missing_and_unknown_fields_are_ignored() -> None:
    with_nulls = copy.deepcopy(EXAMPLE_UPDATE)
    for pool in with_nulls["pools"]:
        pool["_meta"] = {"vendor": {"anything": [1, 2]}}
        pool["kind"] = "plan"  # a field the RFD dropped: ignored
        for meter in pool["meters"]:
            meter["_meta"] = None
            meter["limit"] = meter.get("limit")
            meter["remaining"] = None
            meter["somethingNew"] = {"x": 1}
    with_nulls["_meta"] = {"x": 1}
    with_nulls["pools"][1]["label"] = None
    quota = parse_quota_snapshot(with_nulls)
    reference = parse_quota_snapshot(EXAMPLE_UPDATE)
    assert quota.pools[0] == reference.pools[0]
    assert quota.pools[1].label is None and quota.pools[1].meters == reference.pools[1].meters


@pytest.mark.parametrize(("payload", "message"), [
    ([], "quota snapshot is not an object"),
    ({"updatedAt": "2026-10-06T13:10:00Z"}, "quota snapshot: pools is not a list"),
    ({"updatedAt": "2026-10-06T13:10:00Z", "pools": None}, "quota snapshot: pools is not a list"),
    ({"updatedAt": "2026-10-06T13:10:00Z", "pools": {}}, "quota snapshot: pools is not a list"),
    ({"pools": []}, "quota snapshot: updatedAt is not an RFC 3339 time"),
    ({"pools": [], "updatedAt": None}, "quota snapshot: updatedAt is not an RFC 3339 time"),
    ({"pools": [], "updatedAt": 1791292200}, "quota snapshot: updatedAt is not an RFC 3339 time"),
    ({"pools": [], "updatedAt": "2026-10-06 13:10"},
     "quota snapshot: updatedAt is not an RFC 3339 time"),
    ({"pools": [], "updatedAt": "2026-02-30T00:00:00Z"},
     "quota snapshot: updatedAt is not an RFC 3339 time"),
])
def test_a_malformed_snapshot_is_refused_with_one_line_naming_the_field(
        payload: Any, message: str) -> None:
    with pytest.raises(QuotaError) as caught:
        parse_quota_snapshot(payload)
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)


def test_invalid_entries_are_skipped_each_named() -> None:
    payload = copy.deepcopy(CODEX)
    pools = payload["pools"]
    pools[0]["meters"].extend([
        {"id": "empty"},  # none of usedPercent, used, remaining, status
        {"id": "flag", "usedPercent": True},
        {"id": "bad_reset", "usedPercent": 1, "resetsAt": "tomorrow"},
        {"id": "float_amount", "used": {"value": 12.5}},
        {"id": "primary", "usedPercent": 3},  # a duplicate id
        {"id": "negative", "usedPercent": -1},
        "not an object",
    ])
    pools.extend([{"id": "codex", "meters": []}, {"meters": []}, {"id": "x"}, 7])
    quota = parse_quota_snapshot(payload)
    assert [meter.id for meter in quota.pools[0].meters] == ["primary", "secondary"]
    assert [pool.id for pool in quota.pools] == ["codex", "credits"]
    assert quota.skipped == (
        "pools[0].meters[2] has none of usedPercent, used, remaining or status",
        "pools[0].meters[3] usedPercent is not a number from 0",
        "pools[0].meters[4] resetsAt is not an RFC 3339 time",
        "pools[0].meters[5] used is not a Quantity",
        "pools[0].meters[6] id 'primary' is not unique in its pool",
        "pools[0].meters[7] usedPercent is not a number from 0",
        "pools[0].meters[8] is not an object",
        "pools[2] id 'codex' is not unique",
    )  # bounded: the rest are not listed


def test_used_percent_may_exceed_a_hundred_and_quantities_are_exact() -> None:
    payload = {"updatedAt": "2026-10-06T13:10:00Z", "pools": [{"id": "p", "meters": [
        {"id": "m", "usedPercent": 112.5, "used": {"value": "0.1000000000000000055"}}]}]}
    [meter] = parse_quota_snapshot(payload).pools[0].meters
    assert meter.used_percent == 112.5
    assert meter.used is not None and meter.used.value == "0.1000000000000000055"
    assert project(parse_quota_snapshot(payload)).buckets[0].windows == ()  # no window


def test_times_and_durations() -> None:
    offset = parse_instant("2026-10-06T20:00:00.250+02:00")
    assert offset is not None and offset.micros == seconds("2026-10-06T18:00:00Z") * 10**6 + 250_000
    assert parse_instant("2026-10-06T18:00:00") is None  # no zone: not RFC 3339
    assert format_instant(seconds("2026-10-06T18:00:00Z") + 0.5) == "2026-10-06T18:00:00.500Z"
    assert [parse_duration(text).minutes for text in ("PT5H", "P7D", "P1W", "PT90M")  # type: ignore[union-attr]
            ] == [300, 10080, 10080, 90]
    assert parse_duration("P1M") is not None and parse_duration("P1M").minutes is None  # type: ignore[union-attr]
    thirty = parse_duration("PT30S")
    assert thirty is not None and thirty.seconds == 30 and thirty.minutes is None
    assert [parse_duration(text) for text in ("P", "PT", "5h", "P1DT", "PT-5H", 300)] \
        == [None] * 6


# ------------------------------------------------------------------ quotaExceeded


def test_quota_exceeded_from_the_rfd_example() -> None:
    refusal = parse_quota_exceeded(EXCEEDED_ERROR["code"], EXCEEDED_ERROR["message"],
                                   EXCEEDED_ERROR["data"], NOW)
    assert refusal is not None
    assert (refusal.message, refusal.pool_id, refusal.meter_id) == (
        "5-hour limit reached", "plan", "five_hour")
    assert refusal.resets_at == seconds("2026-10-06T18:00:00Z")


def test_quota_exceeded_with_only_a_delay_or_nothing() -> None:
    delayed = parse_quota_exceeded(QUOTA_EXCEEDED_CODE, "slow down", {"retryAfter": "PT90S"}, NOW)
    assert delayed is not None and delayed.resets_at == NOW + 90
    bare = parse_quota_exceeded(QUOTA_EXCEEDED_CODE, None, None, NOW)
    assert bare is not None and bare.resets_at is None and bare.message == "quota exceeded"
    garbled = parse_quota_exceeded(QUOTA_EXCEEDED_CODE, "x", {"resetsAt": 5, "poolId": ["p"]}, NOW)
    assert garbled is not None and (garbled.resets_at, garbled.pool_id) == (None, None)
    assert parse_quota_exceeded(-32603, "x", EXCEEDED_ERROR["data"], NOW) is None
    assert parse_quota_exceeded(True, "x", {}, NOW) is None


# ------------------------------------------------------------------ freshness


def snapshot_at(text: str, used: float = 1) -> lim.QuotaSnapshot:
    return parse_quota_snapshot({"updatedAt": text, "pools": [
        {"id": "p", "meters": [{"id": "m", "usedPercent": used}]}]})


def test_freshness_orders_by_the_agents_updated_at_per_scope() -> None:
    order = Freshness()
    assert order.accept("s1", snapshot_at("2026-10-06T13:10:00Z"))
    assert not order.accept("s1", snapshot_at("2026-10-06T13:09:59.999Z"))  # older: ignored
    assert order.accept("s1", snapshot_at("2026-10-06T13:10:00Z"))  # a tie: identical
    assert order.accept("s2", snapshot_at("2020-01-01T00:00:00Z"))  # the first of a scope
    assert order.has_session_scope()
    fresh = Freshness()
    assert fresh.accept(None, snapshot_at("2020-01-01T00:00:00Z"))
    assert not fresh.has_session_scope()


# ------------------------------------------------------------------ louise's model


def test_projection_onto_louises_buckets_and_windows() -> None:
    snapshot = project(parse_quota_snapshot(EXAMPLE_UPDATE))
    assert snapshot.default_bucket_id == "plan"
    plan, extra = snapshot.buckets
    assert (plan.label, plan.reached_type) == ("Plan usage", "exhausted")
    assert [(w.used_percent, w.duration_mins, w.resets_at) for w in plan.windows] == [
        (100, 300, seconds("2026-10-06T18:00:00Z")), (64, 10080, seconds("2026-10-09T09:00:00Z"))]
    assert extra.windows == ()  # a monthly cap without a window length is not a v1 window
    kimi = project(parse_quota_snapshot(KIMI))
    assert [w.used_percent for w in kimi.buckets[0].windows] == [35.0, 80.0]
    assert project(parse_quota_snapshot({"updatedAt": "2026-10-06T13:10:00Z", "pools": []})) \
        == lim.Snapshot((), None)


def test_from_v1_keeps_the_figures_and_invents_no_status() -> None:
    v1 = lim.parse_snapshot({"defaultBucketId": "claude", "buckets": [{
        "id": "claude", "label": "Claude", "planType": "Claude Max", "windows": [
            {"usedPercent": 24, "windowDurationMins": 300, "resetsAt": 1791300000},
            {"usedPercent": 13, "windowDurationMins": 10080, "resetsAt": 1791600000}]}]})
    quota = from_v1(v1, NOW)
    assert quota.updated_at.text == "2026-10-06T13:10:00.000Z"
    [pool] = quota.pools
    assert (pool.id, pool.label, pool.state) == ("claude", "Claude", None)
    five, seven = pool.meters
    assert (five.id, five.used_percent, five.window.text, five.status) == (  # type: ignore[union-attr]
        "five_hour", 24, "PT5H", None)
    assert five.resets_at is not None and five.resets_at.seconds == 1791300000
    assert seven.id == "seven_day"
    assert project(quota) == lim.Snapshot((lim.Bucket("claude", v1.buckets[0].windows,
                                                      "Claude"),), "claude")
    reached = lim.parse_snapshot({"defaultBucketId": "gemini", "buckets": [
        {"id": "gemini", "windows": [], "reachedType": "rate_limit"}]})
    assert from_v1(reached, NOW).pools[0].state == "exhausted"


def test_state_words_for_people() -> None:
    assert [state_word(s) for s in ("available", "exhausted", "not_enabled", "not_permitted",
                                    "not_eligible", "_vendor", "frozen")] == [
        "available", "exhausted", "not enabled", "not permitted", "not eligible",
        "unavailable", "unavailable"]
    assert format_quantity(Quantity("12.40", "USD")) == "$12.40"
    assert format_quantity(Quantity("-3", "EUR")) == "-€3"
    assert format_quantity(Quantity("7", "CHF")) == "7 CHF"
