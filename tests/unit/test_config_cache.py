"""The validated-configuration cache (louise/config/cached.py, louise/storage/config_cache.py):
a hit is exactly what validation gives, an invalid configuration is never kept, a file
that is not safe or not ours is ignored and replaced, and it is written once per new
input, never on a hit (issue 25 items 2 and 5)."""

from __future__ import annotations

import copy
import json
import os
import string
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from louise.config import cached
from louise.config.loading import load_config_mapping
from louise.config.model import Config
from louise.config.problems import ConfigError
from louise.nvim.engine_options import engine_config
from louise.storage import config_cache
from tests.unit.test_config_runtime import EVERY_SECTION


class Validations:
    """A validation that counts its calls (a hit makes none)."""

    def __init__(self, data: Any) -> None:
        self.data = data
        self.calls = 0

    def __call__(self) -> Config:
        self.calls += 1
        return load_config_mapping(copy.deepcopy(self.data))


def through_cache(data: Any) -> tuple[Config, int]:
    validate = Validations(data)
    config = cached.cached_config(("test", data), validate, lambda: data)
    return config, validate.calls


def cache_path() -> Path:
    return Path(config_cache.cache_file_name())


@contextmanager
def state_dir() -> Iterator[Path]:
    """A state directory of its own (Hypothesis runs many examples per test)."""
    with tempfile.TemporaryDirectory() as root, \
            mock.patch.dict(os.environ, {"LOUISE_STATE_DIR": os.path.join(root, "state")}):
        yield Path(root) / "state"


# ------------------------------------------------------------------ generated configurations

names = st.text(string.ascii_letters + string.digits + "_.-", min_size=1, max_size=8).filter(
    lambda name: name[0].isalnum())
texts = st.text(max_size=12)
words = st.text(string.ascii_letters + string.digits + "-_/", min_size=1, max_size=12)
absolute = st.one_of(words.map(lambda w: "/" + w), words.map(lambda w: "~/" + w), st.just("~"))
seconds = st.one_of(st.integers(0, 10_000),
                    st.floats(0, 1e6, allow_nan=False, allow_infinity=False))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | texts
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8)
env_maps = st.dictionaries(words.filter(lambda w: "/" not in w), texts, max_size=3)
kinds = st.sampled_from(["read", "edit", "delete", "move", "search", "execute", "think",
                         "fetch", "switch_mode", "other"])


@st.composite
def mcp_servers(draw: st.DrawFn) -> dict[str, Any]:
    servers: dict[str, Any] = {}
    for name in draw(st.lists(names, max_size=2, unique=True)):
        if draw(st.booleans()):
            servers[name] = {"command": draw(words), "args": draw(st.lists(texts, max_size=2)),
                             "env": draw(env_maps)}
        else:
            servers[name] = {"type": draw(st.sampled_from(["http", "sse"])),
                             "url": "https://" + draw(words.filter(lambda w: "/" not in w)),
                             "headers": draw(st.dictionaries(words, texts, max_size=2))}
        if draw(st.booleans()):
            servers[name]["enabled"] = draw(st.booleans())
    return servers


def optional(draw: st.DrawFn, target: dict[str, Any], key: str, strategy: Any) -> None:
    if draw(st.booleans()):
        target[key] = draw(strategy)


