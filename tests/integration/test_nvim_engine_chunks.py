"""The Neovim engine asks for one message's text chunks read at once to be merged before
the session model (`SessionRegistry(merge_text_chunks=True)`): a burst costs one model
update and one chat op instead of one per chunk. tests/unit/test_acp_merge_chunks.py tests
the merge itself; this drives the real engine (the in-memory stand-in for Neovim of
tests/unit/test_nvim_engine.py) and a real agent process that writes a burst at once."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from louise.nvim.engine import Engine
from louise.registry.events import RegistryEvent
from louise.session import MessageChunk
from tests.integration.agents import FAKES
from tests.unit.test_nvim_engine import FakeNeovim, on_loop, on_loop_call

BURST = ["one ", "two ", "three ", "four ", "five"]


@pytest.fixture
def ui() -> FakeNeovim:
    return FakeNeovim()


@pytest.fixture
def engine(ui: FakeNeovim) -> Iterator[Engine]:
    engine = Engine(ui, {"request_timeout": 30, "agents": {"script": {  # type: ignore[arg-type]
        "command": sys.executable, "args": [str(FAKES / "script_agent.py")]}}})
    engine.start()
    try:
        yield engine
    finally:
        ui.release.set()
        engine.stop()


def test_the_engine_gets_a_burst_of_chunks_as_one(engine: Engine, ui: FakeNeovim,
                                                  tmp_path: Path) -> None:
    registry = engine.registry
    assert registry is not None
    events: list[RegistryEvent] = []
    on_loop_call(engine, registry.subscribe, events.append)

    def agent_chunks() -> list[str]:
        return [e.text for e in list(events) if isinstance(e, MessageChunk) and e.role == "agent"]

    session = on_loop(engine, registry.new_session, "script", str(tmp_path)).result(60)
    go = tmp_path / "go"
    # The burst alone in the pipe: the agent writes nothing more (its reply) until `go`.
    turn = on_loop(engine, registry.prompt, session.session_id,
                   json.dumps([{"burst": BURST}, {"wait_file": str(go)}]))
    ui.wait(agent_chunks)
    go.touch()
    assert turn.result(60) == "end_turn"
    assert agent_chunks() == ["".join(BURST)], "one model update for the burst read at once"
