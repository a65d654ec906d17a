"""`louise.capabilities.terminal.TerminalHost` against real subprocesses: a terminal's
lifetime (the whole process group killed, an exit seen while a background child holds the
output, everything released with the host) and what its subscribers see. Output, limits,
environment and errors: test_client_terminal.py, whose helpers and fixtures these tests use.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from louise.acp.errors import RpcError
from louise.capabilities.terminal import TerminalHost
from louise.capabilities.terminal_events import (
    TerminalCreated,
    TerminalEvent,
    TerminalExited,
    TerminalOutput,
)
from tests.integration.test_client_terminal import (  # noqa: F401 (the fixtures)
    CHILD_THEN_WAIT,
    PATIENCE,
    PY,
    anyio_backend_fixture,
    host_fixture,
    ids,
    is_dead,
    output_when,
    python,
    wait_dead,
)


@pytest.mark.anyio
async def test_kill_reaches_the_whole_process_group(host: TerminalHost) -> None:
    tid = await python(host, CHILD_THEN_WAIT)
    child_pid = int((await output_when(host, tid, "\n"))["output"])
    assert not is_dead(child_pid)
    await host.kill(ids(tid))
    await wait_dead(child_pid)
    with anyio.fail_after(PATIENCE):
        assert (await host.wait_for_exit(ids(tid)))["signal"] == "SIGKILL"


@pytest.mark.anyio
async def test_exit_reported_while_a_background_child_holds_the_output(
    host: TerminalHost,
) -> None:
    # The leader exits at once; its child keeps stdout open. Exit is still reported
    # (after the host's grace period), and release kills the child.
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print(child.pid, flush=True)\n"
    )
    tid = await python(host, code)
    with anyio.fail_after(PATIENCE):
        assert await host.wait_for_exit(ids(tid)) == {"exitCode": 0, "signal": None}
    child_pid = int((await host.output(ids(tid)))["output"])
    assert not is_dead(child_pid)
    await host.release(ids(tid))
    await wait_dead(child_pid)


@pytest.mark.anyio
async def test_release_all_kills_running_processes(host: TerminalHost) -> None:
    tids = [await python(host, CHILD_THEN_WAIT) for _ in range(3)]
    child_pids = [int((await output_when(host, tid, "\n"))["output"]) for tid in tids]
    await host.release_all()
    assert host.terminal_ids == ()
    for pid in child_pids:
        await wait_dead(pid)
    with pytest.raises(RpcError):
        await host.output(ids(tids[0]))


@pytest.mark.anyio
async def test_leaving_the_host_context_releases_everything(tmp_path: Path) -> None:
    async with TerminalHost(tmp_path.resolve()) as terminals:
        tid = await python(
            terminals, "import os, time; print(os.getpid(), flush=True); time.sleep(600)"
        )
        pid = int((await output_when(terminals, tid, "\n"))["output"])
    assert is_dead(pid)
    with pytest.raises(RuntimeError):
        await python(terminals, "print(1)")


@pytest.mark.anyio
async def test_host_with_external_task_group(tmp_path: Path) -> None:
    async with anyio.create_task_group() as group:
        terminals = TerminalHost(tmp_path.resolve(), task_group=group)
        tid = await python(terminals, "print('external')")
        with anyio.fail_after(PATIENCE):
            await terminals.wait_for_exit(ids(tid))
        assert (await terminals.output(ids(tid)))["output"] == "external\n"
        await terminals.release_all()


# -- subscriptions -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_subscribers_see_created_output_and_exit_in_order(host: TerminalHost) -> None:
    events: list[TerminalEvent] = []
    host.subscribe(events.append)
    tid = await python(host, "print('one', flush=True); print('two')")
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    assert isinstance(events[0], TerminalCreated)
    assert events[0].terminal_id == tid
    assert events[0].command == PY
    assert isinstance(events[-1], TerminalExited)
    assert events[-1].status.exit_code == 0
    chunks = [e for e in events[1:-1] if isinstance(e, TerminalOutput)]
    assert len(chunks) == len(events) - 2
    assert "".join(c.text for c in chunks) == "one\ntwo\n"
    assert b"".join(c.data for c in chunks) == b"one\ntwo\n"


@pytest.mark.anyio
async def test_subscribe_replays_retained_output_then_follows(
    host: TerminalHost, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    tid = await python(
        host,
        "import os, time\n"
        "print('early', flush=True)\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
        "print('late')\n",
    )
    await output_when(host, tid, "early\n")  # the newline may arrive in a later read
    events: list[TerminalEvent] = []
    unsubscribe = host.subscribe(events.append, tid)
    assert events == [TerminalOutput(tid, b"early\n", "early\n", replay=True)]
    go.touch()
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    assert "".join(e.text for e in events if isinstance(e, TerminalOutput)) == "early\nlate\n"
    assert isinstance(events[-1], TerminalExited)
    unsubscribe()

    # After the exit, a new subscriber gets the whole picture at once.
    later: list[TerminalEvent] = []
    host.subscribe(later.append, tid)
    assert later == [
        TerminalOutput(tid, b"early\nlate\n", "early\nlate\n", replay=True),
        TerminalExited(tid, events[-1].status),
    ]
    with pytest.raises(KeyError):
        host.subscribe(later.append, "term_unknown")


@pytest.mark.anyio
async def test_failing_listener_does_not_break_the_terminal(host: TerminalHost) -> None:
    def broken(event: TerminalEvent) -> None:
        raise RuntimeError("UI bug")

    host.subscribe(broken)
    tid = await python(host, "print('still fine')")
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    assert (await host.output(ids(tid)))["output"] == "still fine\n"
