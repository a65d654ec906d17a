"""An agent's exit status is the one it exited with, whoever reaps it first.

asyncio's child watcher reaps an agent in a thread of its own; a transport closed before
that thread ran (a shutdown's close cut short by its deadline on a loaded machine) polls
the child itself, and the watcher then reports 255 ("Unknown child process"). A CI run
once saw exactly that: a SIGKILLed agent reported as 255. Here the watcher's thread is
made late on purpose, so the close always comes first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from louise.acp.process import AgentCommand, AgentProcess, unreaped_status

pytestmark = pytest.mark.anyio

# Ignores SIGTERM and its stdin's end: only SIGKILL ends it.
STUBBORN = ("import signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('up', flush=True)\n"
            "time.sleep(60)\n")


def late_watcher(monkeypatch: pytest.MonkeyPatch, delay: float) -> None:
    """asyncio's watcher calls `os.waitpid` (the subprocess module its own copy, bound at
    import): the watcher alone waits `delay` before it reaps."""
    original: Callable[[int, int], tuple[int, int]] = os.waitpid

    def late_waitpid(pid: int, options: int) -> tuple[int, int]:
        time.sleep(delay)
        return original(pid, options)

    monkeypatch.setattr(os, "waitpid", late_waitpid)


async def test_a_shutdown_past_its_deadline_keeps_the_sigkill_status(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    late_watcher(monkeypatch, 1.0)
    agent = AgentProcess(AgentCommand(sys.executable, ("-I", "-c", STUBBORN),
                                      cwd=str(tmp_path)), grace_seconds=5.0)
    async with anyio.create_task_group() as tg:
        await tg.start(agent.run)
        up = await agent.stdout.receive(16)
        assert up.startswith(b"up"), up
        with anyio.fail_after(30):
            # The deadline is already spent: SIGKILL at once, the close cut short.
            status = await agent.shutdown(deadline=anyio.current_time())
        tg.cancel_scope.cancel()
    assert status == -signal.SIGKILL, status
    assert agent.exit_status == -signal.SIGKILL


def test_an_exited_childs_status_is_read_without_reaping_it() -> None:
    child = subprocess.Popen([sys.executable, "-I", "-c", "import sys; sys.exit(7)"])
    try:
        deadline = time.monotonic() + 30
        while (status := unreaped_status(child.pid)) is None:
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.01)
        assert status == 7
        # Still there for its own reaper, with the same status.
        assert unreaped_status(child.pid) == 7
        assert child.wait(30) == 7
        assert unreaped_status(child.pid) is None  # reaped: nothing more to read
    finally:
        child.kill()
        child.wait(30)
