"""A LouiseLM user's settings reach the agent: `agents.<name>.options._meta` goes with
session/new (e.g. claude-agent-acp's thinking budget), and `context.instructions_file`
(AGENTS.md) is attached to the first prompt of a new session, once."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from tests.integration.agents import FAKES

pytestmark = pytest.mark.anyio

THINKING = {"claudeCode": {"options": {"maxThinkingTokens": 1024}}}


def config_for(log: Path, instructions: str = "AGENTS.md") -> object:
    return load_config_mapping({
        "context": {"instructions_file": instructions},
        "agents": {"claude": {
            "command": sys.executable, "args": [str(FAKES / "script_agent.py")],
            "env": {"FAKE_LOG": str(log)},
            "options": {"_meta": THINKING}}}})


async def test_meta_and_the_instructions_file_reach_the_agent(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text("Run the tests with make check.\n")
    config = config_for(log)
    assert not config.warnings  # type: ignore[attr-defined]
    async with SessionRegistry(config, grace_seconds=0.5,  # type: ignore[arg-type]
                               limits_cache=None, permission_memory=None,
                               transcripts_dir=None) as reg:
        session = await reg.new_session("claude", str(work))
        with anyio.fail_after(30):
            await reg.prompt(session.session_id, json.dumps([{"stop": "end_turn"}]))
            await reg.prompt(session.session_id, json.dumps([{"stop": "end_turn"}]))
        notes = [getattr(e, "text", "") for e in reg.session(session.session_id).entries]
    lines = log.read_text().splitlines()
    assert f"  _meta: {json.dumps(THINKING, sort_keys=True)}" in lines
    agents_md = f"file://{work / 'AGENTS.md'}"
    links = [line for line in lines if line.startswith("  resource")]
    assert links == [f"  resource_link: {agents_md}"], lines  # the first prompt only
    first = lines.index("session/prompt")
    assert lines[first + 2] == f"  resource_link: {agents_md}", lines
    assert any("AGENTS.md goes with your first prompt" in str(n) for n in notes), notes


async def test_an_instructions_file_outside_the_session_directory_is_not_sent(
        tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.txt").write_text("not the agent's\n")
    (work / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    async with SessionRegistry(config_for(log), grace_seconds=0.5,  # type: ignore[arg-type]
                               limits_cache=None, permission_memory=None,
                               transcripts_dir=None) as reg:
        session = await reg.new_session("claude", str(work))
        with anyio.fail_after(30):
            await reg.prompt(session.session_id, json.dumps([{"stop": "end_turn"}]))
    assert not [line for line in log.read_text().splitlines()
                if line.startswith("  resource")]


def test_an_instructions_file_must_be_relative() -> None:
    from louise.config.problems import ConfigError
    for bad in ("/etc/passwd", "../AGENTS.md", "~/AGENTS.md"):
        with pytest.raises(ConfigError):
            load_config_mapping({"context": {"instructions_file": bad}})
