"""Property tests: validation only ever raises LimitsError, valid snapshots survive every
serialization unchanged, and a rejected payload never changes a state."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from louise.limits import (
    LimitsError,
    LimitsState,
    Snapshot,
    accepted,
    failed,
    loading,
    parse_snapshot,
    render_detail,
    render_label,
    snapshot_to_wire,
    state_from_json,
    state_to_json,
    threshold_alerts,
)
from louise.storage.limits_cache import LimitsCache

NOW = 4_000_000_000

# --------------------------------------------------------------------------- strategies

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)

texts = st.text(min_size=1, max_size=12)
optional_texts = st.one_of(st.none(), texts)
positive_ints = st.integers(min_value=1, max_value=2**62)
# Integers may arrive as floats with no fractional part.
positive_integers = st.one_of(
    positive_ints, st.integers(min_value=1, max_value=2**52).map(float)
)
percents = st.one_of(
    st.integers(min_value=0, max_value=100),
    st.floats(min_value=0, max_value=100, allow_nan=False),
)
balances = st.one_of(
    st.integers(min_value=0, max_value=2**62),
    st.floats(min_value=0, allow_nan=False, allow_infinity=False),
)


def omit_none(value: dict[str, Any], drop_nulls: bool) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None} if drop_nulls else value


@st.composite
def wire_windows(draw: st.DrawFn) -> dict[str, Any]:
    value = {
        "usedPercent": draw(percents),
        "windowDurationMins": draw(positive_integers),
        "resetsAt": draw(positive_integers),
    }
    if draw(st.booleans()):
        value["unknownField"] = draw(json_scalars)
    return value


@st.composite
def wire_buckets(draw: st.DrawFn, bucket_id: str) -> dict[str, Any]:
    credits = draw(
        st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {},
                optional={
                    "balance": st.one_of(st.none(), balances),
                    "unlimited": st.one_of(st.none(), st.booleans()),
                },
            ),
        )
    )
    value = {
        "id": bucket_id,
        "windows": draw(st.lists(wire_windows(), max_size=4)),
        "label": draw(optional_texts),
        "reachedType": draw(optional_texts),
        "planType": draw(optional_texts),
        "credits": credits,
    }
    return omit_none(value, draw(st.booleans()))


@st.composite
def wire_snapshots(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(texts, max_size=4, unique=True))
    buckets = [draw(wire_buckets(bucket_id)) for bucket_id in ids]
    reset = draw(
        st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"availableCount": st.integers(min_value=0, max_value=2**40)},
                optional={
                    "credits": st.one_of(
                        st.none(),
                        st.lists(
                            st.fixed_dictionaries(
                                {},
                                optional={
                                    "id": optional_texts,
                                    "expiresAt": st.one_of(st.none(), positive_integers),
                                    "title": optional_texts,
                                    "description": optional_texts,
                                },
                            ),
                            max_size=3,
                        ),
                    )
                },
            ),
        )
    )
    value: dict[str, Any] = {
        "buckets": buckets,
        "defaultBucketId": draw(st.sampled_from(ids)) if ids else None,
        "unlimited": draw(st.one_of(st.none(), st.booleans())),
        "resetCredits": reset,
    }
    return omit_none(value, draw(st.booleans()))


def _first_bucket(payload: dict[str, Any]) -> dict[str, Any]:
    if not payload["buckets"]:
        payload["buckets"].append({"id": "added", "windows": []})
        payload["defaultBucketId"] = "added"
    bucket: dict[str, Any] = payload["buckets"][0]
    return bucket


def _first_window(payload: dict[str, Any]) -> dict[str, Any]:
    bucket = _first_bucket(payload)
    if not bucket["windows"]:
        bucket["windows"].append({"usedPercent": 1, "windowDurationMins": 1, "resetsAt": 1})
    window: dict[str, Any] = bucket["windows"][0]
    return window


def _set(target: dict[str, Any], key: str, value: object) -> None:
    target[key] = value


# Each mutation certainly makes a valid payload invalid.
MUTATIONS = [
    lambda p, bad: _set(p, "buckets", bad if not isinstance(bad, list) else {"0": bad}),
    lambda p, bad: _set(p, "unlimited", "true"),
    lambda p, bad: _set(_first_bucket(p), "id", ""),
    lambda p, bad: p["buckets"].append(copy.deepcopy(_first_bucket(p))),
    lambda p, bad: _set(_first_bucket(p), "windows", {"not": "an array"}),
    lambda p, bad: _set(_first_bucket(p), "label", ""),
    lambda p, bad: _set(_first_bucket(p), "credits", {"balance": -1}),
    lambda p, bad: _set(_first_window(p), "usedPercent", 100.5),
    lambda p, bad: _set(_first_window(p), "usedPercent", True),
    lambda p, bad: _set(_first_window(p), "windowDurationMins", 1.5),
    lambda p, bad: _set(_first_window(p), "resetsAt", "1"),
    lambda p, bad: _first_window(p).pop("resetsAt"),
    lambda p, bad: (_first_bucket(p), _set(p, "defaultBucketId", "\x00missing")),
    lambda p, bad: (_first_bucket(p), p.pop("defaultBucketId")),
    lambda p, bad: _set(p, "resetCredits", {"availableCount": -1}),
    lambda p, bad: _set(p, "resetCredits", {"availableCount": 1, "credits": [{"expiresAt": 0}]}),
]


@st.composite
def invalid_payloads(draw: st.DrawFn) -> object:
    payload = copy.deepcopy(draw(wire_snapshots()))
    payload.setdefault("buckets", [])
    mutation = draw(st.sampled_from(MUTATIONS))
    mutation(payload, draw(json_values))
    return payload


# --------------------------------------------------------------------------- properties


@settings(max_examples=300)
@given(json_values)
def test_arbitrary_json_raises_nothing_but_limits_error(value: object) -> None:
    try:
        result = parse_snapshot(value)
    except LimitsError:
        return
    assert isinstance(result, Snapshot)


@settings(max_examples=200)
@given(wire_snapshots(), st.lists(st.integers(min_value=0, max_value=7), max_size=4), json_values)
def test_valid_payload_with_an_arbitrary_value_grafted_in_raises_only_limits_error(
    payload: dict[str, Any], path: list[int], graft: object
) -> None:
    # Walk down a random path of objects and arrays, then replace what is there.
    parent: Any = None
    key: Any = None
    target: Any = payload
    for step in path:
        if isinstance(target, dict) and target:
            parent, key = target, sorted(target)[step % len(target)]
        elif isinstance(target, list) and target:
            parent, key = target, step % len(target)
        else:
            break
        target = parent[key]
    if parent is None:
        payload["buckets"] = graft
    else:
        parent[key] = graft
    with contextlib.suppress(LimitsError):
        parse_snapshot(payload)


@settings(max_examples=200)
@given(wire_snapshots())
def test_valid_snapshot_round_trips_through_the_wire_shape(payload: dict[str, Any]) -> None:
    snapshot = parse_snapshot(payload)
    wire = snapshot_to_wire(snapshot)
    assert parse_snapshot(wire) == snapshot
    assert parse_snapshot(json.loads(json.dumps(wire, allow_nan=False))) == snapshot


@settings(max_examples=200)
@given(wire_snapshots(), st.floats(min_value=0, max_value=2**40, allow_nan=False), st.booleans())
def test_valid_state_round_trips_through_json_unchanged(
    payload: dict[str, Any], now: float, stale: bool
) -> None:
    state = accepted("agent", parse_snapshot(payload), now)
    if stale:
        state = failed(state, "read failed")
    text = json.dumps(state_to_json(state), allow_nan=False)
    assert state_from_json(json.loads(text)) == state


@settings(max_examples=60, deadline=None)
@given(wire_snapshots(), st.floats(min_value=0, max_value=2**40, allow_nan=False))
def test_valid_state_round_trips_through_the_cache_file_unchanged(
    payload: dict[str, Any], now: float
) -> None:
    state = accepted("agent", parse_snapshot(payload), now)
    with tempfile.TemporaryDirectory() as directory:
        cache = LimitsCache(Path(directory) / "limits.json")
        stored = cache.record_state("agent", state)
        assert stored == state
        view = LimitsCache(cache.path).load()
        assert view.warnings == ()
        assert view.states["agent"] == state


@settings(max_examples=200)
@given(invalid_payloads())
def test_generated_invalid_payloads_are_rejected(payload: object) -> None:
    try:
        parse_snapshot(payload)
    except LimitsError as error:
        assert str(error)
    else:
        raise AssertionError(f"accepted an invalid payload: {payload!r}")


def _receive(state: LimitsState, payload: object, now: float) -> LimitsState:
    """What a registry does with a pushed update: accept it whole or record the failure."""
    try:
        snapshot = parse_snapshot(payload)
    except LimitsError as error:
        return failed(state, f"malformed ACP account limits snapshot: {error}")
    return accepted(state.agent, snapshot, now)


@settings(max_examples=200)
@given(wire_snapshots(), invalid_payloads(), st.sampled_from(["fresh", "stale", "loading"]))
def test_a_rejected_payload_never_changes_the_kept_snapshot(
    good: dict[str, Any], bad: object, kind: str
) -> None:
    state = accepted("agent", parse_snapshot(good), NOW)
    if kind == "stale":
        state = failed(state, "earlier failure")
    elif kind == "loading":
        state = loading(state)
    before = copy.deepcopy(state)
    after = _receive(state, bad, NOW + 60)
    assert state == before  # the old value is untouched
    assert after.snapshot == state.snapshot
    assert after.updated_at == state.updated_at
    assert after.status == "stale"
    assert after.error is not None and after.error.startswith("malformed ACP account limits")


@settings(max_examples=150)
@given(wire_snapshots(), st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_rendering_never_fails_on_a_valid_snapshot(payload: dict[str, Any], offset: float) -> None:
    state = accepted("agent", parse_snapshot(payload), NOW)
    now = NOW + offset
    for candidate in (state, failed(state, "x"), loading(state)):
        result = render_label(candidate, now)
        assert result is not None
        assert "\n" not in result.text
        lines = render_detail(candidate, now)
        assert all("\n" not in line and "\r" not in line for line in lines)
    alerts, _ = threshold_alerts(state, None, now)
    assert all(alert.level in ("warning", "error") for alert in alerts)
    assert math.isfinite(now)
