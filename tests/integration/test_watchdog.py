"""The prompt-inactivity watchdog (`prompt_idle_timeout`), over real stdio: a turn that
hears nothing from its agent fails with a clear message and a cancel; a permission that
waits for the person, or updates that keep coming, are not silence."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.events import RegistryEvent
from louise.registry.records import RegistryError
from louise.session import AgentNoted, TurnEnded
from tests.integration.agents import FAKES, later_silent_turns_time_out, wait_until
from tests.integration.test_registry import ScriptedDecider, agent_texts

pytestmark = pytest.mark.anyio


def script_config(log: Path, **extra: Any) -> Any:
    return load_config_mapping({
        "agents": {"script": {"command": sys.executable,
                              "args": [str(FAKES / "script_agent.py")],
                              "env": {"FAKE_LOG": str(log)}}},
        **extra,
    })


def registry(config: Any, decider: Any = None) -> SessionRegistry:
    return SessionRegistry(config, decider=decider, grace_seconds=0.5, limits_cache=None,
                           permission_memory=None, transcripts_dir=None)


async def test_a_silent_agent_fails_the_turn_with_a_cancel(tmp_path: Path) -> None:
    log = tmp_path / "log"
    events: list[RegistryEvent] = []
    async with registry(script_config(log, prompt_idle_timeout=1)) as reg:
        reg.subscribe(events.append)
        session = await reg.new_session("script", str(tmp_path))
        steps = [{"update": {"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "text", "text": "thinking…"}}},
                 {"hang": True, "deaf": True}]  # a hung provider: even a cancel goes unheard
        with anyio.fail_after(60), pytest.raises(RegistryError) as info:
            await reg.prompt(session.session_id, json.dumps(steps))
        assert "script made no progress for 1 s" in str(info.value)
        assert "prompt_idle_timeout" in str(info.value)
        model = reg.session(session.session_id)
        assert model.status == "ready" and model.last_stop_reason == "error"
        ended = [e for e in events if isinstance(e, TurnEnded)]
        assert [(e.stop_reason, e.error) for e in ended] == [("error", str(info.value))]
        # The agent was told: session/cancel, then the prompt request was withdrawn.
        await wait_until(lambda: "$/cancel_request" in log.read_text())
        methods = log.read_text().split()
        assert "session/cancel" in methods and "$/cancel_request" in methods
        assert methods.index("session/cancel") < methods.index("$/cancel_request")


async def test_an_agent_that_answers_the_cancel_ends_the_turn_and_takes_the_next(
        tmp_path: Path) -> None:
    config = load_config_mapping({"prompt_idle_timeout": 1})
    async with registry(config) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        with anyio.fail_after(60), pytest.raises(RegistryError, match="demo made no progress"):
            await reg.prompt(session.session_id, "/scenario fail never_end")
        assert await reg.prompt(session.session_id, "hello again") == "end_turn"
        assert "hello again" in agent_texts(reg, session.session_id)


async def test_a_permission_waiting_for_the_person_is_not_silence(tmp_path: Path) -> None:
    decider = ScriptedDecider("allow_once", hold=True)
    config = load_config_mapping({"prompt_idle_timeout": 0.5})
    async with registry(config, decider) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        async with anyio.create_task_group() as tg:
            reasons: list[str] = []

            async def turn() -> None:
                reasons.append(await reg.prompt(session.session_id, "/scenario edit"))

            tg.start_soon(turn)
            with anyio.fail_after(30):
                while not decider.asked:
                    await anyio.sleep(0.02)
            # The person takes longer than the timeout to decide.
            await later_silent_turns_time_out(reg, str(tmp_path))
            assert session.status == "waiting_permission"
            decider.release.set()
        assert reasons == ["end_turn"]
        assert (tmp_path / "hello.py").exists()


async def test_updates_keep_a_long_turn_alive(tmp_path: Path) -> None:
    config = load_config_mapping({"prompt_idle_timeout": 0.5})
    async with registry(config) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        with anyio.fail_after(60):
            reason = await reg.prompt(session.session_id,
                                      "/scenario slow delay_ms=100 chunks=20")
        assert reason == "end_turn"


async def test_zero_turns_the_watchdog_off_and_an_agent_may_override(tmp_path: Path) -> None:
    log = tmp_path / "log"
    config = script_config(log, prompt_idle_timeout=0.2)
    config = dataclasses.replace(config, agents={
        **config.agents, "script": dataclasses.replace(
            config.agents["script"], prompt_idle_timeout=0.0)})
    assert config.prompt_idle_timeout_for("script") == 0.0
    assert config.prompt_idle_timeout_for("demo") == 0.2
    go = tmp_path / "go"
    async with registry(config) as reg:
        session = await reg.new_session("script", str(tmp_path))
        reasons: list[str] = []

        async def turn() -> None:  # silent until `go`
            reasons.append(await reg.prompt(session.session_id,
                                            json.dumps([{"wait_file": str(go)}])))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(turn)
                await wait_until(lambda: session.in_turn)
                # Silent past the demo agent's timeout, which still holds for the demo.
                await later_silent_turns_time_out(reg, str(tmp_path))
                go.touch()
        assert reasons == ["end_turn"]


def codex_note(text: str) -> dict[str, Any]:
    """A retry note as codex-acp 2.6 sends it while the model API is unreachable."""
    return {"update": {"sessionUpdate": "session_info_update", "_meta": {"codex": {"error": {
        "message": text, "codexErrorInfo": {"responseStreamDisconnected": {
            "httpStatusCode": None}}, "additionalDetails": "error sending request",
        "turnId": "1", "willRetry": True}}}}}


async def test_notes_of_an_agent_that_only_retries_are_not_progress(tmp_path: Path) -> None:
    """codex-acp sends "Reconnecting... n/5" notes while the model API is down: they are
    shown (the session's note, an event), but the watchdog ends the turn all the same, and
    says what the agent's last note was."""
    log = tmp_path / "log"
    events: list[RegistryEvent] = []
    async with registry(script_config(log, prompt_idle_timeout=1)) as reg:
        reg.subscribe(events.append)
        session = await reg.new_session("script", str(tmp_path))
        steps: list[dict[str, Any]] = []
        for attempt in range(1, 301):  # a minute of notes, every 0.2 s
            steps += [codex_note(f"Reconnecting... {attempt}/300"), {"sleep": 0.2}]
        with anyio.fail_after(30), pytest.raises(RegistryError) as info:
            await reg.prompt(session.session_id, json.dumps(steps))
        assert "script made no progress for 1 s" in str(info.value)
        assert "(its last note: Reconnecting... " in str(info.value)
        noted = [e.note for e in events if isinstance(e, AgentNoted) and e.note]
        assert noted[:2] == ["Reconnecting... 1/300", "Reconnecting... 2/300"]
        assert reg.session(session.session_id).agent_note is None  # the turn is over
