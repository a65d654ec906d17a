"""The registry's attach path, turns and transcripts over real stdio: the demo agent and the
attach fake (tests/fakes/attach_agent.py, which replays history like real agents do)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import louise.registry
import louise.registry.sessions
from louise.acp.errors import ConnectionClosed
from louise.config.loading import load_config_mapping
from louise.config.model import Config
from louise.registry import SessionRegistry
from louise.registry.events import RegistryEvent
from louise.registry.records import RegistryError
from louise.session import Session, SessionRenamed, SessionReplaced
from louise.storage import transcript, transcript_files
from tests.integration.agents import FAKES, wait_until
from tests.integration.test_registry import ScriptedDecider

pytestmark = pytest.mark.anyio
ATTACH = str(FAKES / "attach_agent.py")


def fake_config(tmp_path: Path, **env: str) -> Config:
    env = {"FAKE_STORE": str(tmp_path / "fake-store.json"),
           "FAKE_LOG": str(tmp_path / "fake.log"), **env}
    return load_config_mapping({"agents": {"fake": {
        "command": sys.executable, "args": [ATTACH], "env": env}}})


def fake_log(tmp_path: Path) -> list[str]:
    path = tmp_path / "fake.log"
    return path.read_text().splitlines() if path.exists() else []


@asynccontextmanager
async def registry(config: Config | None = None, decider: Any = None,
                   events: list[RegistryEvent] | None = None) -> AsyncIterator[SessionRegistry]:
    async with SessionRegistry(config or load_config_mapping({}), decider=decider,
                               grace_seconds=0.5) as reg:
        if events is not None:
            reg.subscribe(events.append)
        yield reg


def text_of(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def texts(session: Session, role: str) -> list[str]:
    return [m.text for m in session.messages() if m.role == role]


def assert_nothing_twice(session: Session) -> None:
    messages = session.messages()
    assert all(m.text or m.blocks for m in messages), "no empty message (a bare '▌ You')"
    for role in ("user", "agent"):
        shown = texts(session, role)
        assert len(shown) == len(set(shown)), f"a {role} message shows twice: {shown}"


# ----------------------------------------------------------------------------- attach


async def test_after_a_crash_the_reload_shows_each_message_once(tmp_path: Path) -> None:
    events: list[RegistryEvent] = []
    async with registry(events=events) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        key = session.session_id
        assert await reg.prompt(key, "first") == "end_turn"
        first_reply = texts(session, "agent")
        with pytest.raises(ConnectionClosed):
            await reg.prompt(key, "/scenario fail crash")
        assert await reg.prompt(key, "second") == "end_turn"
        model = reg.session(key)
        assert_nothing_twice(model)
        assert texts(model, "user").count("first") == 1
        assert texts(model, "user")[-1] == "second"
        for reply in first_reply:
            assert texts(model, "agent").count(reply) == 1
        assert model.status == "ready"
        assert model is not session, "the reload filled a fresh model"
        assert any(isinstance(e, SessionReplaced) and e.session_id == key for e in events)


async def test_loading_an_open_session_again_does_not_duplicate_it(tmp_path: Path) -> None:
    async with registry() as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "remember me")
        agent_text = "".join(texts(session, "agent"))
        for _ in range(2):  # :LouiseResume of the session already open, twice
            loaded = await reg.load_session("demo", session.acp_id, str(tmp_path))
            assert loaded is reg.session(session.session_id)
            assert texts(loaded, "user") == ["remember me"]
            assert "".join(texts(loaded, "agent")) == agent_text
            assert_nothing_twice(loaded)


async def test_a_replay_of_message_ids_already_shown_is_not_doubled(tmp_path: Path) -> None:
    # This agent replays its history on session/resume too: the same messageIds again.
    config = fake_config(tmp_path, FAKE_CAPS="resume", FAKE_RESUME_REPLAYS="1")
    async with registry(config) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        await reg.prompt(session.session_id, "hello")
        assert texts(session, "agent") == ["echo: hello"]  # two chunks, one messageId
        resumed = await reg.resume_session("fake", session.acp_id, str(tmp_path))
        assert resumed is reg.session(session.session_id)
        assert texts(resumed, "agent") == ["echo: hello"]
        assert texts(resumed, "user") == ["hello"]


async def test_a_resume_without_replay_keeps_the_model(tmp_path: Path) -> None:
    async with registry(fake_config(tmp_path, FAKE_CAPS="resume")) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        await reg.prompt(session.session_id, "hello")
        resumed = await reg.resume_session("fake", session.acp_id, str(tmp_path))
        assert resumed is session
        assert texts(resumed, "user") == ["hello"] and resumed.status == "ready"


async def test_a_history_ending_in_the_read_of_the_load_answer_is_not_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gemini-cli streams a loaded session's history after its answer, often in the same
    read: the update that ends it counts however soon it comes. Missed, every load of a
    gemini session waited HISTORY_WAIT (10 s) for an end that had already come; here that
    wait is an hour, and the load must be over long before."""
    monkeypatch.setattr(louise.registry.sessions, "HISTORY_WAIT", 3600.0)
    config = fake_config(tmp_path, FAKE_AGENT_NAME="gemini-cli", FAKE_HISTORY_DELAY="0")
    async with registry(config) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        assert await reg.prompt(session.session_id, "hello") == "end_turn"
    async with registry(config) as reg:  # another process loads it
        with anyio.fail_after(60):
            loaded = await reg.load_session("fake", session.acp_id, str(tmp_path))
        assert texts(loaded, "user") == ["hello"]
        assert texts(loaded, "agent") == ["echo: hello"]
        assert loaded.status == "ready"


