"""`louise.capabilities.terminal.TerminalHost` against real subprocesses."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.acp.errors import INVALID_PARAMS, RpcError
from louise.capabilities.terminal import TerminalHost
from louise.capabilities.terminal_events import (
    TerminalEvent,
    TerminalOutput,
)

PY = sys.executable
# Generous: these bound waits for conditions, they never measure speed.
PATIENCE = 60


@pytest.fixture(name="anyio_backend")
def anyio_backend_fixture() -> str:
    return "asyncio"


@pytest.fixture(name="host")
async def host_fixture(tmp_path: Path) -> AsyncIterator[TerminalHost]:
    async with TerminalHost(tmp_path.resolve(), eof_grace=0.5) as terminals:
        yield terminals


async def create(host: TerminalHost, command: str, *args: str, **extra: Any) -> str:
    params: dict[str, Any] = {"sessionId": "s1", "command": command, "args": list(args), **extra}
    result = await host.create(params)
    assert set(result) == {"terminalId"}
    terminal_id = result["terminalId"]
    assert isinstance(terminal_id, str)
    return terminal_id


async def python(host: TerminalHost, code: str, **extra: Any) -> str:
    return await create(host, PY, "-c", code, **extra)


def ids(terminal_id: str) -> dict[str, str]:
    return {"sessionId": "s1", "terminalId": terminal_id}


async def output_when(host: TerminalHost, terminal_id: str, needle: str) -> dict[str, Any]:
    """Poll `terminal/output` until it contains `needle`."""
    with anyio.fail_after(PATIENCE):
        while True:
            result = await host.output(ids(terminal_id))
            if needle in result["output"]:
                return result
            await anyio.sleep(0.02)


def is_dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A killed grandchild may linger as a zombie until init reaps it: that is dead too.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


async def wait_dead(pid: int) -> None:
    with anyio.fail_after(PATIENCE):
        while not is_dead(pid):
            await anyio.sleep(0.02)


# -- output and exit -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_output_and_exit_code(host: TerminalHost) -> None:
    tid = await python(host, "import sys; print('hello'); sys.stderr.write('oops\\n'); sys.exit(3)")
    with anyio.fail_after(PATIENCE):
        status = await host.wait_for_exit(ids(tid))
    assert status == {"exitCode": 3, "signal": None}
    result = await host.output(ids(tid))
    # stdout and stderr land in one buffer (their order across pipes is the writer's).
    assert sorted(result["output"].splitlines()) == ["hello", "oops"]
    assert result["truncated"] is False
    assert result["exitStatus"] == {"exitCode": 3, "signal": None}


@pytest.mark.anyio
async def test_create_returns_while_running_and_no_exit_status_yet(host: TerminalHost) -> None:
    tid = await python(host, "import time; print('ready', flush=True); time.sleep(600)")
    result = await output_when(host, tid, "ready\n")
    assert result == {"output": "ready\n", "truncated": False}
    assert "exitStatus" not in result
    await host.release(ids(tid))


@pytest.mark.anyio
async def test_kill_reports_signal_and_keeps_terminal(host: TerminalHost) -> None:
    tid = await python(host, "import time; print('before', flush=True); time.sleep(600)")
    await output_when(host, tid, "before\n")
    assert await host.kill(ids(tid)) == {}
    with anyio.fail_after(PATIENCE):
        status = await host.wait_for_exit(ids(tid))
    assert status == {"exitCode": None, "signal": "SIGKILL"}
    # Still valid: output readable, kill again harmless.
    result = await host.output(ids(tid))
    assert result["output"] == "before\n"
    assert result["exitStatus"] == {"exitCode": None, "signal": "SIGKILL"}
    assert await host.kill(ids(tid)) == {}
    assert tid in host.terminal_ids


@pytest.mark.anyio
async def test_release_forgets_the_terminal(host: TerminalHost) -> None:
    tid = await python(host, "import os, time; print(os.getpid(), flush=True); time.sleep(600)")
    result = await output_when(host, tid, "\n")
    pid = int(result["output"])
    assert await host.release(ids(tid)) == {}
    assert is_dead(pid)
    assert tid not in host.terminal_ids
    for call in (host.output, host.wait_for_exit, host.kill, host.release):
        with pytest.raises(RpcError) as info:
            await call(ids(tid))
        assert info.value.code == INVALID_PARAMS
        assert "unknown terminal" in info.value.message


@pytest.mark.anyio
async def test_release_of_finished_terminal(host: TerminalHost) -> None:
    tid = await python(host, "print('done')")
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    assert await host.release(ids(tid)) == {}
    with pytest.raises(RpcError):
        await host.output(ids(tid))


@pytest.mark.anyio
async def test_wait_for_exit_blocks_until_the_command_ends(
    host: TerminalHost, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    tid = await python(
        host,
        "import os, sys, time\n"
        "print('waiting', flush=True)\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
        "sys.exit(7)\n",
    )
    results: list[dict[str, Any]] = []

    async def waiter() -> None:
        results.append(await host.wait_for_exit(ids(tid)))

    with anyio.fail_after(PATIENCE):
        async with anyio.create_task_group() as group:
            group.start_soon(waiter)
            await output_when(host, tid, "waiting")
            assert results == []  # the command cannot have ended: it waits for `go`
            go.touch()
    assert results == [{"exitCode": 7, "signal": None}]


@pytest.mark.anyio
async def test_release_wakes_a_pending_wait_for_exit(host: TerminalHost) -> None:
    tid = await python(host, "import time; print('up', flush=True); time.sleep(600)")
    await output_when(host, tid, "up")
    results: list[dict[str, Any]] = []

    async def waiter() -> None:
        results.append(await host.wait_for_exit(ids(tid)))

    with anyio.fail_after(PATIENCE):
        async with anyio.create_task_group() as group:
            group.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            await host.release(ids(tid))
    assert results == [{"exitCode": None, "signal": "SIGKILL"}]


# -- byte limit ----------------------------------------------------------------------------


def expected_tail(full: bytes, limit: int) -> bytes:
    """The longest suffix of `full` within `limit` bytes that starts on a character."""
    tail = full[-limit:] if limit else b""
    while tail and tail[0] & 0xC0 == 0x80:
        tail = tail[1:]
    return tail


@pytest.mark.anyio
@pytest.mark.parametrize(("char", "limit"), [("€", 1001), ("€", 1000), ("é", 998), ("😀", 1002)])
async def test_byte_limit_truncates_from_start_on_character_boundary(
    host: TerminalHost, char: str, limit: int
) -> None:
    code = (
        "import sys\n"
        "sys.stdout.write('START')\n"
        f"for _ in range(200): sys.stdout.write({char!r} * 1000); sys.stdout.flush()\n"
        "sys.stdout.write('END')\n"
    )
    tid = await python(host, code, outputByteLimit=limit)
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    result = await host.output(ids(tid))
    out = result["output"]
    assert result["truncated"] is True
    encoded = out.encode("utf-8")  # would fail on a split surrogate; U+FFFD checked below
    assert len(encoded) <= limit
    assert "\ufffd" not in out
    assert out.endswith("END")
    assert "START" not in out
    full = b"START" + (char * 200_000).encode() + b"END"
    assert encoded == expected_tail(full, limit)


@pytest.mark.anyio
async def test_no_truncation_under_the_limit(host: TerminalHost) -> None:
    tid = await python(host, "print('€' * 10)", outputByteLimit=31)
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    assert await host.output(ids(tid)) == {
        "output": "€" * 10 + "\n",
        "truncated": False,
        "exitStatus": {"exitCode": 0, "signal": None},
    }


@pytest.mark.anyio
async def test_zero_limit_keeps_nothing(host: TerminalHost) -> None:
    tid = await python(host, "print('x')", outputByteLimit=0)
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    result = await host.output(ids(tid))
    assert result["output"] == ""
    assert result["truncated"] is True


@pytest.mark.anyio
async def test_default_limit_from_host(tmp_path: Path) -> None:
    async with TerminalHost(tmp_path.resolve(), output_byte_limit=50) as terminals:
        tid = await python(terminals, "print('a' * 99)")
        with anyio.fail_after(PATIENCE):
            await terminals.wait_for_exit(ids(tid))
        result = await terminals.output(ids(tid))
    assert result["output"] == "a" * 49 + "\n"
    assert result["truncated"] is True


@pytest.mark.anyio
async def test_a_reply_carries_at_most_its_json_budget_of_output(tmp_path: Path) -> None:
    """A NUL takes 6 bytes in JSON: the output a reply carries is cut to the budget as
    encoded, from the start, and says it was."""
    async with TerminalHost(tmp_path.resolve(), max_output_json_bytes=64) as terminals:
        tid = await python(terminals, "import sys; sys.stdout.write('\\0' * 100 + 'end')")
        with anyio.fail_after(PATIENCE):
            await terminals.wait_for_exit(ids(tid))
        result = await terminals.output(ids(tid))
    assert result["output"] == "\0" * 10 + "end"
    assert len(json.dumps(result["output"], ensure_ascii=False)) - 2 <= 64
    assert result["truncated"] is True


@pytest.mark.anyio
async def test_requested_limit_is_clamped_to_the_host_maximum(tmp_path: Path) -> None:
    async with TerminalHost(tmp_path.resolve(), max_output_byte_limit=10) as terminals:
        tid = await python(terminals, "print('b' * 99)", outputByteLimit=10**9)
        with anyio.fail_after(PATIENCE):
            await terminals.wait_for_exit(ids(tid))
        result = await terminals.output(ids(tid))
    assert result["output"] == "b" * 9 + "\n"
    assert result["truncated"] is True


@pytest.mark.anyio
async def test_partial_character_is_held_back_until_complete(
    host: TerminalHost, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    code = (
        "import os, sys, time\n"
        "sys.stdout.buffer.write(b'x\\xe2\\x82'); sys.stdout.flush()\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
        "sys.stdout.buffer.write(b'\\xac\\n'); sys.stdout.flush()\n"
    )
    events: list[TerminalEvent] = []
    unsubscribe = host.subscribe(events.append)
    tid = await python(host, code)
    with anyio.fail_after(PATIENCE):
        while b"".join(e.data for e in events if isinstance(e, TerminalOutput)) != b"x\xe2\x82":
            await anyio.sleep(0.01)
    assert (await host.output(ids(tid)))["output"] == "x"
    go.touch()
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    assert (await host.output(ids(tid)))["output"] == "x€\n"
    texts = "".join(e.text for e in events if isinstance(e, TerminalOutput))
    assert texts == "x€\n"
    unsubscribe()


# -- environment and working directory -----------------------------------------------------


@pytest.mark.anyio
async def test_env_merged_over_os_environ(
    host: TerminalHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOUISE_TEST_INHERITED", "from parent")
    monkeypatch.setenv("LOUISE_TEST_OVERRIDDEN", "parent value")
    code = (
        "import os\n"
        "for k in ('LOUISE_TEST_INHERITED', 'LOUISE_TEST_OVERRIDDEN', 'LOUISE_TEST_NEW'):\n"
        "    print(k, '=', os.environ.get(k))\n"
    )
    env = [
        {"name": "LOUISE_TEST_OVERRIDDEN", "value": "agent value"},
        {"name": "LOUISE_TEST_NEW", "value": "a b; $HOME"},
    ]
    tid = await python(host, code, env=env)
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    assert (await host.output(ids(tid)))["output"].splitlines() == [
        "LOUISE_TEST_INHERITED = from parent",
        "LOUISE_TEST_OVERRIDDEN = agent value",
        "LOUISE_TEST_NEW = a b; $HOME",  # no shell: nothing is expanded
    ]


@pytest.mark.anyio
async def test_cwd_given_and_default(host: TerminalHost, tmp_path: Path) -> None:
    sub = tmp_path / "sub dir"
    sub.mkdir()
    tid = await python(host, "import os; print(os.getcwd())", cwd=str(sub))
    default_tid = await python(host, "import os; print(os.getcwd())")
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
        await host.wait_for_exit(ids(default_tid))
    assert (await host.output(ids(tid)))["output"] == f"{sub.resolve()}\n"
    assert (await host.output(ids(default_tid)))["output"] == f"{tmp_path.resolve()}\n"


@pytest.mark.anyio
async def test_no_shell_interpretation(host: TerminalHost) -> None:
    tid = await create(host, PY, "-c", "import sys; print(sys.argv[1:])", "*", "$HOME", "a|b")
    with anyio.fail_after(PATIENCE):
        await host.wait_for_exit(ids(tid))
    assert (await host.output(ids(tid)))["output"] == "['*', '$HOME', 'a|b']\n"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "params",
    [
        {"command": ""},
        {"command": PY, "args": "not a list"},
        {"command": PY, "args": [1]},
        {"command": PY, "cwd": "relative/dir"},
        {"command": PY, "cwd": "/nonexistent/louise/test/dir"},
        {"command": PY, "env": [{"name": "A"}]},
        {"command": PY, "env": [{"name": "A=B", "value": "x"}]},
        {"command": PY, "env": {"A": "B"}},
        {"command": PY, "outputByteLimit": -1},
        {"command": "louise-no-such-command-xyz"},
        {"command": "ls -la"},
    ],
)
async def test_invalid_create_params(host: TerminalHost, params: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as info:
        await host.create({"sessionId": "s1", **params})
    assert info.value.code == INVALID_PARAMS
    assert host.terminal_ids == ()


@pytest.mark.anyio
async def test_command_not_found_explains_no_shell(host: TerminalHost) -> None:
    with pytest.raises(RpcError) as info:
        await create(host, "echo hi && ls")
    assert "without a shell" in info.value.message


# -- process groups and cleanup ------------------------------------------------------------


CHILD_THEN_WAIT = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(600)\n"
)
