"""Configuration: TOML and mapping loading, the demo Agent, default_agent (every error at
once: test_config_errors.py)."""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pydantic
import pytest

from louise.config.agents import DEMO_AGENT_NAME
from louise.config.loading import load_config, load_config_mapping
from louise.config.problems import ConfigError, UnknownAgentError
from louise.config.schema.model import Config as ConfigSchema
from louise.config.sections import DEFAULT_OUTPUT_BYTE_LIMIT

VALID_TOML = """\
default_agent = "claude"
request_timeout = 12.5

[agents.zeta]
command = "codex-acp"

[agents.claude]
command = "claude-agent-acp"
args = ["--verbose", "x"]
env = { IS_SANDBOX = "1" }
cwd = "/srv/work"
provider = "Anthropic"
fs = { write = false }
terminal = { output_byte_limit = 4096 }

[fs]
read = true
write = true
roots = ["/opt/shared"]

[terminal]
enabled = false

[permissions]
default = "ask"

[[permissions.rules]]
kind = "read"
inside_workspace = true
decision = "allow"

[[permissions.rules]]
kind = ["delete", "move"]
inside_workspace = false
decision = "reject"
"""

VALID_MAPPING: dict[str, Any] = {
    "default_agent": "claude",
    "request_timeout": 12.5,
    "agents": {
        "zeta": {"command": "codex-acp"},
        "claude": {
            "command": "claude-agent-acp",
            "args": ["--verbose", "x"],
            "env": {"IS_SANDBOX": "1"},
            "cwd": "/srv/work",
            "provider": "Anthropic",
            "fs": {"write": False},
            "terminal": {"output_byte_limit": 4096},
        },
    },
    "fs": {"read": True, "write": True, "roots": ["/opt/shared"]},
    "terminal": {"enabled": False},
    "permissions": {
        "default": "ask",
        "rules": [
            {"kind": "read", "inside_workspace": True, "decision": "allow"},
            {"kind": ["delete", "move"], "inside_workspace": False, "decision": "reject"},
        ],
    },
}


def write(tmp_path: Path, text: str, name: str = "config.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(exc: ConfigError) -> dict[str, str]:
    return {p.path: p.message for p in exc.problems}


# --------------------------------------------------------------------------- valid input


def test_valid_toml_loads_every_field(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, VALID_TOML))

    assert config.default_agent == "claude"
    assert config.request_timeout == 12.5
    assert list(config.agents) == ["zeta", "claude", DEMO_AGENT_NAME]
    claude = config.agent("claude")
    assert claude.command == "claude-agent-acp"
    assert claude.args == ["--verbose", "x"]
    assert claude.argv == ["claude-agent-acp", "--verbose", "x"]
    assert claude.env == {"IS_SANDBOX": "1"}
    assert claude.cwd == "/srv/work"
    assert claude.provider == "Anthropic"
    assert config.fs.roots == ["/opt/shared"]
    assert config.terminal.enabled is False
    assert config.permissions.default == "ask"
    assert [r.kind for r in config.permissions.rules] == [["read"], ["delete", "move"]]
    assert [r.decision for r in config.permissions.rules] == ["allow", "reject"]
    assert config.permissions.rules[1].inside_workspace is False


def test_mapping_gives_the_same_config_as_toml(tmp_path: Path) -> None:
    from_toml = load_config(write(tmp_path, VALID_TOML))
    from_mapping = load_config_mapping(copy.deepcopy(VALID_MAPPING))
    assert from_mapping == from_toml


def test_mapping_is_not_mutated() -> None:
    data = copy.deepcopy(VALID_MAPPING)
    load_config_mapping(data)
    assert data == VALID_MAPPING


def test_per_agent_overrides_replace_only_the_fields_they_set(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, VALID_TOML))

    claude_fs = config.fs_for("claude")
    assert (claude_fs.read, claude_fs.write, claude_fs.roots) == (True, False, ["/opt/shared"])
    claude_terminal = config.terminal_for("claude")
    assert (claude_terminal.enabled, claude_terminal.output_byte_limit) == (False, 4096)
    assert config.fs_for("zeta") == config.fs
    assert config.terminal_for("zeta") == config.terminal


def test_defaults() -> None:
    config = load_config_mapping({})
    assert config.request_timeout == 30
    assert config.terminal.enabled is True
    assert config.terminal.output_byte_limit == DEFAULT_OUTPUT_BYTE_LIMIT == 1024 * 1024
    assert (config.fs.read, config.fs.write, config.fs.roots) == (True, True, [])
    assert config.permissions.default == "ask"
    assert config.permissions.rules == []


