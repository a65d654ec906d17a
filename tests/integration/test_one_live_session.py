"""One live session per key: two `load_session` calls for one id at once (a double <CR>
in the resume picker) send one `session/load`, and both callers get the one session."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError
from louise.session import Session
from tests.integration.agents import FAKES

pytestmark = pytest.mark.anyio


def attach_registry(tmp_path: Path, **env: str) -> SessionRegistry:
    config = load_config_mapping({"agents": {"fake": {
        "command": sys.executable, "args": [str(FAKES / "attach_agent.py")],
        "env": {"FAKE_STORE": str(tmp_path / "fake-store.json"),
                "FAKE_LOG": str(tmp_path / "fake.log"), **env}}}})
    return SessionRegistry(config, transcripts_dir=None, limits_cache=None, grace_seconds=0.5)


def loads_at_agent(tmp_path: Path) -> int:
    return (tmp_path / "fake.log").read_text().split().count("session/load")


@pytest.mark.parametrize("open_before", [False, True])
async def test_two_loads_of_one_session_at_once_attach_it_once(tmp_path: Path,
                                                             open_before: bool) -> None:
    async with attach_registry(tmp_path) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        assert await reg.prompt(session.session_id, "remember me") == "end_turn"
        if not open_before:  # from the resume picker: a session not open here
            await reg.close_session(session.session_id)
        before = loads_at_agent(tmp_path)
        loaded: list[Session] = []

        async def load() -> None:
            loaded.append(await reg.load_session("fake", session.acp_id, str(tmp_path)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(load)
            tg.start_soon(load)
        assert loads_at_agent(tmp_path) - before == 1, "two session/load for one session"
        assert len(loaded) == 2 and loaded[0] is loaded[1]
        assert reg.sessions() == [loaded[0]]
        assert reg.runtime("fake").sessions == [reg._table.live(session.session_id)]
        assert loaded[0].status == "ready"


async def test_the_second_caller_gets_the_first_ones_failure(tmp_path: Path) -> None:
    async with attach_registry(tmp_path, FAKE_LOAD="fail") as reg:
        session = await reg.new_session("fake", str(tmp_path))
        await reg.close_session(session.session_id)
        errors: list[str] = []

        async def load() -> None:
            try:
                await reg.load_session("fake", session.acp_id, str(tmp_path))
            except RegistryError as exc:
                errors.append(str(exc))

        async with anyio.create_task_group() as tg:
            tg.start_soon(load)
            tg.start_soon(load)
        assert len(errors) == 2 and errors[0] == errors[1]
        assert errors[0].startswith(f"could not load {session.session_id}")
        assert loads_at_agent(tmp_path) == 1
        assert len(reg.runtime("fake").sessions) == 1  # the one session, failed: no orphan


async def test_an_agent_handing_out_an_open_sessions_id_again_is_refused(
        tmp_path: Path) -> None:
    """A hostile or broken agent answering session/new with the id of a session already
    open here cannot replace it (which orphaned the first)."""
    async with attach_registry(tmp_path, FAKE_SESSION_IDS="same,same") as reg:
        first = await reg.new_session("fake", str(tmp_path))
        with pytest.raises(RegistryError, match="already open"):
            await reg.new_session("fake", str(tmp_path))
        assert reg.sessions() == [first]
        assert len(reg.runtime("fake").sessions) == 1
