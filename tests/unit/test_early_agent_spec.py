"""Which agent louise's Python process starts early, and how (louise/nvim/early_agent.py):
the same spec as the engine computes from the validated configuration, for the cases it
can tell; none where it cannot. And the early step stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from louise.acp.process import AgentCommand, AgentProcess
from louise.config.agents import demo_agent_config
from louise.nvim.early_agent import spec_for
from louise.nvim.engine_options import engine_config
from louise.registry import _command

BASE = {"PATH": "/usr/bin", "HOME": "/home/someone"}


def engine_spec(opts: dict[str, Any], name: str | None = None) -> Any:
    """The spec the engine spawns for `name` (default: the configuration's default), as
    the registry makes its command."""
    config = engine_config(opts)
    command: AgentCommand = _command(config.agent(name or config.default_agent))
    return AgentProcess(command).spawn_spec(), config


@pytest.fixture(autouse=True)
def no_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOUISE_CONFIG", str(tmp_path / "config.toml"))


def test_the_demo_agent_when_nothing_is_configured_is_what_the_engine_spawns() -> None:
    spec = spec_for({"setup": False}, os.environ, sys.executable)
    engine, config = engine_spec({})
    assert config.default_agent == "demo"
    assert spec == engine
    assert list(spec.argv) == demo_agent_config().argv  # one demo agent, two places


def test_a_setup_agent_is_what_the_engine_spawns() -> None:
    agents = {"claude": {"command": "~/bin/claude-agent-acp", "args": ["--x"],
                         "env": {"A": "1"}, "cwd": "~/work/../work"}}
    spec = spec_for({"setup": True, "agents": agents}, os.environ, sys.executable)
    engine, _ = engine_spec({"agents": agents})
    assert spec is not None and spec == engine
    assert spec.argv[0] == os.path.expanduser("~/bin/claude-agent-acp")
    assert spec.env["A"] == "1" and spec.env["PATH"] == os.environ["PATH"]


def test_an_empty_lua_table_comes_as_a_json_list() -> None:
    agents = {"codex": {"command": "codex-acp", "args": [], "env": []}}
    spec = spec_for({"setup": True, "agents": agents}, BASE, sys.executable)
    assert spec is not None and spec.argv == ("codex-acp",) and spec.env == BASE


@pytest.mark.parametrize(("hint", "argv0"), [
    # the first configured, by name, when none is the default (engine_options)
    ({"agents": {"b": {"command": "b"}}}, "b"),
    ({"agents": {"b": {"command": "b"}, "a": {"command": "a"}}, "default_agent": "b"}, "b"),
    ({"agents": {"b": {"command": "b"}, "a": {"command": "a"}}, "agent": "a"}, "a"),
    # setup{} without agents: its configuration is the demo agent alone
    ({"permissions": {}}, None),
    ({"agents": []}, None),
])
def test_the_agent_the_first_command_opens(hint: dict[str, Any], argv0: str | None) -> None:
    spec = spec_for({"setup": True, **hint}, BASE, sys.executable)
    assert spec is not None
    if argv0 is None:
        assert "louise.demo_agent" in spec.argv
    else:
        assert spec.argv == (argv0,)


@pytest.mark.parametrize("hint", [
    # several agents and no default: the engine asks which
    {"setup": True, "agents": {"a": {"command": "a"}, "b": {"command": "b"}}},
    {"setup": True, "agents": {"a": {"command": "a"}}, "agent": "unknown"},
    {"setup": True, "agents": {"a": {"command": ""}}},
    {"setup": True, "agents": {"a": {"command": "a", "args": [1]}}},
    {"setup": True, "agents": {"a": {"command": "a", "env": {"A": 1}}}},
    {"setup": True, "agents": {"a": {"command": "a", "cwd": "relative"}}},
    {"setup": True, "agents": "no"},
    {"setup": True, "agents": {"a": {"command": "a"}}, "host": {"mode": "auto"}},
    [],
])
def test_nothing_is_started_where_it_cannot_be_told(hint: Any) -> None:
    assert spec_for(hint, BASE, sys.executable) is None


def test_a_config_toml_agent_is_what_the_engine_spawns(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[agents.zed]\ncommand = "~/bin/zed-acp"\nargs = ["--acp"]\ncwd = "/tmp/../tmp"\n'
        '[agents.zed.env]\nTOKEN_FILE = "/run/token"\n')
    spec = spec_for({"setup": False}, os.environ, sys.executable)
    engine, config = engine_spec({})
    assert config.default_agent == "zed"
    assert spec is not None and spec == engine and spec.env["TOKEN_FILE"] == "/run/token"


@pytest.mark.parametrize(("toml", "hint", "argv0"), [
    # the first configured in the file's order (no default): config.toml has an order
    ('[agents.b]\ncommand = "b"\n[agents.demo]\ncommand = "d"\n', {}, "b"),
    ('default_agent = "a"\n[agents.b]\ncommand = "b"\n[agents.a]\ncommand = "a"\n', {},
     "a"),
    ('[agents.b]\ncommand = "b"\n[agents.a]\ncommand = "a"\n', {"agent": "a"}, "a"),
    ('[agents.b]\ncommand = "b"\n', {"agent": "demo"}, None),
])
def test_the_config_toml_agent_the_first_command_opens(
        tmp_path: Path, toml: str, hint: dict[str, Any], argv0: str | None) -> None:
    (tmp_path / "config.toml").write_text(toml)
    spec = spec_for({"setup": False, **hint}, os.environ, sys.executable)
    engine, _ = engine_spec({}, hint.get("agent"))
    assert spec == engine
    assert spec is not None
    if argv0 is None:
        assert "louise.demo_agent" in spec.argv
    else:
        assert spec.argv == (argv0,)


@pytest.mark.parametrize("toml", [
    '[agents.b]\ncommand = "b"\n[agents.a]\ncommand = "a"\n',  # the engine asks which
    '[agents.a]\ncommand = "a"\n[host]\nmode = "auto"\n',  # through the session host
    '[agents.a\ncommand = "a"\n',  # not TOML: the engine says what is wrong
    '[agents.a]\ncommand = ["a"]\n',
])
def test_no_config_toml_agent_where_it_cannot_be_told(tmp_path: Path, toml: str) -> None:
    (tmp_path / "config.toml").write_text(toml)
    assert spec_for({"setup": False}, BASE, sys.executable) is None


def test_setup_engine_options_leave_config_toml_unread(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[agents.x]\ncommand = "x"\n')
    spec = spec_for({"setup": True, "permissions": {}}, BASE, sys.executable)
    assert spec is not None and "louise.demo_agent" in spec.argv


def test_the_early_step_imports_nothing_heavy(tmp_path: Path) -> None:
    """It runs before the engine's imports, to overlap them: no anyio, pydantic,
    configuration, pynvim, asyncio or dataclasses before the agent is spawned."""
    hint = json.dumps({"setup": True, "agents": {"x": {"command": "/bin/true"}}})
    code = ("import sys\nfrom louise.nvim import early_agent\n"
            "early = early_agent.start_from_environment()\n"
            "assert early is not None\nearly_agent.stop_started()\n"
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, LOUISE_EARLY_AGENT=hint), check=True).stdout
    loaded = set(out.split())
    heavy = {"anyio", "pydantic", "pydantic_core", "louise.config", "pynvim", "asyncio",
             "dataclasses", "typing", "louise.acp.process", "louise.registry"}
    assert loaded & heavy == set()
