"""Sessions of every configured Agent at once, with delete and fork where advertised,
against the demo agent (and ones that cannot list) over real stdio."""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError
from tests.integration.agents import FAKES

pytestmark = pytest.mark.anyio


def config(tmp_path: Path) -> Any:
    demo = {"command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"],
            "env": {"LOUISE_DEMO_STATE_DIR": str(tmp_path / "demo-state"),
                    "LOUISE_DEMO_SAVED_SESSIONS": "0"}}
    return load_config_mapping({"agents": {
        "demo": demo,
        "missing": {"command": "no-such-agent-command-anywhere"},
        "locked": {**demo, "env": {**demo["env"], "LOUISE_DEMO_AUTH": "required"}},
        "plain": {"command": sys.executable, "args": [str(FAKES / "raw_agent.py")],
                  "env": {"FAKE_MODE": "ok"}},
    }})


async def test_every_agent_listed_with_errors_in_place(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(session.session_id, "remember me")
        listings = await reg.list_all_sessions(str(tmp_path))
        assert [listing.agent for listing in listings] == ["demo", "missing", "locked",
                                                           "plain"]
        demo, missing, locked, plain = listings
        assert [s["sessionId"] for s in demo.sessions] == [session.acp_id]
        assert (demo.error, demo.can_load, demo.can_fork, demo.can_delete) == (None, True,
                                                                               True, True)
        assert missing.error is not None and "no-such-agent-command-anywhere" in missing.error
        assert locked.error is not None and locked.error.startswith(
            "locked requires authentication")
        assert plain.error == "plain does not support session/list"


async def test_fork_opens_a_new_session_with_the_history(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        source = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(source.session_id, "the original question")
        fork = await reg.fork_session("demo", source.acp_id, str(tmp_path))
        assert fork.session_id != source.session_id and fork.status == "ready"
        assert "the original question" in [m.text for m in fork.messages() if m.role == "user"]
        await reg.prompt(fork.session_id, "only in the fork")
        source_texts = [m.text for m in reg.session(source.session_id).messages()]
        assert "only in the fork" not in source_texts
        titles = {s["sessionId"]: s.get("title") for s in
                  (await reg.list_all_sessions(str(tmp_path), ["demo"]))[0].sessions}
        assert titles[fork.acp_id] == "Fork of the original question"


async def test_delete_closes_an_open_session_and_removes_it(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        keep = await reg.new_session("demo", str(tmp_path))
        gone = await reg.new_session("demo", str(tmp_path))
        await reg.delete_session("demo", gone.acp_id)
        assert gone.status == "closed"
        with pytest.raises(RegistryError):
            reg.session(gone.session_id)
        (demo,) = await reg.list_all_sessions(None, ["demo"])
        ids = [s["sessionId"] for s in demo.sessions]
        assert keep.acp_id in ids and gone.acp_id not in ids
        await reg.delete_session("demo", gone.acp_id)  # again: fine, per the spec
    # Gone for a new agent process too.
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        (demo,) = await reg.list_all_sessions(None, ["demo"])
        assert gone.acp_id not in [s["sessionId"] for s in demo.sessions]


async def test_delete_and_fork_only_where_advertised(tmp_path: Path) -> None:
    cfg = load_config_mapping({"agents": {"plain": {
        "command": sys.executable, "args": [str(FAKES / "raw_agent.py")],
        "env": {"FAKE_MODE": "ok"}}}})
    async with SessionRegistry(cfg, grace_seconds=0.5) as reg:
        with pytest.raises(RegistryError, match="does not support deleting sessions"):
            await reg.delete_session("plain", "x")
        with pytest.raises(RegistryError, match="does not support forking sessions"):
            await reg.fork_session("plain", "x", str(tmp_path))


async def test_an_agent_that_forks_only_sessions_it_holds_gets_the_source_loaded(
        tmp_path: Path) -> None:
    """As vibe-acp: session/fork of a session the agent process has not loaded says
    "Session not found"; louise loads it (no chat), forks it, then closes it again."""
    cfg = config(tmp_path)
    live_only = copy.deepcopy(cfg)
    live_only.agents["demo"].env["LOUISE_DEMO_FORK"] = "live"
    async with SessionRegistry(live_only, grace_seconds=0.5) as reg:
        source = await reg.new_session("demo", str(tmp_path))
        await reg.prompt(source.session_id, "asked before the restart")
        source_id = source.acp_id
    async with SessionRegistry(live_only, grace_seconds=0.5) as reg:  # a new agent process
        fork = await reg.fork_session("demo", source_id, str(tmp_path))
        assert "asked before the restart" in [m.text for m in fork.messages()
                                              if m.role == "user"]
        assert [s.acp_id for s in reg.sessions()] == [fork.acp_id]  # the source closed


async def test_a_prompt_and_the_agents_reply_move_the_sessions_last_use(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`last_active` (what :LouiseSwitch shows): the wall clock when the session was last
    used, set by a prompt sent and by each update of the agent's."""
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        opened = reg.last_active(session.session_id)
        assert abs(opened - time.time()) < 3600  # the wall clock, not a monotonic one
        later = opened + 7200.0  # "two hours later", as the registry's clock says
        clock = SimpleNamespace(time=lambda: later, monotonic=time.monotonic)
        monkeypatch.setattr("louise.registry.turns.time", clock)
        monkeypatch.setattr("louise.registry.sessions.time", clock)
        assert await reg.prompt(session.session_id, "hello") == "end_turn"
        assert reg.last_active(session.session_id) == later
