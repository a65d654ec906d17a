"""The engine's settings are named in three places that must agree: the config model,
the engine's setup{} filter and options.lua's list (which keeps them from being reported
as unknown plugin options). A setting added to one and not the others is either silently
dropped from setup{} or refused as unknown."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from louise.config.model import Config
from louise.nvim.engine_options import ENGINE_KEYS

OPTIONS_LUA = Path(__file__).parents[2] / "lua" / "louise" / "options.lua"


def lua_engine_keys() -> set[str]:
    match = re.search(r"M\.ENGINE_KEYS\s*=\s*\{(?P<body>[^}]*)\}", OPTIONS_LUA.read_text())
    assert match, "options.lua no longer defines M.ENGINE_KEYS as a list literal"
    return set(re.findall(r"'([a-z_]+)'", match["body"]))


def test_every_config_setting_reaches_the_engine_from_setup() -> None:
    # `[host]` comes from setup{}'s own `host = "auto"` and `host_via` (init.lua's
    # engine_opts sends them as the section), not from an engine key of that name.
    assert set(ENGINE_KEYS) | {"host", "warnings"} == {f.name for f in dataclasses.fields(Config)}


def test_options_lua_knows_the_same_engine_settings() -> None:
    assert lua_engine_keys() == set(ENGINE_KEYS)


def test_without_default_agent_setup_picks_the_first_agent_by_name() -> None:
    # A Lua table's keys arrive in hash order: whatever that order, the same Agent.
    from louise.nvim.engine_options import engine_config
    agent = {"command": "x"}
    for order in (["zeta", "alpha", "mid"], ["mid", "zeta", "alpha"]):
        config = engine_config({"agents": {name: dict(agent) for name in order}})
        assert config.default_agent == "alpha"
    named = engine_config({"agents": {"zeta": agent, "alpha": agent}, "default_agent": "zeta"})
    assert named.default_agent == "zeta"
