"""A window watching another window's turn through the session host: a real host, the
demo agent, louise's registry as window B and a raw ACP client as window A. B shows the
turn running (from the prompt the host relays, or `turnRunning` on a load) and ready at
`_louise/turn_ended`; a cancel in B ends the turn for everyone; B's own prompt and its
leaving still work while A's turn runs."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.events import RegistryEvent
from louise.session import Session, StatusChanged
from tests.integration.serve_clients import (
    Client,
    HostProcess,
    Msg,
    load_session,
    new_session,
    prompt,
    running_host,
)

TIMEOUT = 60.0
SLOW = "/scenario slow delay_ms=100 chunks=8"  # ends by itself, well after it began
ENDLESS = "/scenario slow delay_ms=100"  # until cancelled (or its many chunks run out)

Scenario = Callable[[SessionRegistry, list[str], Path, Path], Awaitable[None]]


@pytest.fixture
def host() -> Iterator[HostProcess]:
    old = os.environ.get("LOUISE_STATE_DIR")
    with running_host() as running:
        os.environ["LOUISE_STATE_DIR"] = str(running.socket.parent.parent)
        try:
            yield running
        finally:
            if old is None:
                os.environ.pop("LOUISE_STATE_DIR", None)
            else:
                os.environ["LOUISE_STATE_DIR"] = old


def _run(host: HostProcess, cwd: Path, scenario: Scenario) -> None:
    async def main() -> None:
        config = load_config_mapping({"host": {"mode": "auto"}})
        async with SessionRegistry(config, limits_cache=None, permission_memory=None,
                                   transcripts_dir=None, remembered=None) as registry:
            statuses: list[str] = []

            def seen(event: RegistryEvent) -> None:
                if isinstance(event, StatusChanged):
                    statuses.append(event.new)

            registry.subscribe(seen)
            await scenario(registry, statuses, host.socket, cwd)

    anyio.run(main)


async def _until(condition: Callable[[], bool], what: str) -> None:
    with anyio.move_on_after(TIMEOUT):
        while not condition():
            await anyio.sleep(0.02)
    assert condition(), f"timed out waiting for {what}"


async def _answer(client: Client, request_id: int) -> Msg:
    return await anyio.to_thread.run_sync(client.answer, request_id)


async def _watched_turn(registry: SessionRegistry, socket_path: Path, cwd: Path,
                        text: str) -> tuple[Session, Client, int]:
    """A session made here, loaded in another window (a raw client), which prompts `text`;
    returns once this side shows that window's turn running: the session as the registry
    holds it, the other window and its prompt's request id."""
    session = await registry.new_session("demo", str(cwd))
    acp_id = session.session_id.partition(":")[2]
    other = Client(socket_path, "nvim")
    await anyio.to_thread.run_sync(load_session, other, acp_id, cwd)
    request = prompt(other, acp_id, text)
    model = registry.session(session.session_id)
    await _until(lambda: model.status == "prompting", "the other window's turn shown")
    return model, other, request


def test_a_turn_prompted_in_another_window_shows_running_here_then_ready(
        host: HostProcess, tmp_path: Path) -> None:
    async def scenario(registry: SessionRegistry, statuses: list[str], socket_path: Path,
                       cwd: Path) -> None:
        session = await registry.new_session("demo", str(cwd))
        acp_id = session.session_id.partition(":")[2]
        other = Client(socket_path, "nvim")
        await anyio.to_thread.run_sync(load_session, other, acp_id, cwd)
        statuses.clear()
        answer = await _answer(other, prompt(other, acp_id, SLOW))
        assert answer["result"]["stopReason"] == "end_turn", answer
        model = registry.session(session.session_id)
        await _until(lambda: model.status == "ready" and bool(statuses), "ready again")
        assert statuses == ["prompting", "ready"], statuses
        assert "tick 7" in "".join(getattr(e, "text", "") for e in model.entries)

    _run(host, tmp_path, scenario)


def test_a_cancel_here_ends_the_turn_another_window_prompted(
        host: HostProcess, tmp_path: Path) -> None:
    async def scenario(registry: SessionRegistry, statuses: list[str], socket_path: Path,
                       cwd: Path) -> None:
        model, other, request = await _watched_turn(registry, socket_path, cwd, ENDLESS)
        await registry.cancel(model.session_id)
        answer = await _answer(other, request)
        assert answer["result"]["stopReason"] == "cancelled", answer
        await _until(lambda: model.status == "ready", "ready after the cancel")
        assert "cancelling" in statuses, statuses

    _run(host, tmp_path, scenario)


def test_a_session_loaded_mid_turn_shows_it_running_and_can_cancel_it(
        host: HostProcess, tmp_path: Path) -> None:
    async def scenario(registry: SessionRegistry, statuses: list[str], socket_path: Path,
                       cwd: Path) -> None:
        other = Client(socket_path, "nvim")
        acp_id = await anyio.to_thread.run_sync(new_session, other, cwd)
        request = prompt(other, acp_id, ENDLESS)
        await anyio.to_thread.run_sync(lambda: other.wait(
            lambda m: "tick 0" in str(m), "the turn under way"))
        session = await registry.load_session("demo", acp_id, str(cwd))
        model = registry.session(session.session_id)
        assert model.status == "prompting"
        await registry.cancel(session.session_id)
        answer = await _answer(other, request)
        assert answer["result"]["stopReason"] == "cancelled", answer
        await _until(lambda: model.status == "ready", "ready after the cancel")

    _run(host, tmp_path, scenario)


def test_a_prompt_here_while_another_windows_turn_runs_waits_and_runs(
        host: HostProcess, tmp_path: Path) -> None:
    async def scenario(registry: SessionRegistry, statuses: list[str], socket_path: Path,
                       cwd: Path) -> None:
        model, other, request = await _watched_turn(registry, socket_path, cwd, SLOW)
        assert await registry.prompt(model.session_id, "mine after") == "end_turn"
        answer = await _answer(other, request)
        assert answer["result"]["stopReason"] == "end_turn", answer  # not cancelled
        assert model.status == "ready"
        assert "You wrote: *mine after*" in "".join(
            getattr(e, "text", "") for e in model.entries)

    _run(host, tmp_path, scenario)


def test_closing_here_leaves_the_other_windows_turn_running(
        host: HostProcess, tmp_path: Path) -> None:
    async def scenario(registry: SessionRegistry, statuses: list[str], socket_path: Path,
                       cwd: Path) -> None:
        model, other, request = await _watched_turn(registry, socket_path, cwd, SLOW)
        await registry.close_session(model.session_id)
        answer = await _answer(other, request)
        assert answer["result"]["stopReason"] == "end_turn", answer

    _run(host, tmp_path, scenario)
