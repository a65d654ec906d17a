"""The headless registry over real stdio: the demo agent, the SDK fake and broken agents."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.acp.errors import ConnectionClosed
from louise.config.loading import load_config_mapping
from louise.config.model import Config
from louise.permissions.broker import PermissionRequest, QueueView
from louise.registry import SessionRegistry
from louise.registry.events import LimitsChanged, RegistryEvent
from louise.registry.records import RegistryError
from louise.storage.limits_cache import LimitsCache
from tests.integration.agents import FAKES, wait_until

pytestmark = pytest.mark.anyio
DEMO = [sys.executable, "-P", "-m", "louise.demo_agent"]


def make_config(**extra_agents: list[str]) -> Config:
    agents: dict[str, Any] = {name: {"command": argv[0], "args": argv[1:]}
                              for name, argv in extra_agents.items()}
    return load_config_mapping({"agents": agents})


class ScriptedDecider:
    """Answers with the first option of a kind; can hold the decision until released."""

    def __init__(self, kind: str | None = "allow_once", hold: bool = False) -> None:
        self.kind = kind
        self.hold = hold
        self.asked: list[PermissionRequest] = []
        self.cancelled = 0
        self.release = anyio.Event()

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        self.asked.append(request)
        if self.hold:
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
        return request.option_of_kind(self.kind) if self.kind else None


@asynccontextmanager
async def registry(config: Config | None = None, decider: Any = None,
                   events: list[RegistryEvent] | None = None) -> AsyncIterator[SessionRegistry]:
    async with SessionRegistry(config or make_config(), decider=decider,
                               grace_seconds=0.5) as reg:
        if events is not None:
            reg.subscribe(events.append)
        yield reg


def agent_texts(reg: SessionRegistry, session_id: str) -> str:
    return "".join(m.text for m in reg.session(session_id).messages() if m.role == "agent")


# ----------------------------------------------------------------------------- sessions


async def test_several_sessions_share_one_agent_process(tmp_path: Path) -> None:
    async with registry() as reg:
        first = await reg.new_session("demo", str(tmp_path))
        second = await reg.new_session("demo", str(tmp_path))
        assert first.session_id != second.session_id
        pid = reg.runtime("demo").connection.process.pid  # type: ignore[union-attr]
        assert await reg.prompt(first.session_id, "hello one") == "end_turn"
        assert await reg.prompt(second.session_id, "hello two") == "end_turn"
        assert reg.runtime("demo").connection.process.pid == pid  # type: ignore[union-attr]
        assert "hello one" in agent_texts(reg, first.session_id)
        assert "hello two" in agent_texts(reg, second.session_id)
        assert "hello two" not in agent_texts(reg, first.session_id)


async def test_an_agents_own_terminals_are_bounded_by_its_terminal_output_limit(
        tmp_path: Path) -> None:
    config = load_config_mapping({"terminal": {"output_byte_limit": 4096}, "agents": {
        "small": {"command": DEMO[0], "args": DEMO[1:],
                  "terminal": {"output_byte_limit": 123}}}})
    async with registry(config) as reg:
        demo = await reg.new_session("demo", str(tmp_path))
        small = await reg.new_session("small", str(tmp_path))
        assert demo.bounds.max_agent_terminal_bytes == 4096
        assert small.bounds.max_agent_terminal_bytes == 123


async def test_updates_before_the_new_session_reply_reach_the_session(tmp_path: Path) -> None:
    async with registry() as reg:
        session = await reg.new_session("demo", str(tmp_path))
        # The demo agent sends usage and commands before its session/new reply (like vibe).
        assert session.usage_size is not None
        assert session.commands


async def test_crash_mid_turn_errors_every_session_of_that_agent_only(tmp_path: Path) -> None:
    config = make_config(other=DEMO)
    async with registry(config) as reg:
        s1 = await reg.new_session("demo", str(tmp_path))
        s2 = await reg.new_session("demo", str(tmp_path))
        s3 = await reg.new_session("other", str(tmp_path))
        old_pid = reg.runtime("demo").connection.process.pid  # type: ignore[union-attr]
        with pytest.raises(ConnectionClosed) as info, anyio.fail_after(30):
            await reg.prompt(s1.session_id, "/scenario fail crash")
        assert info.value.exit_status == 3
        assert s1.status == "error" and s2.status == "error"
        assert s2.error is not None and "exit status 3" in s2.error
        assert s3.status == "ready"  # another Agent is untouched
        # The next use restarts the process and reattaches the session (session/load into
        # a fresh model, which replaces the one held before).
        assert await reg.prompt(s2.session_id, "after the crash") == "end_turn"
        assert reg.session(s2.session_id).status == "ready"
        new_pid = reg.runtime("demo").connection.process.pid  # type: ignore[union-attr]
        assert new_pid != old_pid
        assert "after the crash" in agent_texts(reg, s2.session_id)


async def test_prompts_on_one_session_queue(tmp_path: Path) -> None:
    async with registry() as reg:
        session = await reg.new_session("demo", str(tmp_path))
        reasons: list[str] = []

        async def turn(text: str) -> None:
            reasons.append(await reg.prompt(session.session_id, text))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn, "/scenario stream chunks=20 size=5 delay_ms=5")
            tg.start_soon(turn, "second")
        assert reasons == ["end_turn", "end_turn"]
        users = [m.text for m in session.messages() if m.role == "user"]
        assert users == ["/scenario stream chunks=20 size=5 delay_ms=5", "second"]


async def test_list_sessions_and_load_replays_history(tmp_path: Path) -> None:
    async with registry() as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "remember me")
        listed = await reg.list_sessions("demo")
        assert session.acp_id in {info["sessionId"] for info in listed}
    async with registry() as reg:
        loaded = await reg.load_session("demo", listed[0]["sessionId"], str(tmp_path))
        assert loaded.status == "ready"
        assert loaded.messages(), "history replayed as updates before the reply"


# ----------------------------------------------------------------------------- permissions


async def test_cancel_answers_pending_permission_and_marks_tool_calls(tmp_path: Path) -> None:
    decider = ScriptedDecider(hold=True)
    async with registry(decider=decider) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        reasons: list[str] = []

        async def turn() -> None:
            reasons.append(await reg.prompt(session.session_id, "/scenario edit"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            # On screen: the broker holds it once its rules had their say.
            await wait_until(lambda: len(reg.broker.pending()) == 1)
            assert session.status == "waiting_permission"
            await reg.cancel(session.session_id)
        assert reasons == ["cancelled"]
        assert decider.cancelled == 1
        assert not reg.broker.pending()
        assert all(call.display_status == "cancelled" for call in session.tool_calls.values())
        assert not (tmp_path / "hello.py").exists(), "nothing written after a cancel"
        assert session.status == "ready"


async def test_agent_exit_cancels_a_pending_permission(tmp_path: Path) -> None:
    decider = ScriptedDecider(hold=True)
    async with registry(decider=decider) as reg:
        session = await reg.new_session("demo", str(tmp_path))

        async def turn() -> None:
            with pytest.raises(ConnectionClosed):
                await reg.prompt(session.session_id, "/scenario edit")

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            # The person is being asked (the session says it waits a moment before: a kill
            # then would withdraw the request before anyone was asked).
            await wait_until(lambda: decider.asked)
            assert session.status == "waiting_permission"
            reg.runtime("demo").connection.process.signal_group(9)  # type: ignore[union-attr]
        await wait_until(lambda: decider.cancelled == 1)
        assert not reg.broker.pending()
        assert session.status == "error"
        assert not (tmp_path / "hello.py").exists()


async def test_permission_allow_writes_and_reject_does_not(tmp_path: Path) -> None:
    async with registry(decider=ScriptedDecider("reject_once")) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "/scenario edit")
        assert not (tmp_path / "hello.py").exists()
    async with registry(decider=ScriptedDecider("allow_once")) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "/scenario edit")
        assert (tmp_path / "hello.py").exists()


async def test_remembered_choice_is_scoped_to_workspace_and_agent_command(
    tmp_path: Path,
) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    # Same program, other argv: another agent command for remembered rules.
    config = make_config(twin=[sys.executable, "-P", "-X", "utf8", "-m", "louise.demo_agent"])
    always = ScriptedDecider("allow_always")
    async with registry(config, always) as reg:
        session = await reg.new_session("demo", str(here))
        await reg.prompt(session.session_id, "/scenario edit")
        assert len(always.asked) == 1
        (here / "hello.py").unlink()
    asker = ScriptedDecider("reject_once")
    async with registry(config, asker) as reg:
        session = await reg.new_session("demo", str(here))
        await reg.prompt(session.session_id, "/scenario edit")
        assert asker.asked == [], "remembered: same agent, workspace, kind and path"
        assert (here / "hello.py").exists()
        other_place = await reg.new_session("demo", str(there))
        await reg.prompt(other_place.session_id, "/scenario edit")
        assert len(asker.asked) == 1, "another workspace is asked again"
        twin = await reg.new_session("twin", str(here))
        await reg.prompt(twin.session_id, "/scenario edit")
        assert len(asker.asked) == 2, "another agent command is asked again"


async def test_fs_outside_the_roots_and_symlink_escapes_are_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    (workspace / "link.txt").symlink_to(secret)
    (workspace / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
    async with registry(decider=ScriptedDecider()) as reg:
        session = await reg.new_session("demo", str(workspace))
        await reg.prompt(session.session_id, f"/scenario read path={secret}")
        await reg.prompt(session.session_id, "/scenario read path=link.txt")
        await reg.prompt(session.session_id, "/scenario read path=notes.txt line=2 limit=2")
        text = agent_texts(reg, session.session_id)
        assert "top secret" not in text
        assert text.count("outside") >= 2
        assert "two\nthree\n" in text and "four" not in text


# ----------------------------------------------------------------------------- limits


def limit_statuses(events: list[RegistryEvent], agent: str) -> list[str]:
    return [e.state.status for e in events if isinstance(e, LimitsChanged) and e.agent == agent]


async def test_limits_lifecycle(tmp_path: Path) -> None:
    events: list[RegistryEvent] = []
    plain = [sys.executable, str(FAKES / "raw_agent.py")]
    async with registry(make_config(plain=plain), events=events) as reg:
        assert reg.inspect_limits("demo").status == "not_observed"
        assert reg.inspect_limits("plain").status == "not_observed"
        await reg.new_session("plain", str(tmp_path))
        assert reg.inspect_limits("plain").status == "unsupported"

        first = await reg.new_session("demo", str(tmp_path))
        await wait_until(lambda: reg.inspect_limits("demo").status == "fresh")
        assert limit_statuses(events, "demo")[:2] == ["loading", "fresh"]
        good = reg.inspect_limits("demo").snapshot
        assert good is not None and len(good.buckets) == 2

        # A read error keeps the last good snapshot (stale).
        await reg.prompt(first.session_id, "/scenario limits state=error")
        await wait_until(lambda: reg.inspect_limits("demo").status == "stale")
        state = reg.inspect_limits("demo")
        assert state.snapshot == good
        assert state.error == "ACP account limits read failed: " \
                              "Account limits are temporarily unavailable"

        # A valid push replaces everything; an invalid push is rejected whole.
        await reg.prompt(first.session_id, "/scenario limits state=fresh")
        await wait_until(lambda: reg.inspect_limits("demo").status == "fresh")
        fresh = reg.inspect_limits("demo").snapshot
        await reg.prompt(first.session_id, "/scenario limits state=invalid")
        await wait_until(lambda: reg.inspect_limits("demo").status == "stale")
        assert reg.inspect_limits("demo").snapshot == fresh
        assert reg.inspect_limits("demo").error == (
            "malformed account limits snapshot: account limit window is malformed")

        # Failover: the first session closes, the second becomes the source.
        await reg.prompt(first.session_id, "/scenario limits state=fresh")
        second = await reg.new_session("demo", str(tmp_path))
        await reg.close_session(first.session_id)
        state = await reg.refresh_limits("demo")
        assert state.status == "fresh"

        # The last source closes: stale, kept, with the reason.
        await reg.close_session(second.session_id)
        state = reg.inspect_limits("demo")
        assert state.status == "stale" and state.snapshot is not None
        assert state.error == "no live limits-capable Session"


async def test_limits_reach_the_cache_and_liveness_follows_sessions(tmp_path: Path) -> None:
    cache = LimitsCache()
    async with registry() as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await wait_until(lambda: reg.inspect_limits("demo").status == "fresh")
        await wait_until(lambda: cache.load().states.get("demo") is not None)
        await wait_until(lambda: cache.load().is_live("demo"))
        now = reg.clock()
        assert cache.inspect("demo", now).status == "fresh"
        await reg.close_session(session.session_id)
        await wait_until(lambda: not cache.load().is_live("demo"))
    assert cache.inspect("demo", reg.clock()).status == "stale"


async def test_cached_state_shows_stale_at_startup(tmp_path: Path) -> None:
    async with registry() as reg:
        await reg.new_session("demo", str(tmp_path))
        await wait_until(lambda: reg.inspect_limits("demo").status == "fresh")
    async with registry() as reg:
        state = reg.inspect_limits("demo")
        assert state.status == "stale" and state.snapshot is not None


# ----------------------------------------------------------------------------- other agents


async def test_registry_against_the_sdk_fake_agent(tmp_path: Path) -> None:
    config = make_config(sdk=[sys.executable, str(FAKES / "sdk_agent.py")])
    async with registry(config, ScriptedDecider("allow_once")) as reg:
        session = await reg.new_session("sdk", str(tmp_path))
        assert await reg.prompt(session.session_id, "one two") == "end_turn"
        assert agent_texts(reg, session.session_id) == "one two "
        assert await reg.prompt(session.session_id, "permission") == "end_turn"
        assert "outcome:yes" in agent_texts(reg, session.session_id)
        await wait_until(lambda: reg.inspect_limits("sdk").status == "fresh")
        await wait_until(lambda: session.usage_used == 42)  # sent after the prompt reply


async def test_auth_required_is_a_clear_error(tmp_path: Path) -> None:
    config = make_config(locked=[sys.executable, str(FAKES / "raw_agent.py")])
    os.environ["FAKE_MODE"] = "auth_required"
    try:
        async with registry(config) as reg:
            with pytest.raises(Exception) as info:
                await reg.new_session("locked", str(tmp_path))
            assert "Authentication required" in str(info.value)
    finally:
        del os.environ["FAKE_MODE"]


async def test_unknown_agent_and_session_are_clear_errors() -> None:
    async with registry() as reg:
        with pytest.raises(RegistryError, match="unknown agent 'nope'; configured: demo"):
            await reg.new_session("nope")
        with pytest.raises(RegistryError, match="unknown session"):
            await reg.prompt("missing", "hi")


async def test_transcript_merges_a_streamed_message_and_exports_it_whole(tmp_path: Path) -> None:
    import json

    from louise.storage import transcript

    async with registry() as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "/scenario stream chunks=500 size=10")
        path = reg.transcript_path(session.session_id)
        await reg.flush_transcripts()
        expected = "".join(m.text for m in session.messages() if m.role == "agent")
    assert path is not None
    records = [json.loads(line) for line in path.read_text().splitlines()]
    chunks = [r for r in records if r.get("type") == "update"
              and r["update"]["sessionUpdate"] == "agent_message_chunk"]
    assert 0 < len(chunks) < 50, "500 chunks are merged into a few records"
    assert "".join(r["update"]["content"]["text"] for r in chunks) == expected
    replayed = transcript.load(path).session
    assert "".join(m.text for m in replayed.messages() if m.role == "agent") == expected
