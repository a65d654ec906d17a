"""`louise.config`: what a person gets from a configuration that is wrong: every problem
at once with its path, specific messages and hints, TOML syntax errors with line and
column, files that cannot be read, nothing half applied. Valid configurations, LouiseLM
shapes and the default agent: test_config.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest

from louise.config.agents import DEMO_AGENT_NAME
from louise.config.loading import load_config, load_config_mapping
from louise.config.model import Config
from louise.config.problems import ConfigError
from louise.config.schema.agents import AgentConfig as AgentSchema
from louise.config.sections import DEFAULT_OUTPUT_BYTE_LIMIT
from tests.unit.test_config import problems_of, write

# --------------------------------------------------------------------------- errors

BAD_TOML = """\
default_agent = "ghost"
request_timeout = "30"
verbose = true

[agents.claude]
command = "claude-agent-acp"
args = ["--ok", 7]
env = { GOOD = "1", BAD = 2 }
cwd = "relative/dir"
comand = "typo"

[agents."has space"]
command = "x"

[agents.nocmd]
args = []

[agents.nocmd.fs]
reed = true

[fs]
write = "yes"
roots = ["not/absolute"]

[terminal]
output_byte_limit = 0

[[permissions.rules]]
kind = "reed"
decision = "maybe"

[[permissions.rules]]
kind = ["read", "nope"]
"""

EXPECTED_BAD_PATHS = {
    "default_agent",
    "request_timeout",
    "verbose",
    "agents.claude.args[1]",
    "agents.claude.env.BAD",
    "agents.claude.cwd",
    "agents.claude.comand",
    'agents."has space"',
    "agents.nocmd.command",
    "agents.nocmd.fs.reed",
    "fs.write",
    "fs.roots[0]",
    "terminal.output_byte_limit",
    "permissions.rules[0].kind",
    "permissions.rules[0].decision",
    "permissions.rules[1].kind[1]",
    "permissions.rules[1].decision",
}


def test_every_problem_is_reported_at_once_with_its_path(tmp_path: Path) -> None:
    path = write(tmp_path, BAD_TOML)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    error = info.value

    assert [p.path for p in error.problems if p.path not in EXPECTED_BAD_PATHS] == []
    assert {p.path for p in error.problems} == EXPECTED_BAD_PATHS
    assert all(p.message and p.hint for p in error.problems)

    lines = str(error).splitlines()
    assert len(lines) == 1 + len(error.problems)  # a header, then one line per problem
    for problem in error.problems:
        matching = [line for line in lines if f"{path}: {problem.path}: " in line]
        assert matching, problem.path


def test_error_messages_and_hints_are_specific(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, BAD_TOML))
    by_path = {p.path: p for p in info.value.problems}

    assert "expected a string" in by_path["agents.claude.args[1]"].message
    assert "integer" in by_path["agents.claude.args[1]"].message
    assert "expected a string" in by_path["agents.claude.env.BAD"].message
    assert "relative" in by_path["agents.claude.cwd"].message
    assert "~" in by_path["agents.claude.cwd"].hint
    assert "'command'" in by_path["agents.claude.comand"].hint  # a spelling suggestion
    assert by_path["verbose"].message == "unknown setting"
    assert "'read'" in by_path["agents.nocmd.fs.reed"].hint
    assert "required" in by_path["agents.nocmd.command"].message
    assert "command =" in by_path["agents.nocmd.command"].hint
    assert "true or false" in by_path["fs.write"].message
    assert "greater than 0" in by_path["terminal.output_byte_limit"].message
    assert "'allow'" in by_path["permissions.rules[0].decision"].hint
    assert "reed" in by_path["permissions.rules[0].kind"].message
    assert "read" in by_path["permissions.rules[0].kind"].hint
    assert "invalid Agent name" in by_path['agents."has space"'].message


def test_the_same_errors_come_from_a_mapping_with_its_source_name() -> None:
    data = {"agents": {"a": {"command": "a", "args": "not-a-list", "env": {"K": 1}}}}
    with pytest.raises(ConfigError) as info:
        load_config_mapping(data, source="setup{}")
    assert set(problems_of(info.value)) == {"agents.a.args", "agents.a.env.K"}
    assert all(line.startswith("setup{}: ") for line in str(info.value).splitlines()[1:])


def test_a_non_table_configuration_is_one_problem() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_mapping("agents")
    (problem,) = info.value.problems
    assert problem.path == ""
    assert "expected a table" in problem.message


def test_invalid_toml_syntax_reports_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, '[agents.a]\ncommand = "a"\nargs = [1 2]\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == (3, 11)  # at the "2"
    assert problem.message.startswith("invalid TOML")
    assert f"{path}:3:11: invalid TOML" in str(info.value)


def test_truncated_toml_reports_the_end_of_the_document(tmp_path: Path) -> None:
    path = write(tmp_path, 'default_agent = "a"\nargs = [\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    (problem,) = info.value.problems
    assert problem.line == 3
    assert problem.column == 1


def test_non_utf8_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'default_agent = "\xff"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "UTF-8" in info.value.problems[0].message


def test_a_directory_instead_of_a_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert "cannot read" in info.value.problems[0].message


def test_env_values_must_be_strings() -> None:
    for value in (1, True, 1.5, ["a"], {"x": "y"}):
        with pytest.raises(ConfigError) as info:
            load_config_mapping({"agents": {"a": {"command": "a", "env": {"V": value}}}})
        assert list(problems_of(info.value)) == ["agents.a.env.V"]


def test_never_half_applies() -> None:
    # One good Agent and one bad one: nothing is returned, not even the good part.
    data: dict[str, Any] = {
        "agents": {"good": {"command": "good"}, "bad": {"command": "bad", "cwd": "rel"}},
        "terminal": {"output_byte_limit": 10},
    }
    result: Config | None = None
    with pytest.raises(ConfigError):
        result = load_config_mapping(data)
    assert result is None
    # The previous valid configuration is untouched by a failed load.
    previous = load_config_mapping({"agents": {"good": {"command": "good"}}})
    with pytest.raises(ConfigError):
        load_config_mapping(data)
    assert previous.terminal.output_byte_limit == DEFAULT_OUTPUT_BYTE_LIMIT
    assert list(previous.agents) == ["good", DEMO_AGENT_NAME]


def test_agent_config_requires_a_non_empty_command() -> None:
    with pytest.raises(pydantic.ValidationError):
        AgentSchema(command="  ")
    with pytest.raises(ConfigError) as info:
        load_config_mapping({"agents": {"a": {"command": ""}}})
    assert list(problems_of(info.value)) == ["agents.a.command"]
