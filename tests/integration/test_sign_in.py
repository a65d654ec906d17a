"""Signing in and out through the registry, against the demo agent with
LOUISE_DEMO_AUTH=required over real stdio: `authenticate` for its agent method, its own
command with `--login` in a "terminal" (a real subprocess fed the person's answer) for
its terminal method, then a restart and the failed request again; `logout`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.acp.auth import AuthMethod, TerminalInvocation
from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError
from louise.registry.signin import needs_sign_in

pytestmark = pytest.mark.anyio


class Person:
    """A scripted person at the sign-in prompts: picks a method by id and answers the
    terminal's question; records what they were shown."""

    def __init__(self, pick: str | None, answer: str = "yes", *, terminal: bool = True,
                 run: bool = True) -> None:
        self.pick = pick
        self.answer = answer
        self._terminal = terminal
        self.run = run
        self.offered: list[list[str]] = []
        self.shown: list[TerminalInvocation] = []

    @property
    def terminal(self) -> bool:
        return self._terminal

    async def choose(self, agent: str, methods: Sequence[AuthMethod],
                     reason: str) -> AuthMethod | None:
        self.offered.append([m.id for m in methods])
        return next((m for m in methods if m.id == self.pick), None)

    async def run_terminal(self, agent: str, method: AuthMethod,
                           invocation: TerminalInvocation) -> int | None:
        self.shown.append(invocation)
        if not self.run:
            return None
        import os

        def run() -> int:
            done = subprocess.run(list(invocation.argv), input=self.answer + "\n",
                                  text=True, capture_output=True, timeout=60,
                                  env={**os.environ, **invocation.env}, cwd=invocation.cwd,
                                  check=False)
            return done.returncode

        return await anyio.to_thread.run_sync(run)


def config(tmp_path: Path) -> Any:
    state = tmp_path / "demo-state"
    return load_config_mapping({"agents": {"authed": {
        "command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
        "env": {"LOUISE_DEMO_AUTH": "required", "LOUISE_DEMO_STATE_DIR": str(state),
                "LOUISE_DEMO_SAVED_SESSIONS": "0"}}}})


def pid(reg: SessionRegistry) -> int | None:
    connection = reg.runtime("authed").connection
    return connection.process.pid if connection is not None else None


async def test_a_refused_session_says_how_to_sign_in(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        with pytest.raises(RegistryError) as caught:
            await reg.new_session("authed", str(tmp_path))
        assert needs_sign_in(caught.value)
        assert "requires authentication" in str(caught.value)
        assert "Demo token" in str(caught.value) and ":LouiseSignIn" in str(caught.value)
        # No prompter: terminal auth is not advertised, so the terminal method is not
        # offered at all.
        assert [m.id for m in await reg.auth_methods("authed")] == ["demo-token"]


async def test_agent_method_signs_in_and_the_request_runs_again(tmp_path: Path) -> None:
    person = Person("demo-token")
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, sign_in=person) as reg:
        session = await reg.with_sign_in(
            "authed", lambda: reg.new_session("authed", str(tmp_path)))
        assert person.offered == [["demo-token", "demo-login"]]
        assert person.shown == []  # nothing ran in a terminal
        assert await reg.prompt(session.session_id, "hello") == "end_turn"


async def test_terminal_method_runs_the_agents_command_then_restarts_it(
        tmp_path: Path) -> None:
    person = Person("demo-login", "yes")
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, sign_in=person) as reg:
        methods = await reg.auth_methods("authed")
        assert {m.id: m.kind for m in methods} == {"demo-token": "agent",
                                                  "demo-login": "terminal"}
        before = pid(reg)
        session = await reg.with_sign_in(
            "authed", lambda: reg.new_session("authed", str(tmp_path)))
        (shown,) = person.shown
        # The configured command, the method's args appended; its env applied on top of
        # the Agent's own.
        assert list(shown.argv) == [sys.executable, "-P", "-m", "louise.demo_agent", "--login"]
        assert shown.method_env == {"LOUISE_DEMO_LOGIN": "1"}
        assert shown.env["LOUISE_DEMO_AUTH"] == "required"
        assert "LOUISE_DEMO_LOGIN=1" in shown.display()
        assert pid(reg) is not None and pid(reg) != before  # restarted, per the spec
        assert await reg.prompt(session.session_id, "hello") == "end_turn"


