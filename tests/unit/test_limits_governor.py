"""The governor's pure decisions (issue 26 items 3, 4): a turn's quota cost, the risk of
the next turn, budgets, the reset of a refused turn, and the resume lease processes share
through the limits cache."""

from __future__ import annotations

from louise import limits as lim
from louise.limits import pace
from louise.limits.cost import TurnCost, turn_cost
from louise.limits.governor import Spent, block_reset, budget_refusal, parse_budget_key, risk
from louise.storage.limits_shared import Lease, add_spent, decide, parse_lease, parse_spent, settle

NOW = 1_800_000_000.0
RESET = int(NOW) + 2 * 3600
WEEK = int(NOW) + 4 * 86400


def snapshot(five: float, seven: float = 10, reset: int = RESET,
             reached: str | None = None) -> lim.Snapshot:
    bucket: dict[str, object] = {"id": "claude", "label": "Claude", "windows": [
        {"usedPercent": five, "windowDurationMins": 300, "resetsAt": reset},
        {"usedPercent": seven, "windowDurationMins": 10080, "resetsAt": WEEK}]}
    if reached:
        bucket["reachedType"] = reached
    return lim.parse_snapshot({"defaultBucketId": "claude", "buckets": [bucket]})


def state(five: float, **kw: object) -> lim.LimitsState:
    return lim.translated("claude", snapshot(five, **kw), "claude rate-limit metadata",  # type: ignore[arg-type]
                          NOW)


# ------------------------------------------------------------------ cost


def test_cost_of_a_turn_from_the_figures_before_and_after() -> None:
    before, after = snapshot(20, 10), snapshot(24.4, 10.6)
    cost = turn_cost(before, after)
    assert cost is not None
    assert cost.text() == "4% of the 5h window, <1% of the 7d window"
    shared = turn_cost(before, after, shared_with=1)
    assert shared is not None and shared.text().endswith(
        "(shared: 1 other session ran meanwhile)")
    assert TurnCost.from_record(cost.to_record()) == cost


def test_no_cost_without_new_figures_or_across_a_reset() -> None:
    same = snapshot(20)
    assert turn_cost(same, same) is None  # nothing new came: unknown, not zero
    assert turn_cost(None, snapshot(20)) is None
    assert turn_cost(snapshot(90, reset=RESET), snapshot(5, reset=RESET + 18000)) is not None
    crossed = turn_cost(snapshot(90, reset=RESET), snapshot(5, reset=RESET + 18000))
    assert crossed is not None and [c.window[1] for c in crossed.windows] == [10080]


# ------------------------------------------------------------------ risk and resets


def test_risk_from_a_full_window_or_the_pace() -> None:
    assert risk(state(50), None, NOW) is None
    near = risk(state(96), None, NOW)
    assert near == "Claude 5h window has 4% left (resets in 2h)"
    history = pace.record(None, state(60), NOW, active=0.0)
    history = pace.record(history, lim.translated("claude", snapshot(80), "x", NOW + 60),
                          NOW + 60, active=600.0)  # 20 points in 10 minutes of work
    fast = risk(lim.translated("claude", snapshot(80), "x", NOW + 60), history, NOW + 60,
                active=600.0)
    assert fast == ("Claude 5h window runs out after ~10m of work at this pace "
                    "(resets in 2h)")
    stale = lim.failed(state(99), "x")
    assert risk(stale, None, NOW) is None  # not current figures


def test_the_reset_of_a_refused_turn_is_the_agents_or_unknown() -> None:
    assert block_reset(state(100, reached="rate_limit"), NOW) == RESET
    assert block_reset(state(60, reached="rate_limit"), NOW) is None  # no full window
    assert block_reset(None, NOW) is None


# ------------------------------------------------------------------ budgets


