"""Quitting loses nothing and takes no time: on `:qa!` louise's Python process writes the
transcripts and the limits cache, closes and stops its agents and exits by itself, well
before Neovim's SIGKILL 2 s after its SIGTERM. Neovim crashing (its channel closes) and a
SIGTERM without the request take the same path. (The time itself is measured by
bench/quit.py.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pynvim
import pytest

from tests.e2e.conftest import ROOT, Driver, nvim_binary
from tests.e2e.test_lifecycle import alive, children_of

pytestmark = pytest.mark.e2e

# Neovim SIGKILLs its jobs 2 s after its SIGTERM: an exit past this bound was cut off.
WELL_BEFORE_THE_KILL = 1.5

# The engine's interpreter run through a shell that reports how it ended: its status, or
# 128 + the signal that killed it. The shell survives a SIGTERM (a trap, which the
# interpreter does not inherit) to report it; a SIGKILL of the group leaves no report.
WRAPPER = """#!/bin/sh
trap : TERM
"$LOUISE_TEST_REAL_PYTHON" "$@"
echo $? >> "$LOUISE_TEST_EXIT_FILE"
"""


@dataclass
class Quitting:
    proc: subprocess.Popen[bytes]
    nvim: Driver
    state: Path  # louise's state directory
    exits: Path  # one line per engine process that ended: its status

    def engine_statuses(self) -> list[str]:
        return self.exits.read_text().split() if self.exits.exists() else []

    def transcript_records(self) -> list[dict[str, object]]:
        files = list((self.state / "transcripts").glob("*.jsonl"))
        assert len(files) == 1, f"one transcript expected, found {files}"
        return [json.loads(line) for line in files[0].read_text().splitlines()]

    def holders(self) -> list[int]:
        agents = json.loads((self.state / "limits.json").read_text())["agents"]
        return [holder["pid"] for holder in agents["demo"]["holders"]]


@pytest.fixture
def quitting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Quitting]:
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / name))
    wrapper = tmp_path / "python"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    exits = tmp_path / "engine-exits"
    monkeypatch.setenv("LOUISE_STATE_DIR", str(tmp_path / "louise-state"))
    monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
    monkeypatch.setenv("LOUISE_PYTHON", str(wrapper))
    monkeypatch.setenv("LOUISE_TEST_REAL_PYTHON", sys.executable)
    monkeypatch.setenv("LOUISE_TEST_EXIT_FILE", str(exits))
    monkeypatch.setenv("LOUISE_DEMO_STATE_DIR", str(tmp_path / "demo-agent"))
    socket = str(tmp_path / "nvim.sock")
    proc = subprocess.Popen([nvim_binary(), "--headless", "--listen", socket, "-u",
                             str(ROOT / "tests" / "e2e" / "minimal_init.lua"), "-i", "NONE"],
                            cwd=tmp_path, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:  # the socket file can exist a moment before Neovim accepts on it
            try:
                session = pynvim.attach("socket", path=socket)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield Quitting(proc, Driver(session), tmp_path / "louise-state", exits)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_a_turn(q: Quitting) -> tuple[int, list[int]]:
    """A chat with the demo agent after one turn: the engine's pid and its agents'."""
    q.nvim.nvim.command("LouiseChat")
    q.nvim.wait("return require('louise.chat').last")
    q.nvim.wait_status("ready")
    q.nvim.run_prompt("hello")
    engine = int(q.nvim.lua("return require('louise.engine').pid"))
    agents = children_of(engine)
    assert agents, "the demo agent runs under louise's Python process"
    return engine, agents


def wait_gone(pids: list[int], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.02)


def assert_nothing_lost(q: Quitting, engine: int, agents: list[int]) -> None:
    assert q.engine_statuses()[:1] == ["0"], \
        f"the engine did not exit by itself (statuses {q.engine_statuses()}: 137 or none " \
        "is Neovim's SIGKILL)"
    assert not any(alive(pid) for pid in agents), "an agent outlived louise"
    kinds = [record["type"] for record in q.transcript_records()]
    assert kinds[-1:] == ["turn_end"] or "turn_end" in kinds[kinds.index("prompt"):], \
        f"the turn's end is not in the transcript: {kinds}"
    assert engine not in q.holders(), "the engine's liveness record was left in the cache"


def test_qa_writes_everything_and_exits_well_before_neovims_kill(quitting: Quitting) -> None:
    engine, agents = run_a_turn(quitting)
    start = time.monotonic()
    with contextlib.suppress(Exception):  # Neovim exits while answering
        quitting.nvim.nvim.command("qa!")
    quitting.proc.wait(timeout=30)
    took = time.monotonic() - start
    wait_gone([engine, *agents])
    assert took < WELL_BEFORE_THE_KILL, f":qa! took {took:.2f} s: louise was cut off"
    assert_nothing_lost(quitting, engine, agents)


@pytest.mark.parametrize("how", ["neovim_crashes", "sigterm"])
def test_without_the_request_the_engine_takes_the_same_path(quitting: Quitting,
                                                            how: str) -> None:
    """Neovim killed (the channel closes under louise) or a bare SIGTERM: the same
    budget, the same order, no SIGKILL needed."""
    engine, agents = run_a_turn(quitting)
    start = time.monotonic()
    if how == "neovim_crashes":
        os.kill(quitting.proc.pid, signal.SIGKILL)
    else:
        os.kill(engine, signal.SIGTERM)
    wait_gone([engine])
    took = time.monotonic() - start
    wait_gone(agents)
    assert not alive(engine), "louise's Python process did not exit"
    assert took < WELL_BEFORE_THE_KILL, f"the engine took {took:.2f} s to exit"
    deadline = time.monotonic() + 10  # the wrapper reports just after the engine ends
    while not quitting.engine_statuses() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert_nothing_lost(quitting, engine, agents)
