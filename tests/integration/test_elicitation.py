"""Elicitation through the registry against the demo agent over real stdio: advertised
only with an Elicitor, answers checked and asked again, and it fails closed (a cancelled
turn answers `cancel`; waiting on the person does not trip the prompt watchdog)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.acp.elicitation import ElicitationRequest
from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError
from louise.session import Notice
from tests.integration.agents import later_silent_turns_time_out

pytestmark = pytest.mark.anyio


class Person:
    def __init__(self, answers: list[tuple[str, dict[str, Any] | None]],
                 url: str = "accept", hold: bool = False) -> None:
        self.answers = answers
        self.url_answer = url
        self.hold = hold
        self.asked: list[tuple[dict[str, Any], list[str]]] = []
        self.completed: list[str] = []
        self.visits: list[tuple[str, tuple[str, ...]]] = []
        self.refused: list[str] = []
        self.released = anyio.Event()

    form = True
    url = True

    async def ask_form(self, agent: str, request: ElicitationRequest,
                       answers: Mapping[str, Any], problems: list[str]
                       ) -> tuple[str, dict[str, Any] | None]:
        self.asked.append((dict(answers), problems))
        if self.hold:
            await self.released.wait()
        return self.answers.pop(0) if self.answers else ("cancel", None)

    async def ask_url(self, agent: str, request: ElicitationRequest) -> str:
        self.visits.append((str(request.host), request.warnings))
        return self.url_answer

    def url_completed(self, agent: str, request: ElicitationRequest) -> None:
        self.completed.append(str(request.elicitation_id))

    def url_refused(self, agent: str, reason: str) -> None:
        self.refused.append(reason)


def config(tmp_path: Path, idle: float = 300) -> Any:
    return load_config_mapping({"prompt_idle_timeout": idle, "agents": {"demo": {
        "command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
        "env": {"LOUISE_DEMO_STATE_DIR": str(tmp_path / "demo-state")}}}})


def last_reply(reg: SessionRegistry, session_id: str) -> str:
    return [m.text for m in reg.session(session_id).messages() if m.role == "agent"][-1]


async def test_answers_are_checked_and_asked_again(tmp_path: Path) -> None:
    person = Person([("accept", {"name": "", "count": 0}),
                     ("accept", {"name": "n", "count": 2, "tags": ["fix"]})])
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, elicitor=person) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        assert await reg.prompt(session.session_id, "/scenario ask") == "end_turn"
        assert person.asked[1] == ({"name": "", "count": 0},
                                   ["Release name: required", "How many: at least 1"])
        assert last_reply(reg, session.session_id) == \
            "Thanks: count=2, name='n', tags=['fix']."


async def test_three_wrong_answers_cancel(tmp_path: Path) -> None:
    person = Person([("accept", {})] * 5)
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, elicitor=person) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "/scenario ask")
        assert len(person.asked) == 3
        assert last_reply(reg, session.session_id) == "You chose not to answer (cancel)."


async def test_cancelling_the_turn_withdraws_the_form(tmp_path: Path) -> None:
    person = Person([("accept", {"name": "n", "count": 1})], hold=True)
    # A watchdog far shorter than the person takes: waiting on them is not silence.
    async with SessionRegistry(config(tmp_path, idle=1), grace_seconds=0.5,
                               elicitor=person) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        reasons: list[str] = []

        async def turn() -> None:
            reasons.append(await reg.prompt(session.session_id, "/scenario ask"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            with anyio.fail_after(30):
                while not person.asked:
                    await anyio.sleep(0.02)
            # Past the watchdog's second: the turn still runs.
            await later_silent_turns_time_out(reg, str(tmp_path))
            assert reg.session(session.session_id).in_turn
            await reg.cancel(session.session_id)
        assert reasons == ["cancelled"]
        person.released.set()


async def test_without_an_elicitor_nothing_is_advertised(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "/scenario visit")
        assert last_reply(reg, session.session_id) == \
            "Your client cannot open pages for me (no `elicitation.url`)."


async def test_a_disguised_url_is_never_offered_and_the_person_is_told(
        tmp_path: Path) -> None:
    person = Person([])
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, elicitor=person) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        # The agent gets the reason as its error (the demo agent fails its turn with it).
        with pytest.raises(RegistryError, match="backslash"):
            await reg.prompt(session.session_id,
                             "/scenario visit url=https://evil.example\\.accounts.google.com/")
        assert person.visits == []  # never asked to open it
        notices = [e.text for e in reg.session(session.session_id).entries
                   if isinstance(e, Notice)]
        assert ("louise did not offer to open a page demo asked you to visit: it has a "
                "backslash in its address, which a browser reads as a /: a browser would "
                "open evil.example") in notices
        # A bare IP address is offered, with the host a browser opens and a warning.
        await reg.prompt(session.session_id, "/scenario visit delay_ms=0 url=http://[::1]/")
        assert person.visits == [("[::1]", ("the host is a bare IP address ([::1])",))]


async def test_a_url_then_its_completion(tmp_path: Path) -> None:
    person = Person([])
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, elicitor=person) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "/scenario visit delay_ms=0")
        with anyio.fail_after(10):
            while not person.completed:
                await anyio.sleep(0.02)
        assert person.completed == [f"{session.acp_id}-visit-1"]
        assert last_reply(reg, session.session_id) == "The page says you are connected."
