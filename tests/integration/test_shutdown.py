"""`SessionRegistry.aclose(deadline)`: one function owns the exit budget. What must not be
lost is written first, the agents are stopped within what is left, and a process group
still there at the deadline is killed, never left behind."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.storage import durable
from louise.storage.limits_cache import LimitsCache
from tests.integration.agents import FAKES

pytestmark = pytest.mark.anyio

# Without the deadline, the lingering agent below would take two of these (stdin closed,
# then SIGTERM, which it ignores) and the held cache lock its whole timeout.
GRACE = 30.0
BOUND = 10.0  # far above the 0.5 s budget, far below what ignoring it costs


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def lingering_registry(tmp_path: Path, cache: LimitsCache) -> SessionRegistry:
    config = load_config_mapping({"agents": {"script": {
        "command": sys.executable, "args": [str(FAKES / "script_agent.py")],
        "env": {"FAKE_LINGER": "1", "FAKE_LOG": str(tmp_path / "agent.log")}}}})
    return SessionRegistry(config, limits_cache=cache, transcripts_dir=tmp_path / "transcripts",
                           grace_seconds=GRACE)


def records(tmp_path: Path) -> list[str]:
    files = list((tmp_path / "transcripts").glob("*.jsonl"))
    assert len(files) == 1
    return [json.loads(line)["type"] for line in files[0].read_text().splitlines()]


async def test_a_deadline_bounds_the_shutdown_and_kills_an_agent_that_will_not_go(
        tmp_path: Path) -> None:
    cache = LimitsCache(tmp_path / "limits.json")
    async with lingering_registry(tmp_path, cache) as reg:
        session = await reg.new_session("script", str(tmp_path))
        assert await reg.prompt(session.session_id, "hello") == "end_turn"
        connection = reg.runtime("script").connection
        assert connection is not None
        pid = connection.process.pid
        assert pid is not None
        began = anyio.current_time()
        await reg.aclose(deadline=began + 0.5)
        took = anyio.current_time() - began
    assert took < BOUND, f"shutdown took {took:.1f} s past a 0.5 s deadline"
    assert not alive(pid), "the agent outlived the shutdown"
    assert "stdin closed" in (tmp_path / "agent.log").read_text()  # asked first, then killed
    assert records(tmp_path)[-1] == "turn_end"


async def test_a_held_cache_lock_does_not_hold_the_shutdown_past_its_deadline(
        tmp_path: Path) -> None:
    """Another process holding the limits cache's lock (up to its 30 s timeout) cannot
    make louise miss its exit budget: the transcripts are already written by then, and
    the agents are still stopped."""
    cache = LimitsCache(tmp_path / "limits.json")
    held, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        with durable.locked(cache.path):
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold_the_lock)
    try:
        async with lingering_registry(tmp_path, cache) as reg:
            session = await reg.new_session("script", str(tmp_path))
            assert await reg.prompt(session.session_id, "hello") == "end_turn"
            connection = reg.runtime("script").connection
            assert connection is not None
            pid = connection.process.pid
            assert pid is not None
            holder.start()
            await anyio.to_thread.run_sync(held.wait, 30)
            began = anyio.current_time()
            await reg.aclose(deadline=began + 0.5)
            took = anyio.current_time() - began
    finally:
        release.set()
        holder.join(30)
    assert took < BOUND, f"shutdown took {took:.1f} s past a 0.5 s deadline"
    assert not alive(pid), "the agent outlived the shutdown"
    assert records(tmp_path)[-1] == "turn_end"
