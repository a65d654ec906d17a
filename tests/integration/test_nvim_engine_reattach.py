"""A chat comes back after louise's own Neovim process died by the same path as after its
agent's process died (`SessionRegistry.reattach`: load where the agent can, else resume):
the real engine (the in-memory stand-in for Neovim of tests/unit/test_nvim_engine.py),
and the attach fake (tests/fakes/attach_agent.py) as an agent that can only resume, as
codex-acp and claude-agent-acp may."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from louise.nvim.engine import Engine
from tests.integration.agents import FAKES
from tests.unit.test_nvim_engine import FakeNeovim, on_loop

ATTACH = str(FAKES / "attach_agent.py")


def options(tmp_path: Path) -> dict[str, Any]:
    return {"request_timeout": 30, "agents": {"fake": {
        "command": sys.executable, "args": [ATTACH],
        "env": {"FAKE_CAPS": "resume", "FAKE_STORE": str(tmp_path / "store.json"),
                "FAKE_LOG": str(tmp_path / "fake.log")}}}}


def test_a_resume_only_agents_chat_comes_back_after_the_engine_died(tmp_path: Path) -> None:
    first_ui = FakeNeovim()
    first = Engine(first_ui, options(tmp_path))  # type: ignore[arg-type]
    first.start()
    try:
        registry = first.registry
        assert registry is not None
        session = on_loop(first, registry.new_session, "fake", str(tmp_path)).result(60)
        assert on_loop(first, registry.prompt, session.session_id, "hello").result(60) \
            == "end_turn"
    finally:
        first_ui.release.set()
        first.stop()  # the process is gone; the agent's session outlives it (FAKE_STORE)

    ui = FakeNeovim()
    engine = Engine(ui, options(tmp_path))  # type: ignore[arg-type]
    engine.start()
    try:
        key = session.session_id
        engine.submit("reattach", {"key": key, "agent": "fake", "cwd": str(tmp_path),
                                   "name": "the chat"})
        status = ui.wait(lambda: (found := engine.lookup(key)) is not None
                         and found.status in ("ready", "error") and found.status, timeout=60)
        notices = [item[0] for batch in ui.batches for item in batch.get("notify", [])]
        assert status == "ready", notices
        assert "session/resume" in (tmp_path / "fake.log").read_text()
        opened = ui.wait(lambda: [item for batch in ui.batches for item in batch.get("open", [])])
        assert opened[0]["key"] == key and opened[0]["focus"] is False
    finally:
        ui.release.set()
        engine.stop()