async def test_a_declined_terminal_runs_nothing_and_the_error_stands(tmp_path: Path) -> None:
    person = Person("demo-login", run=False)
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, sign_in=person) as reg:
        await reg.auth_methods("authed")
        before = pid(reg)
        with pytest.raises(RegistryError, match="requires authentication"):
            await reg.with_sign_in("authed", lambda: reg.new_session("authed", str(tmp_path)))
        assert len(person.shown) == 1
        assert pid(reg) == before  # not restarted
        assert not (tmp_path / "demo-state" / "signed-in").exists()


async def test_a_failed_terminal_sign_in_is_an_error_and_not_retried(tmp_path: Path) -> None:
    person = Person("demo-login", "no")
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, sign_in=person) as reg:
        await reg.auth_methods("authed")
        before = pid(reg)
        with pytest.raises(RegistryError, match="exited with status 1"):
            await reg.with_sign_in("authed", lambda: reg.new_session("authed", str(tmp_path)))
        assert pid(reg) == before
        assert reg.sessions("authed") == []


async def test_no_choice_leaves_the_agent_as_it_was(tmp_path: Path) -> None:
    person = Person(None)
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, sign_in=person) as reg:
        assert await reg.sign_in("authed") is False
        with pytest.raises(RegistryError, match="requires authentication"):
            await reg.new_session("authed", str(tmp_path))


async def test_logout_then_sign_in_again_with_an_open_session(tmp_path: Path) -> None:
    person = Person("demo-login", "yes")
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, sign_in=person) as reg:
        assert await reg.sign_in("authed", "demo-token")
        session = await reg.new_session("authed", str(tmp_path))
        assert await reg.prompt(session.session_id, "first") == "end_turn"
        await reg.logout("authed")
        with pytest.raises(RegistryError, match="requires authentication"):
            await reg.prompt(session.session_id, "refused")
        # Signing in on a terminal restarts the agent: the open session is reattached
        # (session/load) and takes the prompt again.
        reason = await reg.with_sign_in(
            "authed", lambda: reg.prompt(session.session_id, "again"))
        assert reason == "end_turn"
        assert reg.session(session.session_id).status == "ready"
        texts = [m.text for m in reg.session(session.session_id).messages()
                 if m.role == "user"]
        assert "again" in texts[-1]


async def test_logout_and_sign_in_refused_where_not_offered(tmp_path: Path) -> None:
    plain = load_config_mapping({})
    async with SessionRegistry(plain, grace_seconds=0.5, sign_in=Person("x")) as reg:
        with pytest.raises(RegistryError, match="does not support logout"):
            await reg.logout("demo")
        with pytest.raises(RegistryError, match="offers no sign-in method"):
            await reg.sign_in("demo")
        with pytest.raises(RegistryError, match="offers no sign-in method 'x'"):
            await reg.sign_in("demo", "x")


async def test_a_sign_in_under_way_is_told_while_the_person_is_asked(tmp_path: Path) -> None:
    from louise.registry.events import SignInWaiting

    told: list[tuple[str, bool]] = []

    class Watching(Person):
        async def choose(self, agent: str, methods: Sequence[AuthMethod],
                         reason: str) -> AuthMethod | None:
            told.append(("asked", True))  # what the chats were told by then
            return await super().choose(agent, methods, reason)

    person = Watching("demo-token")
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5, sign_in=person) as reg:
        reg.subscribe(lambda e: told.append((e.agent, e.waiting))
                      if isinstance(e, SignInWaiting) else None)
        await reg.with_sign_in("authed", lambda: reg.new_session("authed", str(tmp_path)))
        assert told == [("authed", True), ("asked", True), ("authed", False)]
        # A declined one ends the wait too.
        person.pick = None
        told.clear()
        assert not await reg.sign_in("authed")
        assert told == [("authed", True), ("asked", True), ("authed", False)]
