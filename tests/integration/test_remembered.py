"""What louise remembers across sessions (issue 23, items 8 and 13), over real stdio: a
session's name survives close and resume (the agent keeps its own title), and an Agent's
slash commands are offered after a resume even when the agent sends them only for a new
session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.storage import paths
from tests.integration.agents import FAKES, wait_until

pytestmark = pytest.mark.anyio


def demo_config(tmp_path: Path) -> object:
    return load_config_mapping({"agents": {"demo": {
        "command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
        "env": {"LOUISE_DEMO_STATE_DIR": str(tmp_path / "demo-state"),
                "LOUISE_DEMO_SAVED_SESSIONS": "0"}}}})


async def test_a_name_survives_close_and_resume(tmp_path: Path) -> None:
    config = demo_config(tmp_path)
    async with SessionRegistry(config, grace_seconds=0.5) as reg:  # type: ignore[arg-type]
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "hello there")
        reg.rename(session.session_id, "auth  refactor")
        acp_id = session.acp_id
        await reg.close_session(session.session_id)
    async with SessionRegistry(config, grace_seconds=0.5) as reg:  # type: ignore[arg-type]
        (listing,) = await reg.list_all_sessions(str(tmp_path), ["demo"])
        assert [(s["sessionId"], s.get("title")) for s in listing.sessions] \
            == [(acp_id, "auth refactor")]
        loaded = await reg.load_session("demo", acp_id, str(tmp_path))
        assert loaded.name == "auth refactor"
        reg.rename(loaded.session_id, "")  # cleared: forgotten too
    from louise.storage.remembered import Remembered
    assert Remembered().name("demo", acp_id) is None


async def test_commands_are_offered_after_a_resume(tmp_path: Path) -> None:
    config = load_config_mapping({"agents": {"fake": {
        "command": sys.executable, "args": [str(FAKES / "attach_agent.py")],
        "env": {"FAKE_STORE": str(tmp_path / "store.json"), "FAKE_CAPS": "load,resume",
                "FAKE_COMMANDS": "1"}}}})
    async with SessionRegistry(config, grace_seconds=0.5) as reg:
        session = await reg.new_session("fake", str(tmp_path))
        await wait_until(lambda: session.commands)
        acp_id = session.acp_id
    async with SessionRegistry(config, grace_seconds=0.5) as reg:
        resumed = await reg.resume_session("fake", acp_id, str(tmp_path))
        assert [c["name"] for c in resumed.commands] == ["review", "compact"]
        assert resumed.commands[0]["input"] == {"hint": "what to look at"}


def test_the_file_stays_bounded_and_a_broken_one_is_empty(tmp_path: Path) -> None:
    from louise.storage.remembered import MAX_NAMES, Remembered
    path = paths.state_dir() / "remembered.json"
    clock = iter(range(10**6))
    store = Remembered(clock=lambda: next(clock))
    for n in range(MAX_NAMES + 20):
        store.remember_name("demo", f"s{n}", f"name {n}")
    store.remember_commands("demo", [{"name": f"c{n}", "description": "x" * 1000}
                                     for n in range(500)])
    store.save()
    document = json.loads(path.read_text())
    assert len(document["names"]) == MAX_NAMES and "demo:s0" not in document["names"]
    assert len(document["commands"]["demo"]["commands"]) == 200
    assert Remembered().name("demo", f"s{MAX_NAMES + 19}") == f"name {MAX_NAMES + 19}"
    path.write_text("{not json")
    assert Remembered().commands("demo") == []