async def test_a_failed_reattach_fails_the_session_and_later_prompts_say_why(
        tmp_path: Path) -> None:
    config = fake_config(tmp_path, FAKE_LOAD="fail")
    async with registry(config) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        key = session.session_id
        with pytest.raises(ConnectionClosed):
            await reg.prompt(key, "crash")
        for _ in range(2):
            with pytest.raises(RegistryError) as caught, anyio.fail_after(20):
                await reg.prompt(key, "hello again")
            message = str(caught.value)
            assert message.startswith(f"could not reattach {key}: ")
            assert "Resource not found" in message
            model = reg.session(key)
            assert model.status == "error" and model.error == message


# ----------------------------------------------------------------------------- turns


async def test_a_permission_asked_after_cancel_is_cancelled_without_asking(
        tmp_path: Path) -> None:
    decider = ScriptedDecider("allow_once")
    async with registry(fake_config(tmp_path), decider) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        reasons: list[str] = []

        async def turn() -> None:
            reasons.append(await reg.prompt(session.session_id, "ask-after-cancel"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            await wait_until(lambda: texts(session, "agent") == ["working"])
            await reg.cancel(session.session_id)
        assert reasons == ["cancelled"]
        assert decider.asked == [], "nobody is asked once the turn is cancelled"
    assert 'permission-outcome {"outcome": {"outcome": "cancelled"}}' in fake_log(tmp_path)


@pytest.mark.parametrize("caps", ["load", "load,close"])
async def test_closing_a_session_mid_turn_cancels_the_turn_first(tmp_path: Path,
                                                                  caps: str) -> None:
    async with registry(fake_config(tmp_path, FAKE_CAPS=caps)) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        reasons: list[str] = []

        async def turn() -> None:
            reasons.append(await reg.prompt(session.session_id, "wait"))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(turn)
                await wait_until(lambda: texts(session, "agent") == ["working"])
                await reg.close_session(session.session_id)
        assert reasons == ["cancelled"], "the agent stopped its turn"
    methods = [line for line in fake_log(tmp_path) if line.startswith("session/")]
    assert "session/cancel" in methods
    if "close" in caps:
        assert methods.index("session/cancel") < methods.index("session/close")


@pytest.mark.parametrize("caps", ["load", "load,close"])
async def test_shutting_down_closes_every_session_at_an_agent_that_can(tmp_path: Path,
                                                                       caps: str) -> None:
    async with registry(fake_config(tmp_path, FAKE_CAPS=caps)) as reg:
        first = await reg.new_session("fake", str(tmp_path))
        second = await reg.new_session("fake", str(tmp_path))
        await reg.prompt(first.session_id, "hello")
    closes = [line for line in fake_log(tmp_path) if line == "session/close"]
    assert closes == (["session/close"] * 2 if "close" in caps else []), fake_log(tmp_path)
    assert first.status == second.status == "closed"


async def test_prompt_context_follows_the_agents_prompt_capabilities(tmp_path: Path) -> None:
    chip = {"kind": "buffer", "path": str(tmp_path / "notes.md"), "text": "# notes"}
    for caps, expected in (("load", "resource_link"), ("load,embedded", "resource")):
        async with registry(fake_config(tmp_path, FAKE_CAPS=caps)) as reg:
            session = await reg.new_session("fake", str(tmp_path))
            await reg.prompt(session.session_id, "look", context=[chip])
            prompt = session.messages()[0]
            assert prompt.text == "look"
            assert [b["type"] for b in prompt.blocks] == [expected]
        assert f"prompt-blocks text,{expected}" in fake_log(tmp_path)


async def test_rename_reaches_subscribers_and_the_transcript(tmp_path: Path) -> None:
    events: list[RegistryEvent] = []
    async with registry(events=events) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        assert reg.rename(session.session_id, "  fix   the\ngreeting ") == "fix the greeting"
        assert session.name == "fix the greeting"
        assert SessionRenamed(session.session_id, "fix the greeting") in events
        path = reg.transcript_path(session.session_id)
        await reg.flush_transcripts()
    assert path is not None
    assert "- **Name:** fix the greeting" in transcript.to_markdown(transcript.load(path).session)


# ----------------------------------------------------------------------------- transcripts


async def test_transcripts_keep_being_written_after_a_flush(tmp_path: Path) -> None:
    async with registry(fake_config(tmp_path)) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        path = reg.transcript_path(session.session_id)
        assert path is not None
        for number in range(3):
            await reg.prompt(session.session_id, f"turn {number}")
            # Written by the background writer, which then goes back to waiting …
            await wait_until(lambda n=number: f"echo: turn {n}" in text_of(path))
            await wait_until(lambda: reg._transcripts.waiting)
            await reg.flush_transcripts()  # … when :LouiseExport flushes.
        await reg.prompt(session.session_id, "after the exports")
        # The background writer must still wake: no flush, no close.
        await wait_until(lambda: "echo: after the exports" in text_of(path))


async def test_closing_the_registry_writes_the_last_turn(tmp_path: Path) -> None:
    """`aclose` returns only when the transcripts are written (a guard: it held on main)."""
    async with registry() as reg:
        session = await reg.new_session("demo", str(tmp_path))
        path = reg.transcript_path(session.session_id)
        await reg.prompt(session.session_id, "the last words")
    assert path is not None
    records = [json.loads(line) for line in path.read_text().splitlines()]
    prompts = [i for i, r in enumerate(records)
               if r.get("type") == "prompt" and r["prompt"][0]["text"] == "the last words"]
    # The turn's end is written (the agent's usage_update after its reply may follow it).
    assert prompts and any(r["type"] == "turn_end" for r in records[prompts[-1]:])


async def test_the_transcript_cap_counts_real_bytes(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cap = 1024 * 1024
    monkeypatch.setattr(louise.registry, "TRANSCRIPT_MAX_BYTES", cap)
    async with registry(fake_config(tmp_path)) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        path = reg.transcript_path(session.session_id)
        # 40 tool calls with 100 KiB of rawInput each: 4 MB of records.
        await reg.prompt(session.session_id, f"tools 40 {100 * 1024}")
    assert path is not None
    assert path.stat().st_size <= cap
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[-1] == {"t": records[-1]["t"], "type": "truncated", "limit": cap}
    markdown = transcript.to_markdown(transcript.load(path).session)
    assert f"it reached its size limit ({cap} bytes)" in markdown


async def test_export_shows_a_tool_call_too_big_for_one_line(tmp_path: Path) -> None:
    async with registry(fake_config(tmp_path)) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        path = reg.transcript_path(session.session_id)
        await reg.prompt(session.session_id, f"tools 1 {20 * 1024 * 1024}")
    assert path is not None
    result = transcript.load(path)
    assert result.skipped_lines == 0, "the registry writes no line the reader cannot take"
    markdown = transcript.to_markdown(result.session)
    assert "**tool 0** — completed" in markdown
    assert "echo: tools 1" in markdown
    record = session.tool_calls[next(iter(session.tool_calls))]
    assert "raw_input" in record.truncated, "the model keeps a marker, not 20 MiB"


async def test_transcript_files_of_lookalike_ids_do_not_collide(tmp_path: Path) -> None:
    config = load_config_mapping({"agents": {
        name: {"command": sys.executable, "args": [ATTACH],
               "env": {"FAKE_SESSION_IDS": ids}}
        for name, ids in (("a", "s/1,s_1,-x"), ("a-", "x"))}})
    async with registry(config) as reg:
        sessions = [await reg.new_session("a", str(tmp_path)) for _ in range(3)]
        sessions.append(await reg.new_session("a-", str(tmp_path)))
        for session in sessions:
            await reg.prompt(session.session_id, f"I am {session.session_id}")
        paths = [reg.transcript_path(s.session_id) for s in sessions]
    assert len(set(paths)) == 4
    for session, path in zip(sessions, paths, strict=True):
        assert path is not None
        replayed = transcript.load(path).session
        assert [m.text for m in replayed.messages() if m.role == "user"] == \
            [f"I am {session.session_id}"]
        assert transcript_files.resolve(session.session_id, path.parent.parent) == path
