"""An agent that dies while a child of its holds its stdout open is still seen dead: the
turn fails at once with the exit status, and the child is stopped with the process group."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from louise.acp.errors import ConnectionClosed
from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from tests.integration.agents import FAKES, wait_until
from tests.integration.test_registry import agent_texts

pytestmark = pytest.mark.anyio


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_a_killed_agent_whose_child_holds_its_stdout_fails_the_turn(
        tmp_path: Path) -> None:
    config = load_config_mapping({"agents": {"script": {
        "command": sys.executable, "args": [str(FAKES / "script_agent.py")]}}})
    async with SessionRegistry(config, grace_seconds=0.5, limits_cache=None,
                               permission_memory=None, transcripts_dir=None) as reg:
        session = await reg.new_session("script", str(tmp_path))
        connection = reg.runtime("script").connection
        assert connection is not None and connection.process.pid is not None
        steps = [{"spawn": ["sleep", "600"]}, {"hang": True, "deaf": True}]
        child: list[int] = []

        async def kill_when_spawned() -> None:
            await wait_until(lambda: "SPAWNED" in agent_texts(reg, session.session_id))
            child.append(int(agent_texts(reg, session.session_id).split("SPAWNED ")[1].split()[0]))
            os.kill(connection.process.pid, signal.SIGKILL)  # type: ignore[arg-type]

        async with anyio.create_task_group() as tg:
            tg.start_soon(kill_when_spawned)
            with anyio.fail_after(30), pytest.raises(ConnectionClosed) as info:
                await reg.prompt(session.session_id, json.dumps(steps))
        assert info.value.exit_status == -signal.SIGKILL
        assert reg.session(session.session_id).status == "error"
        # The child that kept the pipe open went with the agent's process group.
        await wait_until(lambda: not alive(child[0]))
