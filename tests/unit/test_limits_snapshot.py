"""parse_snapshot(): every rule and every stable message (reset credits, the check order
and snapshot_to_wire: test_limits_snapshot_order.py)."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import pytest

from louise.limits import (
    MSG_BUCKET_ID,
    MSG_BUCKET_METADATA,
    MSG_BUCKET_UNIQUE_WINDOWS,
    MSG_DEFAULT_BUCKET_MALFORMED,
    MSG_DEFAULT_BUCKET_MISSING,
    MSG_SNAPSHOT_BUCKETS,
    MSG_SNAPSHOT_UNLIMITED,
    MSG_WINDOW,
    VALIDATION_MESSAGES,
    Bucket,
    Credits,
    LimitsError,
    ResetCredit,
    ResetCredits,
    Snapshot,
    Window,
    parse_snapshot,
)

FAR = 4102444800  # 2100-01-01T00:00:00Z

# The example read result of docs/account-limits-v1.md.
DOC_EXAMPLE: dict[str, Any] = {
    "defaultBucketId": "requests",
    "buckets": [
        {
            "id": "requests",
            "label": "Requests",
            "windows": [
                {"usedPercent": 82, "windowDurationMins": 300, "resetsAt": 4102444800},
                {"usedPercent": 40.5, "windowDurationMins": 10080, "resetsAt": 4102452000},
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


def window(used: object = 50, mins: object = 300, resets: object = FAR) -> dict[str, Any]:
    return {"usedPercent": used, "windowDurationMins": mins, "resetsAt": resets}


def bucket(bucket_id: object = "b", windows: object = None, **extra: object) -> dict[str, Any]:
    value: dict[str, Any] = {"id": bucket_id, "windows": [window()] if windows is None else windows}
    value.update(extra)
    return value


def snap(*buckets: dict[str, Any], **extra: object) -> dict[str, Any]:
    value: dict[str, Any] = {"buckets": list(buckets)}
    if buckets:
        value["defaultBucketId"] = buckets[0]["id"]
    value.update(extra)
    return value


def rejects(payload: object, message: str) -> None:
    with pytest.raises(LimitsError) as info:
        parse_snapshot(payload)
    assert str(info.value) == message
    assert info.value.message == message


# --------------------------------------------------------------------------- accepted values


def test_doc_example_parses_to_snake_case_typed_values() -> None:
    result = parse_snapshot(DOC_EXAMPLE)
    assert result == Snapshot(
        buckets=(
            Bucket(
                id="requests",
                windows=(Window(82, 300, 4102444800), Window(40.5, 10080, 4102452000)),
                label="Requests",
                reached_type="short_window",
                plan_type="example-plan",
                credits=Credits(balance=7.5, unlimited=False),
            ),
        ),
        default_bucket_id="requests",
        unlimited=False,
        reset_credits=ResetCredits(
            available_count=1,
            credits=(
                ResetCredit(
                    id="reset-1",
                    expires_at=4102448400,
                    title="Window reset",
                    description="One available reset credit.",
                ),
            ),
        ),
    )
    assert result.buckets[0].windows[0].used_percent == 82
    assert result.buckets[0].windows[0].duration_mins == 300
    assert result.buckets[0].windows[0].resets_at == 4102444800
    assert result.default_bucket is result.buckets[0]
    assert result.bucket("requests") is result.buckets[0]
    assert result.bucket("nope") is None


def test_update_notification_example_is_an_unlimited_snapshot() -> None:
    result = parse_snapshot({"buckets": [], "unlimited": True})
    assert result == Snapshot(buckets=(), default_bucket_id=None, unlimited=True)


def test_empty_buckets_is_valid_and_not_unlimited() -> None:
    result = parse_snapshot({"buckets": []})
    assert result.buckets == ()
    assert result.unlimited is False
    assert result.default_bucket is None


def test_snapshot_is_immutable() -> None:
    result = parse_snapshot(DOC_EXAMPLE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.unlimited = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.buckets[0].windows[0].used_percent = 1  # type: ignore[misc]
    assert isinstance(result.buckets, tuple)
    assert isinstance(result.buckets[0].windows, tuple)


def test_parsing_does_not_modify_the_payload() -> None:
    payload = copy.deepcopy(DOC_EXAMPLE)
    parse_snapshot(payload)
    assert payload == DOC_EXAMPLE


@pytest.mark.parametrize("used", [0, 100, 0.0, 100.0, 40.5, 1e-9, 99.999])
def test_used_percent_accepts_numbers_in_the_inclusive_range(used: float) -> None:
    assert parse_snapshot(snap(bucket(windows=[window(used=used)]))).buckets[0].windows[0]


def test_integers_may_be_written_with_a_zero_fraction() -> None:
    result = parse_snapshot(snap(bucket(windows=[window(mins=300.0, resets=4102444800.0)])))
    parsed = result.buckets[0].windows[0]
    assert parsed.duration_mins == 300 and type(parsed.duration_mins) is int
    assert parsed.resets_at == 4102444800 and type(parsed.resets_at) is int
    counted = parse_snapshot({"buckets": [], "resetCredits": {"availableCount": 2.0}})
    assert counted.reset_credits == ResetCredits(2)
    assert type(counted.reset_credits.available_count) is int


def test_null_counts_as_absent_for_every_optional_field() -> None:
    payload = {
        "buckets": [
            {
                "id": "b",
                "windows": [],
                "label": None,
                "reachedType": None,
                "planType": None,
                "credits": None,
            }
        ],
        "defaultBucketId": "b",
        "unlimited": None,
        "resetCredits": None,
    }
    assert parse_snapshot(payload) == Snapshot((Bucket("b"),), "b", False, None)
    assert parse_snapshot({"buckets": [], "defaultBucketId": None}) == Snapshot(())
    details = {
        "buckets": [],
        "resetCredits": {
            "availableCount": 0,
            "credits": [{"id": None, "expiresAt": None, "title": None, "description": None}],
        },
    }
    assert parse_snapshot(details).reset_credits == ResetCredits(0, (ResetCredit(),))
    assert parse_snapshot(
        {"buckets": [], "resetCredits": {"availableCount": 0, "credits": None}}
    ).reset_credits == ResetCredits(0, None)
    credit = parse_snapshot(
        snap(bucket(credits={"balance": None, "unlimited": None}))
    ).buckets[0].credits
    assert credit == Credits()


def test_unknown_fields_are_ignored_at_every_level() -> None:
    payload = copy.deepcopy(DOC_EXAMPLE)
    payload["future"] = {"x": 1}
    payload["buckets"][0]["future"] = [1]
    payload["buckets"][0]["windows"][0]["future"] = "x"
    payload["buckets"][0]["credits"]["currency"] = "USD"
    payload["resetCredits"]["future"] = True
    payload["resetCredits"]["credits"][0]["future"] = None
    assert parse_snapshot(payload) == parse_snapshot(DOC_EXAMPLE)


def test_empty_objects_are_accepted_where_everything_is_optional() -> None:
    payload = snap(bucket(windows=[], credits={}))
    payload["resetCredits"] = {"availableCount": 3, "credits": [{}]}
    result = parse_snapshot(payload)
    assert result.buckets[0].credits == Credits()
    assert result.buckets[0].windows == ()
    assert result.reset_credits == ResetCredits(3, (ResetCredit(),))


def test_zero_and_fractional_balances_are_accepted() -> None:
    for balance in (0, 0.0, 7.5, 10**12):
        credits = parse_snapshot(snap(bucket(credits={"balance": balance}))).buckets[0].credits
        assert credits == Credits(balance=balance)


def test_top_level_unlimited_with_buckets_keeps_them() -> None:
    result = parse_snapshot(snap(bucket("a"), unlimited=True))
    assert result.unlimited is True
    assert [b.id for b in result.buckets] == ["a"]


def test_windows_need_not_be_sorted_or_unique() -> None:
    windows = [window(mins=10080), window(mins=300), window(mins=300)]
    assert len(parse_snapshot(snap(bucket(windows=windows))).buckets[0].windows) == 3


def test_past_reset_time_passes_shape_validation() -> None:
    parsed = parse_snapshot(snap(bucket(windows=[window(resets=1)])))
    assert parsed.buckets[0].windows[0].resets_at == 1


def test_reset_credit_details_need_not_match_the_count_or_be_unique() -> None:
    payload = {
        "buckets": [],
        "resetCredits": {"availableCount": 5, "credits": [{"id": "x"}, {"id": "x"}]},
    }
    reset = parse_snapshot(payload).reset_credits
    assert reset is not None and reset.available_count == 5 and reset.credits is not None
    assert len(reset.credits) == 2


def test_limits_error_is_a_value_error_with_exactly_the_message() -> None:
    error = LimitsError(MSG_WINDOW)
    assert isinstance(error, ValueError)
    assert str(error) == MSG_WINDOW
    assert len(set(VALIDATION_MESSAGES)) == 9


# --------------------------------------------------------------------------- 1. buckets array


@pytest.mark.parametrize(
    "payload",
    [
        None,
        [],
        "buckets",
        1,
        True,
        {},
        {"buckets": None},
        {"buckets": {}},
        {"buckets": {"1": {"id": "b"}}},
        {"buckets": "[]"},
        {"buckets": 0},
        {"Buckets": []},  # field names are case-sensitive
    ],
)
def test_snapshot_must_contain_a_dense_buckets_array(payload: object) -> None:
    rejects(payload, MSG_SNAPSHOT_BUCKETS)


# --------------------------------------------------------------------------- 2. unlimited


@pytest.mark.parametrize("value", ["true", "false", 1, 0, 1.0, [], {}])
def test_unlimited_must_be_a_boolean(value: object) -> None:
    rejects({"buckets": [], "unlimited": value}, MSG_SNAPSHOT_UNLIMITED)


# --------------------------------------------------------------------------- 3. buckets


@pytest.mark.parametrize("raw", [None, 1, "b", [], ["b"], True])
def test_a_bucket_that_is_not_an_object_has_no_id(raw: object) -> None:
    rejects({"buckets": [raw], "defaultBucketId": "b"}, MSG_BUCKET_ID)


@pytest.mark.parametrize("bucket_id", [None, "", 1, True, ["b"], {"id": "b"}])
def test_bucket_id_must_be_a_non_empty_string(bucket_id: object) -> None:
    payload = snap(bucket("b"))
    payload["buckets"].append(bucket(bucket_id))
    rejects(payload, MSG_BUCKET_ID)


def test_missing_bucket_id() -> None:
    rejects({"buckets": [{"windows": []}]}, MSG_BUCKET_ID)


def test_bucket_ids_must_be_unique() -> None:
    rejects(snap(bucket("b"), bucket("b")), MSG_BUCKET_UNIQUE_WINDOWS)


@pytest.mark.parametrize("windows", [None, {}, "[]", 1, {"0": window()}])
def test_bucket_windows_must_be_an_array(windows: object) -> None:
    raw: dict[str, Any] = {"id": "b"}
    if windows is not None:
        raw["windows"] = windows
    rejects({"buckets": [raw], "defaultBucketId": "b"}, MSG_BUCKET_UNIQUE_WINDOWS)


def test_missing_windows() -> None:
    rejects({"buckets": [{"id": "b"}], "defaultBucketId": "b"}, MSG_BUCKET_UNIQUE_WINDOWS)


@pytest.mark.parametrize(
    "extra",
    [
        {"label": ""},
        {"label": 1},
        {"label": True},
        {"label": ["x"]},
        {"reachedType": ""},
        {"reachedType": 3},
        {"planType": ""},
        {"planType": {}},
        {"credits": 1},
        {"credits": []},
        {"credits": "7.5"},
        {"credits": True},
        {"credits": {"balance": -1}},
        {"credits": {"balance": -0.01}},
        {"credits": {"balance": "7.5"}},
        {"credits": {"balance": True}},
        {"credits": {"balance": math.inf}},
        {"credits": {"balance": math.nan}},
        {"credits": {"balance": []}},
        {"credits": {"unlimited": "false"}},
        {"credits": {"unlimited": 0}},
        {"credits": {"unlimited": 1}},
    ],
)
def test_bucket_metadata_must_be_well_typed(extra: dict[str, object]) -> None:
    rejects(snap(bucket("b", **extra)), MSG_BUCKET_METADATA)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        1,
        "w",
        [],
        [50, 300, FAR],
        window(used=-0.01),
        window(used=100.01),
        window(used=-1),
        window(used=101),
        window(used="50"),
        window(used=True),
        window(used=False),
        window(used=None),
        window(used=math.nan),
        window(used=math.inf),
        window(mins=0),
        window(mins=-300),
        window(mins=1.5),
        window(mins=300.5),
        window(mins="300"),
        window(mins=True),
        window(mins=None),
        window(mins=math.inf),
        window(mins=math.nan),
        window(resets=0),
        window(resets=-1),
        window(resets=0.0),
        window(resets=4102444800.5),
        window(resets="4102444800"),
        window(resets=False),
        window(resets=None),
        {"windowDurationMins": 300, "resetsAt": FAR},
        {"usedPercent": 10, "resetsAt": FAR},
        {"usedPercent": 10, "windowDurationMins": 300},
    ],
)
def test_window_must_be_well_formed(raw: object) -> None:
    rejects(snap(bucket("b", windows=[window(), raw])), MSG_WINDOW)


# --------------------------------------------------------------------------- 4./5. default


@pytest.mark.parametrize("default", ["", "nope", 1, True, ["b"], {"id": "b"}, "B"])
def test_default_bucket_must_name_a_bucket(default: object) -> None:
    rejects({"buckets": [bucket("b")], "defaultBucketId": default}, MSG_DEFAULT_BUCKET_MALFORMED)


def test_default_bucket_with_no_buckets_names_nothing() -> None:
    rejects({"buckets": [], "defaultBucketId": "b"}, MSG_DEFAULT_BUCKET_MALFORMED)


def test_default_bucket_is_required_when_there_are_buckets() -> None:
    rejects({"buckets": [bucket("b")]}, MSG_DEFAULT_BUCKET_MISSING)
    rejects({"buckets": [bucket("b")], "defaultBucketId": None}, MSG_DEFAULT_BUCKET_MISSING)


def test_unlimited_does_not_remove_the_default_bucket_requirement() -> None:
    rejects({"buckets": [bucket("b")], "unlimited": True}, MSG_DEFAULT_BUCKET_MISSING)