def test_missing_file_means_defaults_with_the_demo_agent(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.toml")
    assert list(config.agents) == [DEMO_AGENT_NAME]
    assert config.default_agent == DEMO_AGENT_NAME
    demo = config.agent(DEMO_AGENT_NAME)
    assert demo.command == os.path.abspath(sys.executable)
    assert os.path.isabs(demo.command)
    assert demo.args == ["-P", "-m", "louise.demo_agent"]


def test_load_config_without_path_uses_louise_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, '[agents.mine]\ncommand = "mine-acp"\n', name="elsewhere.toml")
    monkeypatch.setenv("LOUISE_CONFIG", str(path))
    config = load_config()
    assert list(config.agents) == ["mine", DEMO_AGENT_NAME]


def test_demo_can_be_overridden(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, '[agents.demo]\ncommand = "/opt/py/bin/python3"\nargs = ["-m", "x"]\n')
    )
    assert list(config.agents) == [DEMO_AGENT_NAME]
    assert config.agent("demo").argv == ["/opt/py/bin/python3", "-m", "x"]
    assert config.default_agent == DEMO_AGENT_NAME


def test_cwd_tilde_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    config = load_config_mapping({"agents": {"a": {"command": "a", "cwd": "~/proj"}}})
    assert config.agent("a").cwd == str(tmp_path / "proj")


def test_lua_empty_tables_mean_empty_mappings() -> None:
    # Neovim encodes an empty Lua table as an empty array.
    config = load_config_mapping({"agents": {"a": {"command": "a", "env": []}}, "fs": []})
    assert config.agent("a").env == {}
    assert config.fs.read is True
    assert list(load_config_mapping([]).agents) == [DEMO_AGENT_NAME]


def test_request_timeout_accepts_integers_but_not_booleans() -> None:
    assert load_config_mapping({"request_timeout": 5}).request_timeout == 5.0
    with pytest.raises(ConfigError) as info:
        load_config_mapping({"request_timeout": True})
    assert list(problems_of(info.value)) == ["request_timeout"]


def test_prompt_idle_timeout_defaults_to_five_minutes_and_an_agent_may_override() -> None:
    config = load_config_mapping({"agents": {"slow": {"command": "x",
                                                      "prompt_idle_timeout": 0}}})
    assert config.prompt_idle_timeout == 300.0
    assert config.prompt_idle_timeout_for("slow") == 0.0  # 0: no limit
    assert config.prompt_idle_timeout_for(DEMO_AGENT_NAME) == 300.0
    assert load_config_mapping({"prompt_idle_timeout": 45}).prompt_idle_timeout == 45.0


@pytest.mark.parametrize("bad", [-1, float("inf"), float("nan"), True, "300"])
def test_prompt_idle_timeout_must_be_a_finite_number_of_seconds(bad: Any) -> None:
    with pytest.raises(ConfigError) as info:
        load_config_mapping({"prompt_idle_timeout": bad,
                             "agents": {"a": {"command": "x", "prompt_idle_timeout": bad}}})
    assert list(problems_of(info.value)) == ["agents.a.prompt_idle_timeout",
                                             "prompt_idle_timeout"]


# --------------------------------------------------------------------------- LouiseLM

LOUISELM_AGENTS: dict[str, Any] = {
    "claude": {"command": "claude-agent-acp", "provider": "Anthropic",
               "skills": {"policy": "native"}, "latest": {"command": ["npm"]},
               "version": ["claude-agent-acp", "--version"], "upgrade": ["npm", "i"],
               "options": {"_meta": {"claudeCode": {}}}},
    "opencode": {"command": "opencode", "args": ["acp"],
                 "provider": {"option": "model",
                              "prefixes": {"opencode/": "OpenCode Zen",
                                           "github-copilot/": "GitHub Copilot"}},
                 "skills": {"policy": "off"}, "capabilities": ["rust"]},
    "codex": {"command": "codex-acp",
              "provider": [{"provider": "OpenAI", "options": {"model": "gpt-5"}},
                           {"provider": "OpenAI", "options": {"model": "gpt-5-mini"}}],
              "transcript_layout": "codex", "auto": {"model": "model"}},
}


def test_a_louiselm_agent_shape_is_accepted_with_one_warning_per_ignored_setting() -> None:
    config = load_config_mapping({"agents": copy.deepcopy(LOUISELM_AGENTS),
                                  "skills": {"paths": []}, "default_agent": "claude"})
    assert config.agent_names() == ["claude", "opencode", "codex", DEMO_AGENT_NAME]
    assert config.agent("opencode").argv == ["opencode", "acp"]
    assert config.agent("claude").provider == "Anthropic"
    assert config.agent("opencode").provider == "OpenCode Zen / GitHub Copilot"
    assert config.agent("codex").provider == "OpenAI"
    paths = [warning.path for warning in config.warnings]
    assert paths == ["skills", "agents.claude.skills, agents.opencode.skills",
                     "agents.claude.latest", "agents.claude.version", "agents.claude.upgrade",
                     "agents.opencode.capabilities",
                     "agents.codex.transcript_layout", "agents.codex.auto"]
    assert all("LouiseLM" in warning.message and warning.hint
               for warning in config.warnings)
    # LouiseLM's options._meta is louise's own setting: sent with every session setup.
    assert config.agent("claude").session_meta == {"claudeCode": {}}
    assert config.agent("codex").session_meta == {}


