"""negotiate(): the accountLimits capability under agentCapabilities._meta."""

from __future__ import annotations

from typing import Any

import pytest

from louise.limits import Capability, negotiate

READ = "_io.github.euri10.louiselm/account_limits/read"
UPDATED = "_io.github.euri10.louiselm/account_limits/updated"


def caps(limits: object) -> dict[str, Any]:
    return {"_meta": {"io.github.euri10.louiselm": {"accountLimits": limits}}}


def test_v1_advertisement_negotiates_with_the_advertised_names() -> None:
    result = negotiate(caps({"version": 1, "readMethod": READ, "updatedMethod": UPDATED}))
    assert result == Capability(read_method=READ, updated_method=UPDATED)


def test_names_are_used_as_advertised_not_hardcoded() -> None:
    result = negotiate(caps({"version": 1, "readMethod": "_x/read", "updatedMethod": "_y"}))
    assert result == Capability("_x/read", "_y")


def test_unknown_fields_are_ignored_at_every_level() -> None:
    value = {
        "loadSession": True,
        "_meta": {
            "other": 1,
            "io.github.euri10.louiselm": {
                "future": [],
                "accountLimits": {
                    "version": 1,
                    "readMethod": READ,
                    "updatedMethod": UPDATED,
                    "extra": {"x": 1},
                },
            },
        },
    }
    assert negotiate(value) == Capability(READ, UPDATED)


def test_version_one_as_a_float_is_the_number_one() -> None:
    assert negotiate(caps({"version": 1.0, "readMethod": READ, "updatedMethod": UPDATED}))


@pytest.mark.parametrize("version", ["1", True, 2, 0, 1.5, None, [1], {"v": 1}])
def test_anything_but_version_number_one_does_not_negotiate(version: object) -> None:
    limits = {"version": version, "readMethod": READ, "updatedMethod": UPDATED}
    assert negotiate(caps(limits)) is None


def test_missing_version_does_not_negotiate() -> None:
    assert negotiate(caps({"readMethod": READ, "updatedMethod": UPDATED})) is None


@pytest.mark.parametrize(
    ("read", "updated"),
    [
        ("io.github/read", UPDATED),  # no leading underscore
        (READ, "updated"),
        ("", UPDATED),
        (READ, ""),
        (None, UPDATED),
        (READ, None),
        (1, UPDATED),
        (READ, ["_x"]),
    ],
)
def test_method_names_must_be_strings_starting_with_underscore(
    read: object, updated: object
) -> None:
    limits: dict[str, object] = {"version": 1}
    if read is not None:
        limits["readMethod"] = read
    if updated is not None:
        limits["updatedMethod"] = updated
    assert negotiate(caps(limits)) is None


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"_meta": None},
        {"_meta": []},
        {"_meta": {}},
        {"_meta": {"io.github.euri10.louiselm": None}},
        {"_meta": {"io.github.euri10.louiselm": "accountLimits"}},
        caps(None),
        caps([1, READ, UPDATED]),
        caps("v1"),
    ],
)
def test_missing_or_malformed_advertisement_does_not_negotiate(value: dict[str, Any]) -> None:
    assert negotiate(value) is None


def test_advertisement_outside_agent_capabilities_does_not_count() -> None:
    # Placed directly on the initialize result instead of inside agentCapabilities.
    initialize_result = {
        "protocolVersion": 1,
        "agentCapabilities": {},
        **caps({"version": 1, "readMethod": READ, "updatedMethod": UPDATED}),
    }
    assert negotiate(initialize_result["agentCapabilities"]) is None


def test_a_non_mapping_is_not_negotiated() -> None:
    assert negotiate([]) is None  # type: ignore[arg-type]
    assert negotiate(None) is None  # type: ignore[arg-type]
