"""A closing session takes no new turn: a prompt sent while `close_session` waits (for
the cancelled turn to end, or for the agent's answer to `session/close`) is refused in
words for a person and never reaches the agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError
from tests.integration.agents import FAKES, wait_until

pytestmark = pytest.mark.anyio


def script_registry(tmp_path: Path, **env: str) -> SessionRegistry:
    config = load_config_mapping({"agents": {"script": {
        "command": sys.executable, "args": [str(FAKES / "script_agent.py")],
        "env": {"FAKE_LOG": str(tmp_path / "agent.log"), **env}}}})
    return SessionRegistry(config, transcripts_dir=None, limits_cache=None, grace_seconds=10)


def agent_log(tmp_path: Path) -> list[str]:
    path = tmp_path / "agent.log"
    return path.read_text().splitlines() if path.exists() else []


def prompts_at_agent(tmp_path: Path) -> list[str]:
    lines = agent_log(tmp_path)
    return [line.removeprefix("  text: ") for line in lines if line.startswith("  text: ")]


async def test_a_prompt_sent_while_the_cancelled_turn_ends_is_refused(tmp_path: Path) -> None:
    """An agent with `session/close` (claude-agent-acp has it): the prompt used to wait in
    the queue, take the turn once the cancelled one ended, and run at the agent while
    louise waited for the answer to `session/close`."""
    async with script_registry(tmp_path, FAKE_CLOSE_DELAY="0.3") as reg, \
            anyio.create_task_group() as tg:
        session = await reg.new_session("script", str(tmp_path))
        key = session.session_id
        first: list[str] = []

        async def run_first() -> None:
            first.append(await reg.prompt(key, json.dumps([{"hang": True, "wind_down": 0.5}])))

        tg.start_soon(run_first)
        await wait_until(lambda: reg.session(key).status == "prompting")
        tg.start_soon(reg.close_session, key)
        await wait_until(lambda: reg.session(key).status == "cancelling")
        with pytest.raises(RegistryError, match="the session is closing"):
            await reg.prompt(key, "late")
        await wait_until(lambda: first != [])
        assert first == ["cancelled"]
        await wait_until(lambda: reg.sessions() == [])
    assert prompts_at_agent(tmp_path) == [json.dumps([{"hang": True, "wind_down": 0.5}])]


async def test_a_prompt_sent_while_the_agent_closes_the_session_is_refused(
        tmp_path: Path) -> None:
    async with script_registry(tmp_path, FAKE_CLOSE_DELAY="0.5") as reg, \
            anyio.create_task_group() as tg:
        session = await reg.new_session("script", str(tmp_path))
        key = session.session_id
        tg.start_soon(reg.close_session, key)
        await wait_until(lambda: "session/close" in agent_log(tmp_path))  # answered later
        with pytest.raises(RegistryError, match="the session is closing"):
            await reg.prompt(key, "late")
        assert reg.session(key).status == "closing"  # what the chat's winbar shows
        await wait_until(lambda: reg.sessions() == [])
    assert prompts_at_agent(tmp_path) == []