def test_a_louiselm_config_in_toml_works_too(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(textwrap.dedent("""\
        [agents.claude]
        command = "claude-agent-acp"
        provider = [{ provider = "Anthropic", options = { model = "opus" } }]
        [agents.claude.skills]
        policy = "native"
    """))
    config = load_config(path)
    assert config.agent("claude").provider == "Anthropic"
    assert [w.path for w in config.warnings] == ["agents.claude.skills"]


def test_a_plain_config_has_no_warnings_and_typos_stay_errors() -> None:
    assert load_config_mapping(copy.deepcopy(VALID_MAPPING)).warnings == ()
    with pytest.raises(ConfigError) as info:
        load_config_mapping({"agents": {"a": {"command": "x", "skils": {}}}})
    assert list(problems_of(info.value)) == ["agents.a.skils"]


@pytest.mark.parametrize("provider, path", [
    ([{"options": {"model": "x"}}], "agents.a.provider[0].provider"),
    ({"option": "model", "prefixes": {"a/": 3}}, "agents.a.provider.prefixes"),
    ({"option": "model"}, "agents.a.provider"),
    (7, "agents.a.provider"),
])
def test_a_malformed_provider_table_says_where(provider: Any, path: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config_mapping({"agents": {"a": {"command": "x", "provider": provider}}})
    assert list(problems_of(info.value)) == [path]


def test_config_is_frozen() -> None:
    config = load_config_mapping(copy.deepcopy(VALID_MAPPING))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.default_agent = "zeta"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.agent("zeta").command = "other"  # type: ignore[misc]


# --------------------------------------------------------------------------- default_agent


def test_default_agent_is_demo_when_nothing_is_configured() -> None:
    assert load_config_mapping({}).default_agent == DEMO_AGENT_NAME


def test_default_agent_is_the_first_configured_in_file_order(tmp_path: Path) -> None:
    text = '[agents.zulu]\ncommand = "z"\n[agents.alpha]\ncommand = "a"\n'
    config = load_config(write(tmp_path, text))
    assert config.default_agent == "zulu"
    assert list(config.agents) == ["zulu", "alpha", DEMO_AGENT_NAME]


def test_default_agent_may_name_the_unconfigured_demo() -> None:
    config = load_config_mapping({"default_agent": "demo", "agents": {"a": {"command": "a"}}})
    assert config.default_agent == DEMO_AGENT_NAME


def test_the_demo_is_shown_only_without_real_agents_or_as_the_default() -> None:
    assert load_config_mapping({}).shown_agents() == [DEMO_AGENT_NAME]
    real = load_config_mapping({"agents": {"b": {"command": "b"}, "a": {"command": "a"}}})
    assert real.shown_agents() == ["b", "a"]
    assert DEMO_AGENT_NAME in real.agents  # still there when named
    chosen = load_config_mapping({"default_agent": "demo", "agents": {"a": {"command": "a"}}})
    assert chosen.shown_agents() == ["a", DEMO_AGENT_NAME]


def test_unknown_default_agent_is_reported_with_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path, 'default_agent = "claud"\n[agents.claude]\ncommand = "c"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    (problem,) = info.value.problems
    assert problem.path == "default_agent"
    assert "claud" in problem.message
    assert "'claude'" in problem.hint
    assert "demo" in problem.hint
    assert str(path) in str(info.value)


def test_unknown_default_agent_is_reported_alongside_field_errors() -> None:
    data = {"default_agent": "nope", "agents": {"a": {"command": 1}}}
    with pytest.raises(ConfigError) as info:
        load_config_mapping(data)
    assert set(problems_of(info.value)) == {"agents.a.command", "default_agent"}


def test_config_built_in_code_checks_default_agent_too() -> None:
    with pytest.raises(pydantic.ValidationError):
        ConfigSchema(default_agent="nope")


def test_agent_lookup_error_lists_known_names() -> None:
    config = load_config_mapping({"agents": {"claude": {"command": "c"}}})
    with pytest.raises(UnknownAgentError) as info:
        config.agent("claud")
    text = str(info.value)
    assert "claud" in text
    assert "claude, demo" in text
    assert isinstance(info.value, LookupError)
