"""Our client against deliberately broken agents over real stdio."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from louise.acp.connection import open_connection
from louise.acp.errors import ConnectionClosed, ProtocolErrorKind, RequestTimeout
from louise.acp.peer_limits import PeerLimits
from tests.integration.agents import Recorder, raw_agent, wait_until

pytestmark = pytest.mark.anyio
TEXT = [{"type": "text", "text": "go"}]


async def test_garbage_line_is_skipped_and_the_turn_completes() -> None:
    rec = Recorder()
    async with open_connection(raw_agent("garbage"), rec.handlers()) as conn:
        session = await conn.new_session("/")
        result = await conn.prompt(session.session_id, TEXT)
        assert result["stopReason"] == "end_turn"
        await wait_until(lambda: "after garbage" in rec.texts())
        assert conn.peer.protocol_error_counts == {ProtocolErrorKind.INVALID_JSON: 1}
        assert "this is not json" in conn.peer.protocol_errors[0]


async def test_ten_megabyte_line_is_dropped_under_a_smaller_limit() -> None:
    rec = Recorder()
    limits = PeerLimits(max_line_bytes=1024 * 1024)
    async with open_connection(raw_agent("huge"), rec.handlers(), limits=limits) as conn:
        session = await conn.new_session("/")
        assert (await conn.prompt(session.session_id, TEXT))["stopReason"] == "end_turn"
        await wait_until(lambda: "after huge" in rec.texts())
        assert rec.texts() == ["after huge"]
        assert conn.peer.protocol_error_counts == {ProtocolErrorKind.OVERSIZED_LINE: 1}


async def test_ten_megabyte_line_is_delivered_under_the_default_limit() -> None:
    rec = Recorder()
    async with open_connection(raw_agent("huge"), rec.handlers()) as conn:
        session = await conn.new_session("/")
        await conn.prompt(session.session_id, TEXT)
        await wait_until(lambda: "after huge" in rec.texts())
        assert len(rec.texts()[0]) == 10 * 1024 * 1024


async def test_stderr_flood_during_initialize_does_not_deadlock() -> None:
    rec = Recorder()
    async with open_connection(raw_agent("stderr_flood_init"), rec.handlers(),
                               request_timeout=60) as conn:
        assert conn.initialized is not None
        session = await conn.new_session("/")
        assert session.session_id == "raw-1"
        await wait_until(lambda: conn.process.stderr.total_bytes >= 5 * 1024 * 1024)
        assert len(conn.process.stderr.tail()) <= 64 * 1024


async def test_agent_killed_mid_prompt_fails_the_prompt_with_status_and_stderr() -> None:
    rec = Recorder()
    async with open_connection(raw_agent("crash_mid_prompt"), rec.handlers()) as conn:
        session = await conn.new_session("/")
        with pytest.raises(ConnectionClosed) as info:
            with anyio.fail_after(20):
                await conn.prompt(session.session_id, TEXT)
        assert info.value.exit_status == 3
        assert "model backend went away" in info.value.stderr_tail
        assert "exit status 3" in str(info.value)
        assert rec.texts() == ["partial"]  # updates sent before the crash still arrive
        with pytest.raises(ConnectionClosed):
            await conn.new_session("/")


async def test_agent_that_never_answers_session_new_times_out_clearly() -> None:
    async with open_connection(raw_agent("never_answer_new"), Recorder().handlers(),
                               request_timeout=0.5) as conn:
        with pytest.raises(RequestTimeout) as info:
            await conn.new_session("/")
        assert "open a new session" in str(info.value)
        assert conn.is_open  # a timeout does not kill the connection


async def test_prompt_that_never_ends_can_be_cancelled() -> None:
    rec = Recorder()
    async with open_connection(raw_agent("never_end_prompt"), rec.handlers()) as conn:
        session = await conn.new_session("/")
        results: list[dict[str, object]] = []

        async def turn() -> None:
            results.append(await conn.prompt(session.session_id, TEXT))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            await wait_until(lambda: "working" in rec.texts())
            await conn.cancel(session.session_id)
        assert results == [{"stopReason": "cancelled"}]
        assert rec.texts() == ["working", "stopping"]


async def test_update_before_session_new_reply_is_delivered() -> None:
    rec = Recorder()
    async with open_connection(raw_agent("early_update"), rec.handlers()) as conn:
        session = await conn.new_session("/")
        await wait_until(lambda: rec.texts())
        assert rec.updates[0][0] == session.session_id
        assert rec.texts() == ["before the reply"]


async def test_update_after_prompt_reply_is_delivered() -> None:
    rec = Recorder()
    async with open_connection(raw_agent("late_update"), rec.handlers()) as conn:
        session = await conn.new_session("/")
        await conn.prompt(session.session_id, TEXT)
        await wait_until(lambda: "usage_update" in rec.kinds())
        assert rec.kinds() == ["agent_message_chunk", "usage_update"]


async def test_custom_notifications_are_routed_or_ignored_without_harm() -> None:
    rec = Recorder()
    async with open_connection(raw_agent("custom_notification"), rec.handlers()) as conn:
        session = await conn.new_session("/")
        await conn.prompt(session.session_id, TEXT)
        await wait_until(lambda: "after custom" in rec.texts())
        assert rec.ext == [("_auth/status_update", {"authStatus": {"kind": "none"}})]
        assert not conn.peer.protocol_errors


async def test_unknown_requests_from_the_agent_get_method_not_found() -> None:
    rec = Recorder()
    async with open_connection(raw_agent("unknown_request"), rec.handlers()) as conn:
        session = await conn.new_session("/")
        assert (await conn.prompt(session.session_id, TEXT))["stopReason"] == "end_turn"
        await wait_until(lambda: len(rec.texts()) == 2)
        for text in rec.texts():
            assert '"code": -32601' in text


async def test_missing_command_is_a_readable_error() -> None:
    from louise.acp.process import AgentCommand

    with pytest.raises(OSError) as info:
        async with open_connection(AgentCommand("louise-no-such-agent-xyz"), Recorder().handlers()):
            pass
    assert "agent command not found" in str(info.value)


async def test_a_missing_known_agent_names_its_package_and_runtime(tmp_path: Path) -> None:
    from louise.acp.process import AgentCommand

    with pytest.raises(OSError) as info:
        async with open_connection(AgentCommand(str(tmp_path / "claude-agent-acp")),
                                   Recorder().handlers()):
            pass
    message = str(info.value)
    assert "npm install -g @agentclientprotocol/claude-agent-acp" in message, message
    assert "Node.js ≥ 22" in message, message