@st.composite
def agents(draw: st.DrawFn) -> dict[str, Any]:
    agent: dict[str, Any] = {"command": draw(words)}
    optional(draw, agent, "args", st.lists(texts, max_size=3))
    optional(draw, agent, "env", env_maps)
    optional(draw, agent, "cwd", absolute)
    optional(draw, agent, "provider", st.one_of(words, st.lists(
        words.map(lambda w: {"provider": w}), min_size=1, max_size=2)))
    optional(draw, agent, "fs", st.fixed_dictionaries({}, optional={
        "read": st.booleans(), "write": st.booleans(), "roots": st.lists(absolute, max_size=2)}))
    optional(draw, agent, "terminal", st.fixed_dictionaries({}, optional={
        "enabled": st.booleans(), "output_byte_limit": st.integers(1, 2**31)}))
    optional(draw, agent, "prompt_idle_timeout", seconds)
    optional(draw, agent, "mcp_servers", mcp_servers())
    optional(draw, agent, "defaults", st.fixed_dictionaries({}, optional={
        "mode": words, "model": words, "thought_level": words}))
    optional(draw, agent, "options", st.fixed_dictionaries(
        {"_meta": st.dictionaries(texts, json_values, max_size=3)}))
    optional(draw, agent, "skills", json_values)  # LouiseLM's: ignored with a warning
    return agent


