"""The visible prompt queue against the demo agent over real stdio: prompts sent during a
turn wait in order, can be edited, removed, sent now (the running turn cancelled) or
steered into the running turn where the agent offers steering."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.events import PromptQueueChanged, RegistryEvent
from louise.registry.records import PromptWithdrawn, RegistryError
from louise.registry.turns import STEERED
from tests.integration.agents import FAKES

pytestmark = pytest.mark.anyio
SLOW = "/scenario slow delay_ms=50"


def config(tmp_path: Path) -> Any:
    return load_config_mapping({"agents": {"demo": {
        "command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
        "env": {"LOUISE_DEMO_STATE_DIR": str(tmp_path / "demo-state")}}}})


async def until(check: Callable[[], bool], timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


def user_texts(reg: SessionRegistry, session_id: str) -> list[str]:
    return [m.text for m in reg.session(session_id).messages() if m.role == "user"]


class Run:
    """prompt() calls in the background, with what each returned or raised."""

    def __init__(self) -> None:
        self.results: dict[str, Any] = {}

    def start(self, tg: Any, name: str, call: Callable[[], Awaitable[str]]) -> None:
        async def run() -> None:
            try:
                self.results[name] = await call()
            except RegistryError as exc:
                self.results[name] = exc

        tg.start_soon(run)


async def test_queued_prompts_wait_in_order_and_can_be_edited_removed_sent_now(
        tmp_path: Path) -> None:
    events: list[RegistryEvent] = []
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        reg.subscribe(events.append)
        sid = (await reg.new_session("demo", str(tmp_path))).session_id
        queues = [e.items for e in events if isinstance(e, PromptQueueChanged)]
        run = Run()
        async with anyio.create_task_group() as tg:
            run.start(tg, "slow", lambda: reg.prompt(sid, SLOW))
            await until(lambda: reg.session(sid).in_turn)
            run.start(tg, "second", lambda: reg.prompt(sid, "second"))
            run.start(tg, "third", lambda: reg.prompt(sid, "third"))
            await until(lambda: len(reg._table.live(sid).queue) == 2)
            queues = [e.items for e in events if isinstance(e, PromptQueueChanged)]
            assert [item["text"] for item in queues[-1]] == ["second", "third"]
            first, second = (item["id"] for item in queues[-1])
            reg.edit_queued(sid, first, "second, edited")
            reg.remove_queued(sid, second)
            queues = [e.items for e in events if isinstance(e, PromptQueueChanged)]
            assert [item["text"] for item in queues[-1]] == ["second, edited"]
            await reg.send_queued_now(sid, first)  # cancels the slow turn
        assert run.results["slow"] == "cancelled"
        assert run.results["second"] == "end_turn"
        assert isinstance(run.results["third"], PromptWithdrawn)
        assert user_texts(reg, sid) == [SLOW, "second, edited"]
        queues = [e.items for e in events if isinstance(e, PromptQueueChanged)]
        assert queues[-1] == ()
        with pytest.raises(RegistryError, match="no longer queued"):
            reg.remove_queued(sid, first)


async def test_steering_sends_a_queued_prompt_into_the_running_turn(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        sid = (await reg.new_session("demo", str(tmp_path))).session_id
        assert reg.steering("demo")
        run = Run()
        async with anyio.create_task_group() as tg:
            run.start(tg, "slow", lambda: reg.prompt(sid, SLOW))
            await until(lambda: reg.session(sid).in_turn)
            run.start(tg, "steer", lambda: reg.prompt(sid, "go left"))
            await until(lambda: len(reg._table.live(sid).queue) == 1)
            (item,) = reg._table.live(sid).queue
            await reg.steer_queued(sid, item.id)
        assert run.results == {"slow": "end_turn", "steer": STEERED}
        assert user_texts(reg, sid) == [SLOW, "go left"]  # in the same turn
        reply = [m.text for m in reg.session(sid).messages() if m.role == "agent"][-1]
        assert reply.endswith("Steered: go left")
        assert reg.session(sid).turn == 1


async def test_steering_needs_a_running_turn(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        sid = (await reg.new_session("demo", str(tmp_path))).session_id
        with pytest.raises(RegistryError, match="no longer queued"):
            await reg.steer_queued(sid, 1)


async def test_closing_the_session_withdraws_its_queue(tmp_path: Path) -> None:
    # The close cancels the turn first and gives it the grace period to end: the demo
    # agent ends it at once, but a loaded machine may take more than half a second to
    # say so (a long grace costs nothing: the close goes on as soon as the turn ends).
    async with SessionRegistry(config(tmp_path), grace_seconds=30) as reg:
        sid = (await reg.new_session("demo", str(tmp_path))).session_id
        run = Run()
        async with anyio.create_task_group() as tg:
            run.start(tg, "slow", lambda: reg.prompt(sid, SLOW))
            await until(lambda: reg.session(sid).in_turn)
            run.start(tg, "queued", lambda: reg.prompt(sid, "never"))
            await until(lambda: len(reg._table.live(sid).queue) == 1)
            await reg.close_session(sid)
        assert isinstance(run.results["queued"], PromptWithdrawn)
        assert run.results["slow"] == "cancelled", "the turn was cancelled, then closed"


# ------------------------------------------------------------------------------ steering races

END_ON_STEER = json.dumps([{"end_on_steer": True}])


def steering_config(tmp_path: Path, outcome: str) -> Any:
    """The script agent with steering (FAKE_STEER): its turn ends the moment a steering
    request arrives, and it answers the turn, then the steering request."""
    return load_config_mapping({"agents": {"script": {
        "command": sys.executable, "args": [str(FAKES / "script_agent.py")],
        "env": {"FAKE_STEER": outcome, "FAKE_LOG": str(tmp_path / "agent.log")}}}})


def prompts_at_agent(tmp_path: Path) -> list[str]:
    lines = (tmp_path / "agent.log").read_text().splitlines()
    return [line.removeprefix("  text: ") for line in lines if line.startswith("  text: ")]


async def steer_as_the_turn_ends(reg: SessionRegistry, sid: str, run: Run, tg: Any) -> None:
    run.start(tg, "turn", lambda: reg.prompt(sid, END_ON_STEER))
    await until(lambda: reg.session(sid).in_turn)
    run.start(tg, "queued", lambda: reg.prompt(sid, "go left"))
    await until(lambda: len(reg._table.live(sid).queue) == 1)
    (item,) = reg._table.live(sid).queue
    try:
        await reg.steer_queued(sid, item.id)
    except RegistryError as exc:
        run.results["steer"] = exc


async def test_a_prompt_steered_as_the_turn_ends_is_not_also_run(tmp_path: Path) -> None:
    """The agent ends the turn, then answers the steering request `injected`: the prompt
    went into that turn, so it is not run again, and the queue takes the next prompt."""
    async with SessionRegistry(steering_config(tmp_path, "injected"), grace_seconds=0.5,
                               transcripts_dir=None, limits_cache=None) as reg:
        sid = (await reg.new_session("script", str(tmp_path))).session_id
        run = Run()
        async with anyio.create_task_group() as tg:
            await steer_as_the_turn_ends(reg, sid, run, tg)
        assert run.results == {"turn": "end_turn", "queued": STEERED}
        assert prompts_at_agent(tmp_path) == [END_ON_STEER], "the steered prompt ran again"
        with anyio.fail_after(30):  # the queue is not left waiting for a turn nobody runs
            assert await reg.prompt(sid, "next") == "end_turn"
        assert prompts_at_agent(tmp_path) == [END_ON_STEER, "next"]


async def test_a_prompt_the_agent_would_not_steer_as_the_turn_ended_runs_next(
        tmp_path: Path) -> None:
    """The turn ends, then the agent answers `promptRequired` (no turn to steer into): the
    prompt is sent as the next turn, once, and the person is told so."""
    async with SessionRegistry(steering_config(tmp_path, "promptRequired"), grace_seconds=0.5,
                               transcripts_dir=None, limits_cache=None) as reg:
        sid = (await reg.new_session("script", str(tmp_path))).session_id
        run = Run()
        async with anyio.create_task_group() as tg:
            await steer_as_the_turn_ends(reg, sid, run, tg)
        assert run.results["turn"] == "end_turn"
        assert run.results["queued"] == "end_turn"
        assert str(run.results["steer"]) == \
            "script did not take it into the turn (promptRequired); it is sent now as it is"
        assert prompts_at_agent(tmp_path) == [END_ON_STEER, "go left"]
        with anyio.fail_after(30):
            assert await reg.prompt(sid, "next") == "end_turn"
