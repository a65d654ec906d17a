"""Our client against an agent that attacks it mid-turn over real stdio: malformed
messages of every kind, dying while a child holds its stdout, flooding requests while
it reads nothing. Each time the turn ends as it should and nothing is lost."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.acp.connection import AgentConnection, open_connection
from louise.acp.errors import AcpError, ConnectionClosed, ProtocolErrorKind
from louise.acp.peer_limits import PeerLimits
from tests.integration.agents import Recorder, hostile_agent, wait_until

pytestmark = pytest.mark.anyio
TEXT = [{"type": "text", "text": "go"}]


async def test_every_malformed_message_mid_turn_is_reported_and_the_turn_completes() -> None:
    rec = Recorder()
    limits = PeerLimits(max_line_bytes=2 * 1024 * 1024)
    async with open_connection(hostile_agent("malformed"), rec.handlers(),
                               limits=limits) as conn:
        session = await conn.new_session("/")
        with anyio.fail_after(60):
            result = await conn.prompt(session.session_id, TEXT)
        assert result["stopReason"] == "end_turn"
        await wait_until(lambda: any(t.startswith("answers") for t in rec.texts()))
        texts = rec.texts()
        numbered = [t for t in texts if t.startswith("ok ")]
        assert numbered == [f"ok {n}" for n in range(len(numbered))]  # every chunk, in order
        assert len(numbered) >= 30
        # Each bad request got one answer: null id for unusable ids, its own otherwise.
        # The duplicate of 7010 is refused as a duplicate (-32600) while the first is still
        # being handled; when the first was already answered (-32601, unknown method), the
        # second is no longer a duplicate and is answered the same way. Either way: one
        # answer each.
        expected = {"answers " + " ".join(sorted([
            "7001:-32600", "7003:-32600", "7004:-32700", "7005:-32600", "7006:-32600",
            *second, "7010:-32601", *["None:-32600"] * 4]))
            for second in (["7010:-32600"], ["7010:-32601"])}
        assert texts[-1] in expected
        assert set(conn.peer.protocol_error_counts) == set(ProtocolErrorKind)
        assert conn.peer.protocol_error_counts[ProtocolErrorKind.INVALID_ID] == 12
        assert conn.is_open
        # The connection still works after all that.
        assert (await conn.prompt(session.session_id, TEXT))["stopReason"] == "end_turn"


def _pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone for our purposes


@contextlib.contextmanager
def child_pid_file(tmp_path: Path) -> Iterator[Path]:
    """Where the agent writes its child's pid; the child is killed afterwards, whatever
    happened, so that no test leaves a process behind."""
    path = tmp_path / "child.pid"
    try:
        yield path
    finally:
        if path.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(path.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("mode", ["exit_with_child", "exit_with_daemon"])
async def test_agent_exit_fails_the_prompt_while_a_child_holds_stdout(
        mode: str, tmp_path: Path) -> None:
    rec = Recorder()
    with child_pid_file(tmp_path) as pid_file:
        command = hostile_agent(mode, FAKE_CHILD_PID_FILE=str(pid_file))
        async with open_connection(command, rec.handlers()) as conn:
            session = await conn.new_session("/")
            with pytest.raises(ConnectionClosed) as info, anyio.fail_after(30):
                await conn.prompt(session.session_id, TEXT)
            assert info.value.exit_status == 5
            assert "a child keeps stdout open" in info.value.stderr_tail
            assert rec.texts() == ["before"]  # what it wrote before exiting still arrived
            child = int(pid_file.read_text())
            assert _pid_alive(child)  # the child did hold the pipe all along
            with pytest.raises(ConnectionClosed):
                await conn.new_session("/")
        if mode == "exit_with_child":  # in the agent's process group: stopped with it
            await wait_until(lambda: not _pid_alive(child))


class InstantFiles:
    """An fs handler that answers at once with a 4 KiB file."""

    def __init__(self) -> None:
        self.reads = 0

    async def read_text_file(self, params: Mapping[str, Any]) -> Any:
        self.reads += 1
        return {"content": "x" * 4096}

    async def write_text_file(self, params: Mapping[str, Any]) -> Any:
        return None


async def test_no_reply_is_dropped_while_the_agent_floods_requests_and_reads_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    rec = Recorder()
    files = InstantFiles()
    command = hostile_agent("flood_requests", FAKE_FLOOD="10000", FAKE_PAUSE="6")
    caplog.set_level(logging.WARNING, logger="louise.acp")
    async with open_connection(command, rec.handlers(fs=files, fs_read=True)) as conn:
        session = await conn.new_session("/")
        with anyio.fail_after(120):
            result = await conn.prompt(session.session_id, TEXT)
        assert result["stopReason"] == "end_turn"
        await wait_until(lambda: len(rec.texts()) == 2)
        assert rec.texts()[1] == "answered 10000 errors 0"
        assert files.reads == 10000
    # The stall happened (our replies did fill up) and was said.
    assert any("not reading our replies" in r.getMessage() for r in caplog.records)


async def test_an_unsupported_protocol_version_is_named_briefly() -> None:
    conn = AgentConnection(hostile_agent("huge_version"), Recorder().handlers())
    async with anyio.create_task_group() as tg:
        await tg.start(conn.run)
        with pytest.raises(AcpError) as info:
            await conn.initialize()
        assert not conn.is_open
    message = str(info.value)
    assert "protocol version '9999" in message and "louise supports version 1" in message
    assert len(message) < 500