@st.composite
def configurations(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = {}
    configured = draw(st.dictionaries(names, agents(), max_size=3))
    if configured or draw(st.booleans()):
        data["agents"] = configured
    if draw(st.booleans()):
        data["default_agent"] = draw(st.sampled_from([*configured, "demo"]))
    optional(draw, data, "permissions", st.fixed_dictionaries({}, optional={
        "default": st.sampled_from(["ask", "reject"]), "gate_unasked": st.booleans(),
        "rules": st.lists(st.fixed_dictionaries(
            {"kind": st.one_of(kinds, st.lists(kinds, min_size=1, max_size=3)),
             "decision": st.sampled_from(["allow", "reject"])},
            optional={"inside_workspace": st.booleans()}), max_size=3)}))
    optional(draw, data, "fs", st.fixed_dictionaries({}, optional={
        "read": st.booleans(), "write": st.booleans(), "roots": st.lists(absolute, max_size=2)}))
    optional(draw, data, "terminal", st.fixed_dictionaries({}, optional={
        "enabled": st.booleans(), "output_byte_limit": st.integers(1, 2**31)}))
    optional(draw, data, "request_timeout", st.floats(0.001, 1e6))
    optional(draw, data, "prompt_idle_timeout", seconds)
    optional(draw, data, "mcp_servers", mcp_servers())
    optional(draw, data, "checkpoints", st.fixed_dictionaries({}, optional={
        "enabled": st.booleans(), "keep_turns": st.integers(1, 1000),
        "max_file_bytes": st.integers(1, 2**40)}))
    optional(draw, data, "limits", st.fixed_dictionaries({}, optional={
        "confirm": st.booleans(), "park": st.booleans(),
        "near_percent": st.one_of(st.integers(1, 100), st.floats(0.5, 100)),
        "budgets": st.dictionaries(absolute, st.dictionaries(
            st.sampled_from(["5h", "7d", "90m"]), st.integers(1, 100), min_size=1),
            max_size=2)}))
    optional(draw, data, "context", st.fixed_dictionaries(
        {"instructions_file": st.sampled_from(["", "AGENTS.md", "docs/x.md"])}))
    optional(draw, data, "host", st.fixed_dictionaries({}, optional={
        "mode": st.sampled_from(["off", "auto"]), "via": words,
        "idle_exit": seconds}))
    optional(draw, data, "beads", json_values)  # LouiseLM's, top level
    return data


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(configurations())
def test_a_hit_is_exactly_what_validation_gives(data: dict[str, Any]) -> None:
    try:
        fresh = load_config_mapping(copy.deepcopy(data))
    except ConfigError as exc:  # the strategy makes valid configurations only
        raise AssertionError(f"generated an invalid configuration: {exc}") from None
    with state_dir():
        first, first_calls = through_cache(data)
        second, second_calls = through_cache(data)
    assert first == fresh and first.warnings == fresh.warnings
    assert first_calls == 1
    assert second == fresh and second.warnings == fresh.warnings
    # not kept: what JSON cannot give back exactly, and any `~user` string (conservative)
    kept = cached.encode(fresh) is not None and not cached._other_homes(data)
    assert second_calls == (0 if kept else 1)


@pytest.mark.parametrize("data", [
    {}, EVERY_SECTION, {"agents": {"one": {"command": "x"}}},
    {"skills": {"a": 1}, "agents": {"a": {"command": "a", "latest": True}}},
    {"limits": {"budgets": {"~/w": {"5h": 50, "7d": 20}}}},
], ids=["defaults", "every-section", "one-agent", "louiselm-warnings", "budgets"])
def test_fixed_configurations_hit_as_validated(data: dict[str, Any]) -> None:
    fresh = load_config_mapping(copy.deepcopy(data))
    assert cached.encode(fresh) is not None  # every one of these is kept
    first, calls = through_cache(data)
    assert calls == 1
    second, calls = through_cache(data)
    assert calls == 0
    assert first == second == fresh and second.warnings == fresh.warnings


def test_an_invalid_configuration_is_never_kept() -> None:
    data = {"agents": {"a": {"command": 1}}}
    for _ in range(2):
        with pytest.raises(ConfigError) as info:
            through_cache(data)
        assert "agents.a.command" in str(info.value)
    assert not cache_path().exists()


def test_written_once_per_new_input_never_on_a_hit() -> None:
    through_cache({"fs": {"read": False}})
    written = cache_path().stat()
    for _ in range(3):
        assert through_cache({"fs": {"read": False}})[1] == 0
    again = cache_path().stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    through_cache({"fs": {"read": True}})  # a new input: one more entry, both kept
    assert through_cache({"fs": {"read": False}})[1] == 0
    assert through_cache({"fs": {"read": True}})[1] == 0


def test_the_file_is_private_and_bounded() -> None:
    through_cache({})
    path = cache_path()
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    for index in range(config_cache.MAX_ENTRIES + 3):
        through_cache({"request_timeout": float(index + 1)})
    document = json.loads(path.read_bytes())
    assert len(document["entries"]) == config_cache.MAX_ENTRIES
    # the newest are kept
    assert through_cache({"request_timeout": float(config_cache.MAX_ENTRIES + 3)})[1] == 0
    assert through_cache({"request_timeout": 1.0})[1] == 1


def test_an_entry_too_big_for_the_file_is_not_kept() -> None:
    meta = {"k": "x" * (60 * 1024)}
    agents = {f"a{i}": {"command": "c", "options": {"_meta": meta}} for i in range(20)}
    assert through_cache({"agents": agents})[1] == 1
    assert through_cache({"agents": agents})[1] == 1
    assert not cache_path().exists()


@pytest.mark.parametrize("spoil", ["corrupt", "other-build", "other-format", "too-big",
                                   "group-writable", "symlink", "wrong-shape"])
def test_a_spoilt_file_is_ignored_and_replaced(spoil: str, tmp_path: Path) -> None:
    data = {"fs": {"write": False}}
    through_cache(data)
    path = cache_path()
    document = json.loads(path.read_bytes())
    if spoil == "corrupt":
        path.write_bytes(path.read_bytes()[:-7])
    elif spoil == "other-build":
        path.write_text(json.dumps({**document, "build": "another python"}))
    elif spoil == "other-format":
        path.write_text(json.dumps({**document, "format": 0}))
    elif spoil == "too-big":
        path.write_bytes(path.read_bytes() + b" " * config_cache.MAX_FILE_BYTES)
    elif spoil == "group-writable":
        path.chmod(0o620)
    elif spoil == "symlink":
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(elsewhere)
    elif spoil == "wrong-shape":
        (key,) = document["entries"]
        document["entries"][key]["config"]["fs"] = {"surprise": True}
        path.write_text(json.dumps(document))
    config, calls = through_cache(data)
    assert calls == 1 and config == load_config_mapping(data)  # ignored: validated
    assert not path.is_symlink() and path.stat().st_mode & 0o777 == 0o600  # replaced
    assert through_cache(data)[1] == 0


def test_another_home_or_interpreter_is_another_input(tmp_path: Path) -> None:
    data = {"fs": {"roots": ["~/notes"]}}
    first, _ = through_cache(data)
    with mock.patch.dict(os.environ, {"HOME": str(tmp_path)}):
        moved, calls = through_cache(data)
    assert calls == 1 and moved.fs.roots == [str(tmp_path / "notes")] != first.fs.roots
    with mock.patch.object(cached.sys, "executable", "/elsewhere/python3"):
        other, calls = through_cache({})
    assert calls == 1 and other.agent("demo").command == "/elsewhere/python3"


def test_a_changed_validator_module_is_another_input() -> None:
    through_cache({})
    module = Path(cached.__file__).parent / "schema" / "host.py"
    stamp = module.stat()
    try:
        os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
        assert through_cache({})[1] == 1
    finally:
        os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))


