"""LimitsState transitions (accepted, failed, loading), inspect(), and state (de)serialization."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest

from louise.limits import (
    ERROR_NO_LIVE_SESSION,
    ERROR_RESET_PASSED,
    STATUSES,
    LimitsError,
    LimitsState,
    Snapshot,
    accepted,
    failed,
    inspect,
    loading,
    parse_snapshot,
    reset_passed,
    state_from_json,
    state_to_json,
)

NOW = 4_000_000_000
RESET = NOW + 7200


def metered(resets: int = RESET, used: float = 50) -> Snapshot:
    return parse_snapshot(
        {
            "defaultBucketId": "b",
            "buckets": [
                {
                    "id": "b",
                    "windows": [
                        {"usedPercent": used, "windowDurationMins": 300, "resetsAt": resets},
                        {"usedPercent": 1, "windowDurationMins": 10080, "resetsAt": RESET + 9e5},
                    ],
                }
            ],
        }
    )


EMPTY = parse_snapshot({"buckets": []})
UNLIMITED = parse_snapshot({"buckets": [], "unlimited": True})


# --------------------------------------------------------------------------- accepted


def test_accepted_metered_snapshot_is_fresh() -> None:
    state = accepted("codex", metered(), NOW)
    assert state == LimitsState("codex", "fresh", metered(), NOW, None)


def test_accepted_empty_buckets_is_empty() -> None:
    assert accepted("codex", EMPTY, NOW).status == "empty"


def test_accepted_unlimited_is_unlimited_even_with_buckets() -> None:
    assert accepted("codex", UNLIMITED, NOW).status == "unlimited"
    both = parse_snapshot({"buckets": [{"id": "b", "windows": []}], "defaultBucketId": "b",
                           "unlimited": True})
    assert accepted("codex", both, NOW).status == "unlimited"


def test_accepted_replaces_everything_and_clears_the_error() -> None:
    old = failed(accepted("codex", metered(used=90), NOW - 100), "read failed")
    assert old.error == "read failed"
    new = accepted("codex", EMPTY, NOW)
    assert new == LimitsState("codex", "empty", EMPTY, NOW, None)
    # Nothing of the previous snapshot is merged in.
    assert new.snapshot is not None and new.snapshot.buckets == ()


# --------------------------------------------------------------------------- failed


def test_failure_after_a_good_snapshot_is_stale_and_keeps_it() -> None:
    good = accepted("codex", metered(), NOW - 60)
    state = failed(good, "ACP account limits read failed: boom")
    assert state == LimitsState(
        "codex", "stale", metered(), NOW - 60, "ACP account limits read failed: boom"
    )


@pytest.mark.parametrize("snapshot", [EMPTY, UNLIMITED])
def test_failure_after_empty_or_unlimited_keeps_that_snapshot(snapshot: Snapshot) -> None:
    state = failed(accepted("codex", snapshot, NOW), "bad")
    assert state.status == "stale"
    assert state.snapshot == snapshot


def test_failure_without_a_good_snapshot_is_unavailable() -> None:
    assert failed(None, "bad", agent="codex") == LimitsState("codex", "unavailable", error="bad")
    pending = loading(None, agent="codex")
    assert failed(pending, "bad") == LimitsState("codex", "unavailable", error="bad")
    again = failed(failed(None, "first", agent="codex"), "second")
    assert again == LimitsState("codex", "unavailable", error="second")


def test_failure_after_stale_keeps_the_snapshot_and_takes_the_new_error() -> None:
    stale = failed(accepted("codex", metered(), NOW), "first")
    state = failed(stale, "second")
    assert (state.status, state.snapshot, state.error) == ("stale", metered(), "second")


def test_failure_after_loading_with_a_previous_snapshot_is_stale() -> None:
    pending = loading(accepted("codex", metered(), NOW))
    assert failed(pending, "bad").status == "stale"
    assert failed(pending, "bad").snapshot == metered()


def test_failed_needs_an_agent_without_a_previous_state() -> None:
    with pytest.raises(ValueError):
        failed(None, "bad")


def test_failed_refuses_a_mismatched_agent() -> None:
    with pytest.raises(ValueError):
        failed(accepted("codex", EMPTY, NOW), "bad", agent="claude")
    assert failed(accepted("codex", EMPTY, NOW), "bad", agent="codex").agent == "codex"


# --------------------------------------------------------------------------- loading


def test_loading_without_previous_state_has_no_snapshot() -> None:
    assert loading(None, agent="codex") == LimitsState("codex", "loading")
    with pytest.raises(ValueError):
        loading(None)


def test_loading_keeps_the_previous_snapshot_and_its_time() -> None:
    good = accepted("codex", metered(), NOW - 5)
    assert loading(good) == LimitsState("codex", "loading", metered(), NOW - 5, None)


def test_loading_after_a_failure_clears_the_error_but_keeps_the_snapshot() -> None:
    stale = failed(accepted("codex", metered(), NOW - 5), "bad")
    assert loading(stale) == LimitsState("codex", "loading", metered(), NOW - 5, None)
    assert loading(failed(None, "bad", agent="codex")) == LimitsState("codex", "loading")


# --------------------------------------------------------------------------- inspect


@pytest.mark.parametrize(
    ("live", "observed", "status"),
    [
        (True, False, "loading"),
        (True, True, "loading"),
        (False, True, "unsupported"),
        (False, False, "not_observed"),
    ],
)
def test_inspect_without_cached_state(live: bool, observed: bool, status: str) -> None:
    assert inspect(None, "codex", NOW, live, observed) == LimitsState("codex", status)  # type: ignore[arg-type]


@pytest.mark.parametrize("snapshot", [metered(), EMPTY, UNLIMITED])
def test_inspect_keeps_a_live_current_state_unchanged(snapshot: Snapshot) -> None:
    state = accepted("codex", snapshot, NOW - 10)
    assert inspect(state, "codex", NOW, True, True) is state


@pytest.mark.parametrize("resets", [NOW, NOW - 1, 1])
def test_inspect_marks_a_passed_reset_stale_without_replenishing(resets: int) -> None:
    state = accepted("codex", metered(resets=resets, used=95), NOW - 10)
    result = inspect(state, "codex", NOW, True, True)
    assert result == LimitsState("codex", "stale", state.snapshot, NOW - 10, ERROR_RESET_PASSED)
    # The quota is not assumed replenished: the numbers are exactly the observed ones.
    assert result.snapshot is state.snapshot
    assert result.snapshot is not None
    assert result.snapshot.buckets[0].windows[0].used_percent == 95


def test_inspect_reset_one_second_ahead_is_still_current() -> None:
    state = accepted("codex", metered(resets=NOW + 1), NOW - 10)
    assert inspect(state, "codex", NOW, True, True).status == "fresh"
    assert inspect(state, "codex", NOW + 0.5, True, True).status == "fresh"
    assert inspect(state, "codex", NOW + 1, True, True).status == "stale"


def test_reset_passed_checks_every_window_of_every_bucket() -> None:
    snapshot = parse_snapshot(
        {
            "defaultBucketId": "a",
            "buckets": [
                {"id": "a", "windows": [{"usedPercent": 1, "windowDurationMins": 5,
                                         "resetsAt": NOW + 10}]},
                {"id": "b", "windows": [
                    {"usedPercent": 1, "windowDurationMins": 5, "resetsAt": NOW + 10},
                    {"usedPercent": 1, "windowDurationMins": 5, "resetsAt": NOW - 10},
                ]},
            ],
        }
    )
    assert reset_passed(snapshot, NOW)
    assert not reset_passed(snapshot, NOW - 11)
    assert not reset_passed(EMPTY, NOW)


@pytest.mark.parametrize("snapshot", [metered(), EMPTY, UNLIMITED])
def test_inspect_without_live_session_makes_a_snapshot_stale(snapshot: Snapshot) -> None:
    state = accepted("codex", snapshot, NOW - 10)
    result = inspect(state, "codex", NOW, False, True)
    assert result == LimitsState("codex", "stale", snapshot, NOW - 10, ERROR_NO_LIVE_SESSION)


def test_inspect_without_live_session_makes_a_pending_load_unavailable() -> None:
    result = inspect(loading(None, agent="codex"), "codex", NOW, False, False)
    assert result == LimitsState("codex", "unavailable", error=ERROR_NO_LIVE_SESSION)


def test_inspect_without_live_session_keeps_loading_snapshot_as_stale() -> None:
    pending = loading(accepted("codex", metered(), NOW - 10))
    result = inspect(pending, "codex", NOW, False, True)
    assert (result.status, result.snapshot, result.error) == (
        "stale",
        metered(),
        ERROR_NO_LIVE_SESSION,
    )


def test_inspect_keeps_an_existing_error() -> None:
    stale = failed(accepted("codex", metered(), NOW - 10), "read failed")
    assert inspect(stale, "codex", NOW, False, True).error == "read failed"
    unavailable = failed(None, "read failed", agent="codex")
    assert inspect(unavailable, "codex", NOW, False, True) == unavailable


def test_inspect_reset_error_wins_over_no_live_session() -> None:
    state = accepted("codex", metered(resets=NOW - 1), NOW - 10)
    assert inspect(state, "codex", NOW, False, True).error == ERROR_RESET_PASSED


def test_inspect_of_a_live_stale_state_is_unchanged() -> None:
    stale = failed(accepted("codex", metered(), NOW - 10), "bad")
    assert inspect(stale, "codex", NOW, True, True) is stale


def test_inspect_of_a_live_loading_state_is_unchanged() -> None:
    pending = loading(None, agent="codex")
    assert inspect(pending, "codex", NOW, True, True) is pending


def test_inspect_does_not_modify_its_input() -> None:
    state = accepted("codex", metered(resets=NOW - 1), NOW - 10)
    before = dataclasses.replace(state)
    inspect(state, "codex", NOW, False, True)
    assert state == before and state.status == "fresh"


def test_inspect_refuses_a_state_of_another_agent() -> None:
    with pytest.raises(ValueError):
        inspect(accepted("codex", EMPTY, NOW), "claude", NOW, True, True)


# --------------------------------------------------------------------------- invariants


def test_state_is_immutable() -> None:
    state = accepted("codex", EMPTY, NOW)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.status = "stale"  # type: ignore[misc]


def test_impossible_states_cannot_be_built() -> None:
    with pytest.raises(ValueError):
        LimitsState("codex", "weird")  # type: ignore[arg-type]
    for status in ("fresh", "empty", "unlimited", "stale"):
        with pytest.raises(ValueError):
            LimitsState("codex", status)  # type: ignore[arg-type]
    for status in ("not_observed", "unsupported", "unavailable"):
        with pytest.raises(ValueError):
            LimitsState("codex", status, EMPTY, NOW)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        LimitsState("codex", "fresh", EMPTY, math.nan)
    assert LimitsState("codex", "loading", EMPTY, NOW).snapshot == EMPTY
    assert set(STATUSES) == {
        "not_observed", "unsupported", "loading", "fresh", "empty", "unlimited", "unavailable",
        "stale",
    }


# --------------------------------------------------------------------------- serialization

ALL_KINDS = [
    accepted("codex", metered(), NOW),
    accepted("codex", EMPTY, NOW + 0.25),
    accepted("codex", UNLIMITED, NOW),
    failed(accepted("codex", metered(), NOW), "read failed"),
    failed(None, "boom", agent="codex"),
    loading(None, agent="codex"),
    loading(accepted("codex", metered(), NOW)),
    LimitsState("codex", "not_observed"),
    LimitsState("codex", "unsupported"),
]


@pytest.mark.parametrize("state", ALL_KINDS, ids=lambda s: s.status)
def test_state_json_round_trip_is_exact(state: LimitsState) -> None:
    text = json.dumps(state_to_json(state), allow_nan=False)
    assert state_from_json(json.loads(text)) == state


def test_state_to_json_shape() -> None:
    state = failed(accepted("codex", EMPTY, NOW), "bad")
    assert state_to_json(state) == {
        "agent": "codex",
        "status": "stale",
        "snapshot": {"buckets": [], "unlimited": False},
        "updatedAt": NOW,
        "error": "bad",
    }


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        {"status": "fresh"},
        {"agent": "", "status": "not_observed"},
        {"agent": 1, "status": "not_observed"},
        {"agent": "codex", "status": "bogus"},
        {"agent": "codex"},
        {"agent": "codex", "status": "fresh", "snapshot": None, "updatedAt": NOW},
        {"agent": "codex", "status": "unavailable", "snapshot": {"buckets": []}},
        {"agent": "codex", "status": "empty", "snapshot": {"buckets": []}, "updatedAt": "1"},
        {"agent": "codex", "status": "empty", "snapshot": {"buckets": []}, "updatedAt": True},
        {"agent": "codex", "status": "empty", "snapshot": {"buckets": []}, "error": 5},
    ],
)
def test_state_from_json_rejects_malformed_values(value: Any) -> None:
    with pytest.raises(ValueError):
        state_from_json(value)


def test_state_from_json_revalidates_the_snapshot() -> None:
    value = {"agent": "codex", "status": "fresh", "snapshot": {"buckets": [{"id": ""}]},
             "updatedAt": NOW}
    with pytest.raises(LimitsError):
        state_from_json(value)


def test_the_statuses_are_the_status_types_values() -> None:
    """STATUSES is written out (typing is not imported when louise runs, issue 25 item 5):
    it must stay the `Status` type's values, in their order."""
    import ast
    from pathlib import Path

    import louise.limits.state as state_module

    source = Path(state_module.__file__).read_text()
    start = source.index("Status = Literal[") + len("Status = Literal[")
    values = ast.literal_eval("(" + source[start:source.index("]", start)] + ")")
    assert values == state_module.STATUSES
    assert len(set(values)) == len(values) == 8
