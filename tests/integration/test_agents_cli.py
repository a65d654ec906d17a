"""`louise agents` run as a real subprocess against a config file in a temporary directory."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest


def run_agents(tmp_path: Path, *extra: str, path_dirs: list[Path] | None = None) -> Any:
    env = dict(os.environ)
    env["LOUISE_CONFIG"] = str(tmp_path / "config.toml")
    env["LOUISE_STATE_DIR"] = str(tmp_path / "state")
    env["PATH"] = os.pathsep.join(str(p) for p in (path_dirs or [tmp_path / "empty-bin"]))
    return subprocess.run(
        [sys.executable, "-m", "louise.cli", "agents", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def write_config(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_text(textwrap.dedent(text), encoding="utf-8")


def make_executable(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def configured(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    make_executable(bin_dir, "fake-acp")
    write_config(
        tmp_path,
        f"""\
        default_agent = "onpath"

        [agents.missing]
        command = "louise-no-such-agent-anywhere"
        args = ["--acp"]

        [agents.onpath]
        command = "fake-acp"
        args = ["serve", "two words"]

        [agents.absolute]
        command = {json.dumps(sys.executable)}
        """,
    )
    return bin_dir


def test_lists_agents_with_found_status_as_json(tmp_path: Path, configured: Path) -> None:
    result = run_agents(tmp_path, "--json", path_dirs=[configured])
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)

    rows = {row["name"]: row for row in document["agents"]}
    assert list(rows) == ["missing", "onpath", "absolute", "demo"]
    assert document["default_agent"] == "onpath"
    assert document["config_exists"] is True

    assert rows["missing"]["found"] is False
    assert rows["missing"]["resolved"] is None
    assert rows["missing"]["args"] == ["--acp"]
    assert rows["onpath"]["found"] is True
    assert rows["onpath"]["resolved"] == str(configured / "fake-acp")
    assert rows["onpath"]["args"] == ["serve", "two words"]
    assert rows["absolute"]["found"] is True
    assert rows["demo"]["found"] is True
    assert rows["demo"]["args"] == ["-P", "-m", "louise.demo_agent"]
    assert [name for name, row in rows.items() if row["default"]] == ["onpath"]


def test_a_command_not_on_path_is_not_found(tmp_path: Path, configured: Path) -> None:
    # The same config, but PATH no longer holds the fake agent.
    result = run_agents(tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["agents"]}
    assert rows["onpath"]["found"] is False
    assert rows["absolute"]["found"] is True


def test_text_output(tmp_path: Path, configured: Path) -> None:
    result = run_agents(tmp_path, path_dirs=[configured])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    by_name = {line[2:].split()[0]: line for line in lines if line[:1] in "* "}

    assert by_name["onpath"].startswith("* ")
    assert "found" in by_name["onpath"] and "NOT FOUND" not in by_name["onpath"]
    assert "fake-acp serve 'two words'" in by_name["onpath"]
    assert "NOT FOUND" in by_name["missing"]
    assert "louise-no-such-agent-anywhere --acp" in by_name["missing"]
    assert by_name["demo"].startswith("  ")
    assert "-P -m louise.demo_agent" in by_name["demo"]


def test_an_agent_env_path_is_honoured(tmp_path: Path) -> None:
    bin_dir = tmp_path / "private-bin"
    make_executable(bin_dir, "private-acp")
    write_config(
        tmp_path,
        f"""\
        [agents.private]
        command = "private-acp"
        env = {{ PATH = {json.dumps(str(bin_dir))} }}
        """,
    )
    result = run_agents(tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["agents"]}
    assert rows["private"]["found"] is True


def test_without_a_config_file_only_demo_is_listed(tmp_path: Path) -> None:
    result = run_agents(tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["config_exists"] is False
    assert [row["name"] for row in document["agents"]] == ["demo"]
    assert document["agents"][0]["default"] is True
    assert document["agents"][0]["found"] is True


def test_a_bad_config_exits_2_listing_every_problem(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """\
        default_agent = "nobody"

        [agents.a]
        command = "a"
        args = ["ok", 5]
        cwd = "relative"
        colour = "blue"

        [agents.b]
        env = { X = 1 }

        [terminal]
        output_byte_limit = -1
        """,
    )
    for extra in ([], ["--json"]):
        result = run_agents(tmp_path, *extra)
        assert result.returncode == 2
        assert result.stdout == ""
        assert "Traceback" not in result.stderr
        problem_lines = [line for line in result.stderr.splitlines() if "config.toml: " in line]
        paths = [line.split(": ")[1] for line in problem_lines]
        assert sorted(paths) == sorted(
            [
                "agents.a.args[1]",
                "agents.a.cwd",
                "agents.a.colour",
                "agents.b.command",
                "agents.b.env.X",
                "terminal.output_byte_limit",
                "default_agent",
            ]
        )
        assert all("hint: " in line for line in problem_lines)


def test_invalid_toml_exits_2_with_line_and_column(tmp_path: Path) -> None:
    write_config(tmp_path, '[agents.a]\ncommand = "a\n')
    result = run_agents(tmp_path)
    assert result.returncode == 2
    assert "config.toml:2:" in result.stderr
    assert "invalid TOML" in result.stderr


def test_a_louiselm_config_lists_its_agents_and_names_what_it_ignores(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    make_executable(bin_dir, "claude-agent-acp")
    write_config(
        tmp_path,
        """\
        [agents.claude]
        command = "claude-agent-acp"
        provider = { option = "model", prefixes = { "opus" = "Anthropic" } }
        skills = { policy = "native" }
        latest = { command = ["npm", "view", "x", "version"] }
        """,
    )
    result = run_agents(tmp_path, "--json", path_dirs=[bin_dir])
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["agents"]}
    assert rows["claude"]["found"] is True
    config = str(tmp_path / "config.toml")
    # What they are, said once; then one line per setting (issue 23: no repeated prefix).
    assert result.stderr.splitlines() == [
        f"louise: {config} has LouiseLM settings louise does not use, ignored "
        "(:help louise-migrating):",
        "  agents.claude.skills: louise has no skills policy; the agent's own slash commands "
        "pass through",
        "  agents.claude.latest: :checkhealth louise runs the command's --version itself",
    ]


def test_a_missing_known_agent_is_listed_with_its_install_line(tmp_path: Path) -> None:
    """Issue 23 item 10: the not-found report names the package to install."""
    write_config(tmp_path, """\
        [agents.codex]
        command = "codex-acp"
        """)
    result = run_agents(tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if line[2:].startswith("codex"))
    assert "NOT FOUND" in lines[row]
    assert "install it with npm install -g @agentclientprotocol/codex-acp" in lines[row + 1]