def test_nothing_is_kept_without_home_or_with_another_users_home() -> None:
    with mock.patch.dict(os.environ):
        os.environ.pop("HOME", None)
        through_cache({})
        assert not cache_path().exists()
    through_cache({"agents": {"a": {"command": "x", "cwd": "~root/work"}}})
    assert not cache_path().exists()


def test_inputs_that_differ_only_in_type_or_order_are_not_confused() -> None:
    """`{"1": …}` and `{1: …}` read alike as JSON: the key tells them apart (the second
    is invalid, and says so every time); the order of `agents` is the default's."""
    assert through_cache({"agents": {"1": {"command": "x"}}})[1] == 1
    with pytest.raises(ConfigError):
        through_cache({"agents": {1: {"command": "x"}}})
    one, _ = through_cache({"agents": {"a": {"command": "x"}, "b": {"command": "y"}}})
    two, calls = through_cache({"agents": {"b": {"command": "y"}, "a": {"command": "x"}}})
    assert calls == 1 and (one.default_agent, two.default_agent) == ("a", "b")


def test_a_meta_that_json_would_change_is_validated_every_time() -> None:
    data = {"agents": {"a": {"command": "x", "options": {"_meta": {"k": {1: "number key"}}}}}}
    assert through_cache(data)[1] == 1
    assert through_cache(data)[1] == 1


def test_the_engine_config_and_config_toml_go_through_it(tmp_path: Path) -> None:
    opts = {"agents": {"fast": {"command": "true"}}, "host": {"mode": "auto", "via": None}}
    first = engine_config(opts)
    with mock.patch("louise.config.schema.validate.validate_mapping",
                    side_effect=AssertionError("validated again")):
        assert engine_config(opts) == first
    assert first.host.enabled and first.default_agent == "fast"
    config_file = Path(os.environ["LOUISE_CONFIG"])
    config_file.write_text('default_agent = "x"\n[agents.x]\ncommand = "x-acp"\n')
    from_file = engine_config({})
    assert from_file.default_agent == "x"
    config_file.write_text('default_agent = "y"\n[agents.y]\ncommand = "y-acp"\n')
    assert engine_config({}).default_agent == "y"  # the file's bytes are the input


def test_a_setup_in_another_hash_order_is_the_same_input() -> None:
    """A Lua table's keys arrive in its hash order, which differs from one Neovim to the
    next: the same setup{} in another order is a hit, and gives the same Config."""
    rule = {"kind": ["read", "search"], "decision": "allow"}
    first = engine_config({"agents": {"b": {"command": "b", "args": ["x"]},
                                      "a": {"command": "a"}},
                           "permissions": {"rules": [rule]}, "default_agent": "b"})
    with mock.patch("louise.config.schema.validate.validate_mapping",
                    side_effect=AssertionError("validated again")):
        again = engine_config({"default_agent": "b",
                               "permissions": {"rules": [dict(reversed(rule.items()))]},
                               "agents": {"a": {"command": "a"},
                                          "b": {"args": ["x"], "command": "b"}}})
    assert again == first and first.agent_names() == ["a", "b", "demo"]