def test_budgets_refuse_what_would_pass_the_share() -> None:
    assert parse_budget_key("5h") == 300 and parse_budget_key("7d") == 10080
    assert parse_budget_key("5x") is None and parse_budget_key("0h") is None
    budgets = {"/w": {300: 10.0}}
    window = ("claude", 300, RESET)
    current = state(40)
    assert budget_refusal(current, "/w", budgets, [], NOW) is None
    assert budget_refusal(current, "/w", budgets, [Spent("/w", window, 4.0, 2)], NOW) is None
    reason = budget_refusal(current, "/w", budgets, [Spent("/w", window, 8.0, 2)], NOW)
    assert reason == ("the budget of /w is 10% of the 5h window and its turns used 8% of it "
                      "this cycle (about 4% a turn); it resets in 2h")
    assert budget_refusal(current, "/other", budgets, [Spent("/w", window, 80.0, 1)],
                          NOW) is None
    spent = add_spent([], "/w", [(window, 3.0)], NOW)
    spent = add_spent(spent, "/w", [(window, 2.0), (("claude", 300, int(NOW) - 1), 9.0)], NOW)
    assert spent == [Spent("/w", window, 5.0, 2)]  # a past cycle is not kept
    assert parse_spent([{"workspace": "/w", "bucket": "claude", "minutes": 300,
                         "resetsAt": RESET, "percent": 5.0, "turns": 2}, {"bad": 1}]) == spent


# ------------------------------------------------------------------ the resume lease


def alive(pid: int, start: str | None) -> bool:
    return pid in (1, 2)


def test_one_probe_per_reset_the_others_wait_then_go_or_park() -> None:
    a, b = (1, "s", "claude:a"), (2, "s", "claude:b")
    decision, lease, _ = decide(None, RESET, a, RESET + 1.0, alive)
    assert decision == "probe" and lease is not None
    assert decide(lease, RESET, b, RESET + 1.5, alive)[0] == "wait"
    assert decide(lease, RESET, a, RESET + 1.5, alive)[0] == "probe"  # asked again: ours
    refused = settle(lease, a, False, RESET + 600)
    assert refused is not None and refused.outcome == "refused"
    assert decide(refused, RESET, b, RESET + 2, alive) == ("park", None, RESET + 600)
    again, next_lease, _ = decide(refused, RESET, b, RESET + 601, alive)
    assert again == "probe" and next_lease is not None and next_lease.resets_at == RESET + 600
    accepted = settle(next_lease, b, True, None)
    assert accepted is not None
    assert decide(accepted, RESET + 600, a, RESET + 602, alive)[0] == "go"
    assert settle(accepted, a, True, None) is None  # not a's to settle


def test_a_dead_or_silent_probe_is_taken_over() -> None:
    gone = Lease(RESET, 99, "x", "claude:c", RESET + 1.0)
    me = (1, "s", "claude:a")
    assert decide(gone, RESET, me, RESET + 2, alive)[0] == "probe"
    silent = Lease(RESET, 2, "s", "claude:b", RESET + 1.0)
    assert decide(silent, RESET, me, RESET + 500, alive)[0] == "probe"
    assert parse_lease({"resetsAt": RESET, "holder": {"pid": 1, "start": None,
                                                      "session": "k"},
                        "claimedAt": 1.5, "outcome": "pending", "next": None}) == Lease(
        RESET, 1, None, "k", 1.5)
    assert parse_lease({"resetsAt": "soon"}) is None


def test_a_read_in_flight_keeps_the_risk_of_the_figures_before_it() -> None:
    """After every turn louise reads the limits again; while that read is out the state
    is `loading` (not current figures), and a send in that moment went without the
    confirmation the figures just before it called for."""
    from types import SimpleNamespace
    from typing import Any

    from louise.config.limits import LimitsConfig
    from louise.registry.governor import Governor

    held: dict[str, lim.LimitsState] = {}
    observer: Any = SimpleNamespace(inspect=lambda agent, now: held[agent],
                                    pace_history=lambda agent: None,
                                    active_time=lambda agent: None)
    table: Any = SimpleNamespace(runtimes={"claude": object()})
    governor = Governor(table, None, observer, None, LimitsConfig(),  # type: ignore[arg-type]
                        lambda: NOW, park=False)
    held["claude"] = state(96)
    near = governor.risk("claude")
    assert near == "Claude 5h window has 4% left (resets in 2h)"
    held["claude"] = lim.loading(state(96))
    assert governor.risk("claude") == near  # the read in flight: the figures before it
    held["claude"] = state(50)
    assert governor.risk("claude") is None
    held["claude"] = lim.loading(state(50))
    assert governor.risk("claude") is None
    held["claude"] = lim.failed(state(99), "x")
    assert governor.risk("claude") is None  # not current figures
    held["claude"] = lim.loading(lim.failed(state(99), "x"))
    assert governor.risk("claude") is None
