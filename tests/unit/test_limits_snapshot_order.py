"""parse_snapshot(): reset credits' rules, the order the checks run in (the first failure
is the one reported), and snapshot_to_wire. Accepted shapes and the other rules:
test_limits_snapshot.py, whose helpers these tests use.
"""

from __future__ import annotations

import math

import pytest

from louise.limits import (
    MSG_BUCKET_ID,
    MSG_BUCKET_METADATA,
    MSG_BUCKET_UNIQUE_WINDOWS,
    MSG_DEFAULT_BUCKET_MALFORMED,
    MSG_DEFAULT_BUCKET_MISSING,
    MSG_RESET_CREDITS,
    MSG_SNAPSHOT_BUCKETS,
    MSG_SNAPSHOT_UNLIMITED,
    MSG_WINDOW,
    parse_snapshot,
    snapshot_to_wire,
)
from tests.unit.test_limits_snapshot import DOC_EXAMPLE, bucket, rejects, snap, window

# --------------------------------------------------------------------------- 6. reset credits


@pytest.mark.parametrize(
    "reset",
    [
        1,
        "x",
        [],
        True,
        {},
        {"availableCount": None},
        {"availableCount": -1},
        {"availableCount": 1.5},
        {"availableCount": "1"},
        {"availableCount": True},
        {"availableCount": math.nan},
        {"availableCount": 1, "credits": {}},
        {"availableCount": 1, "credits": "[]"},
        {"availableCount": 1, "credits": 1},
        {"availableCount": 1, "credits": [None]},
        {"availableCount": 1, "credits": [1]},
        {"availableCount": 1, "credits": [[]]},
        {"availableCount": 1, "credits": [{"id": ""}]},
        {"availableCount": 1, "credits": [{"id": 1}]},
        {"availableCount": 1, "credits": [{"title": ""}]},
        {"availableCount": 1, "credits": [{"title": False}]},
        {"availableCount": 1, "credits": [{"description": ""}]},
        {"availableCount": 1, "credits": [{"description": 2}]},
        {"availableCount": 1, "credits": [{"expiresAt": 0}]},
        {"availableCount": 1, "credits": [{"expiresAt": -5}]},
        {"availableCount": 1, "credits": [{"expiresAt": 1.5}]},
        {"availableCount": 1, "credits": [{"expiresAt": "4102448400"}]},
        {"availableCount": 1, "credits": [{"expiresAt": True}]},
        {"availableCount": 1, "credits": [{}, {"expiresAt": 0}]},
    ],
)
def test_reset_credits_must_be_well_formed(reset: object) -> None:
    rejects({"buckets": [], "resetCredits": reset}, MSG_RESET_CREDITS)


# --------------------------------------------------------------------------- check order


def test_buckets_check_comes_before_unlimited() -> None:
    rejects({"buckets": None, "unlimited": "yes"}, MSG_SNAPSHOT_BUCKETS)


def test_unlimited_check_comes_before_buckets_contents() -> None:
    rejects({"buckets": [None], "unlimited": "yes"}, MSG_SNAPSHOT_UNLIMITED)


def test_bucket_checks_run_bucket_by_bucket() -> None:
    # The first bucket's bad window is found before the second bucket's missing id.
    payload = snap(bucket("a", windows=[window(used=500)]), {"windows": []})
    rejects(payload, MSG_WINDOW)
    # ... and the first bucket's bad metadata before the second bucket's duplicate id.
    rejects(snap(bucket("a", label=""), bucket("a")), MSG_BUCKET_METADATA)


def test_within_a_bucket_id_then_uniqueness_then_metadata_then_windows() -> None:
    rejects({"buckets": [{"id": "", "windows": None, "label": ""}]}, MSG_BUCKET_ID)
    rejects(snap(bucket("a"), bucket("a", label="", windows=[None])), MSG_BUCKET_UNIQUE_WINDOWS)
    rejects(snap(bucket("a", label="", windows=[None])), MSG_BUCKET_METADATA)
    rejects(snap(bucket("a", credits=[], windows=[None])), MSG_BUCKET_METADATA)


def test_bucket_checks_come_before_default_bucket() -> None:
    rejects({"buckets": [bucket("a", windows=[None])]}, MSG_WINDOW)
    rejects({"buckets": [bucket("a", windows=[None])], "defaultBucketId": 1}, MSG_WINDOW)


def test_default_malformed_comes_before_reset_credits() -> None:
    rejects(
        {"buckets": [bucket("a")], "defaultBucketId": "z", "resetCredits": 1},
        MSG_DEFAULT_BUCKET_MALFORMED,
    )
    rejects({"buckets": [bucket("a")], "resetCredits": 1}, MSG_DEFAULT_BUCKET_MISSING)


def test_windows_are_checked_in_order_and_the_first_failure_wins() -> None:
    rejects(snap(bucket("a", windows=[window(), window(mins=0), window(used=-1)])), MSG_WINDOW)


# --------------------------------------------------------------------------- wire round trip


def test_snapshot_to_wire_is_camel_case_and_round_trips() -> None:
    parsed = parse_snapshot(DOC_EXAMPLE)
    wire = snapshot_to_wire(parsed)
    assert wire == DOC_EXAMPLE
    assert parse_snapshot(wire) == parsed


def test_snapshot_to_wire_omits_absent_optionals() -> None:
    parsed = parse_snapshot(
        {"buckets": [{"id": "b", "windows": [], "credits": {}}], "defaultBucketId": "b"}
    )
    assert snapshot_to_wire(parsed) == {
        "buckets": [{"id": "b", "windows": [], "credits": {}}],
        "defaultBucketId": "b",
        "unlimited": False,
    }
    reset = parse_snapshot({"buckets": [], "resetCredits": {"availableCount": 0}})
    assert snapshot_to_wire(reset)["resetCredits"] == {"availableCount": 0}
    listed = parse_snapshot({"buckets": [], "resetCredits": {"availableCount": 0, "credits": []}})
    assert snapshot_to_wire(listed)["resetCredits"] == {"availableCount": 0, "credits": []}
    assert parse_snapshot(snapshot_to_wire(listed)) == listed
