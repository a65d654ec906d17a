"""`SessionRegistry.aclose(deadline)`: one function owns the exit budget. What must not be
lost is written first (the transcripts, the limits cache without this process's liveness
records), the agents are stopped within what is left, and a process group still there at
the deadline is killed, never left behind. These tests check what happens, with a budget
a loaded machine meets; how long a shutdown takes against a short budget is measured by
bench/quit.py (`--registry`)."""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.storage import durable
from louise.storage.limits_cache import LimitsCache
from tests.integration.agents import FAKES

pytestmark = pytest.mark.anyio

# Without the deadline, the lingering agent below would take two of these (stdin closed,
# then SIGTERM, which it ignores) and the held cache lock its 30 s timeout.
GRACE = 30.0
# The exit budget: ample for the writes that come first, even on a loaded machine.
EXIT_BUDGET = 3.0
# A hang guard, not a measure: a shutdown that ignored its deadline would wait out the
# agent's grace or the cache lock's timeout (30 s); one that keeps it returns long before.
HANG = 20.0


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def lingering_registry(tmp_path: Path, cache: LimitsCache, *,
                       with_limits: bool = True) -> SessionRegistry:
    """The lingering script agent and, `with_limits`, a demo agent of the test's own (it
    reports account limits, so the cache has figures to keep)."""
    agents: dict[str, Any] = {
        "script": {"command": sys.executable, "args": [str(FAKES / "script_agent.py")],
                   "env": {"FAKE_LINGER": "1", "FAKE_LOG": str(tmp_path / "agent.log")}}}
    if with_limits:
        agents["demo"] = {"command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
                          "env": {"LOUISE_DEMO_STATE_DIR": str(tmp_path / "demo-state")}}
    return SessionRegistry(load_config_mapping({"agents": agents}), limits_cache=cache,
                           transcripts_dir=tmp_path / "transcripts", grace_seconds=GRACE)


async def run_turns(reg: SessionRegistry, tmp_path: Path, agents: tuple[str, ...]
                    ) -> dict[str, Any]:
    """A turn with each of `agents`; their processes, by agent."""
    processes = {}
    for agent in agents:
        session = await reg.new_session(agent, str(tmp_path))
        assert await reg.prompt(session.session_id, "hello") == "end_turn"
        connection = reg.runtime(agent).connection
        assert connection is not None and connection.process.pid is not None
        processes[agent] = connection.process
    return processes


def cache_entry(cache: LimitsCache) -> dict[str, Any]:
    """The demo agent's entry of the limits cache file."""
    entry: dict[str, Any] = json.loads(cache.path.read_text())["agents"]["demo"]
    return entry


def ended(types: list[str]) -> bool:
    """Whether a transcript holds its turn's end (what the agent sent after it may follow)."""
    return "prompt" in types and "turn_end" in types[types.index("prompt"):]


def records(tmp_path: Path, sessions: int) -> list[list[str]]:
    """The record types of each transcript (one per session)."""
    files = sorted((tmp_path / "transcripts").glob("*.jsonl"))
    assert len(files) == sessions
    return [[json.loads(line)["type"] for line in file.read_text().splitlines()]
            for file in files]


async def test_a_deadline_bounds_the_shutdown_and_kills_an_agent_that_will_not_go(
        tmp_path: Path) -> None:
    cache = LimitsCache(tmp_path / "limits.json")
    async with lingering_registry(tmp_path, cache) as reg:
        processes = await run_turns(reg, tmp_path, ("script", "demo"))
        assert cache_entry(cache)["holders"]  # this process is listed while it runs
        with anyio.fail_after(HANG):
            await reg.aclose(deadline=anyio.current_time() + EXIT_BUDGET)
    script, demo = processes["script"], processes["demo"]
    assert not alive(script.pid) and not alive(demo.pid), "an agent outlived the shutdown"
    # The lingering agent was asked first (its stdin closed), then killed at the deadline;
    # the demo agent went by itself when asked.
    assert "stdin closed" in (tmp_path / "agent.log").read_text()
    assert script.exit_status == -signal.SIGKILL
    assert demo.exit_status == 0
    assert all(ended(types) for types in records(tmp_path, 2)), records(tmp_path, 2)
    # The limits cache keeps the figures, without this process's liveness record.
    entry = cache_entry(cache)
    assert entry["holders"] == [] and entry["state"]["status"] == "fresh"


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
        # The script agent only: what it is about is the transcript and the agent (a
        # write pending when the registry is left: the test after this one).
        async with lingering_registry(tmp_path, cache, with_limits=False) as reg:
            processes = await run_turns(reg, tmp_path, ("script",))
            holder.start()
            await anyio.to_thread.run_sync(held.wait, 30)
            with anyio.fail_after(HANG):
                await reg.aclose(deadline=anyio.current_time() + EXIT_BUDGET)
    finally:
        release.set()
        holder.join(30)
    script = processes["script"]
    # The wait for the lock took the budget: the agent was killed (asking it first only
    # if there was time left).
    assert not alive(script.pid), "the agent outlived the shutdown"
    assert script.exit_status == -signal.SIGKILL
    assert all(ended(types) for types in records(tmp_path, 1)), records(tmp_path, 1)


# Run by the test below in a process of its own: a registry with the demo agent (it
# reports account limits) runs a turn, waits for the test to take the cache's lock, runs
# another (a cache write is then pending, waiting for the lock), and leaves.
LEAVING = """
import sys
from pathlib import Path

import anyio

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.storage.limits_cache import LimitsCache

root = Path(sys.argv[1])

async def main() -> None:
    config = load_config_mapping({"agents": {"demo": {
        "command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
        "env": {"LOUISE_DEMO_STATE_DIR": str(root / "demo-state")}}}})
    cache = LimitsCache(root / "limits.json")
    async with SessionRegistry(config, limits_cache=cache,
                               transcripts_dir=root / "transcripts") as reg:
        session = await reg.new_session("demo", str(root))
        assert await reg.prompt(session.session_id, "hello") == "end_turn"
        print("turned", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)  # the lock is held now
        assert await reg.prompt(session.session_id, "again") == "end_turn"
        print("leaving", flush=True)
    print("left", flush=True)

anyio.run(main)
"""


def test_leaving_the_registry_with_the_cache_lock_held_keeps_the_exit_budget(
        tmp_path: Path) -> None:
    """Another process holding the limits cache's lock (up to its 30 s timeout) while a
    write is pending: leaving the registry's `async with` (no deadline given, as the CLI
    does) and then the process end within the exit budget, the write abandoned with one
    line saying so; the wait says what it waits for. How long it takes: bench/quit.py."""
    import os
    import subprocess

    script = tmp_path / "leaving.py"
    script.write_text(LEAVING)
    root = str(Path(__file__).resolve().parents[2])  # this checkout's louise
    child = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
        env={**os.environ, "PYTHONPATH": root})
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline() == "turned\n"
        with durable.locked(tmp_path / "limits.json"):
            child.stdin.write("go\n")
            child.stdin.flush()
            # Held until the process ends or the hang guard (the lock's timeout is 30 s).
            out, err = child.communicate(timeout=HANG)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 0, err
    assert out.splitlines() == ["leaving", "left"], (out, err)
    assert "Traceback" not in err, err
    assert "waiting for the limits cache" in err, err
    assert err.count("gave up updating the limits cache") == 1, err
    # The file is intact: the last completed write (the first turn's), whole.
    assert cache_entry(LimitsCache(tmp_path / "limits.json"))["state"]["status"] == "fresh"
