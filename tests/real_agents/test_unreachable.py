"""Issue 23 item 1 with real agents: the model API refuses connections (its base URL is a
closed port). louise is never silent meanwhile (`louise chat`'s stderr counts the wait and
shows the agent's own notes, codex-acp's "Reconnecting... n/5"; Neovim's winbar too), and
the prompt watchdog ends a turn that makes no progress, whatever the agent reports of its
own retries."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.real_agents.conftest import RealAgent, available
from tests.real_agents.harness import agent_environment, louise_config
from tests.real_agents.install import Installed

IDLE = 20  # prompt_idle_timeout of these tests, in seconds


class RefusingModel:
    """A model API nobody listens on: connections to it are refused at once."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]  # closed again when the block ends

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def unreachable_agent(name: str, root: Path, installed: Installed) -> RealAgent:
    available(installed, name)
    refusing = RefusingModel()
    env = agent_environment(name, root / "home", refusing, installed.agents[name])  # type: ignore[arg-type]
    workspace, wire_dir = root / "work", root / "wire"
    for folder in (workspace, wire_dir):
        folder.mkdir(parents=True, exist_ok=True)
    config_path = root / "config.toml"
    config_path.write_text(f"prompt_idle_timeout = {IDLE}\n" + louise_config(
        {name: (installed.agents[name], env)}, wire_dir, default_agent=name))
    return RealAgent(name, workspace, root / "state", config_path, wire_dir,
                     refusing, Path(env["HOME"]))  # type: ignore[arg-type]


def notes_on_the_wire(agent: RealAgent) -> list[str]:
    """codex-acp's notes of its own retries, as it sent them."""
    out = []
    for message in agent.wire.received("session/update"):
        update = message.get("params", {}).get("update", {})
        error = update.get("_meta", {}).get("codex", {}).get("error", {})
        if update.get("sessionUpdate") == "session_info_update" and "message" in error:
            out.append(str(error["message"]))
    return out


@pytest.mark.parametrize("name", ["codex", "claude"])
def test_louise_chat_is_never_silent_and_the_watchdog_ends_the_turn(
        name: str, tmp_path: Path, installed: Installed) -> None:
    agent = unreachable_agent(name, tmp_path, installed)
    result = agent.louise("chat", "--agent", name, "hello", timeout=500)
    lines = result.stderr.splitlines()
    assert result.status == 1, result
    # The wait is counted on stderr (plain lines: no terminal here) ...
    counted = [line for line in lines if re.match(r"louise: working \d+s", line)]
    assert counted, result
    # ... every note the agent sent is shown as it came ...
    for note in notes_on_the_wire(agent):
        assert f"[{name}] {note}" in lines, (note, result)
    # ... and the turn ends: by the watchdog (no progress, whatever the agent reports of
    # its retries) or by the agent giving up, with louise's hint either way.
    failure = [line for line in lines if line.startswith("louise: ") and
               not re.match(r"louise: (working|starting|warning)", line)]
    assert failure, result
    assert "JSON-RPC" not in result.stderr and "Internal error" not in result.stderr, result
    print(result)  # the closing note's figures
    if f"made no progress for {IDLE} s" not in failure[0]:
        assert "the model API could not be reached" in failure[0], result


def test_neovim_shows_the_count_and_codexs_notes_as_they_come(
        tmp_path: Path, installed: Installed, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    agent = unreachable_agent("codex", tmp_path / "real", installed)
    monkeypatch.setenv("LOUISE_CONFIG", str(agent.config_path))
    monkeypatch.setenv("LOUISE_STATE_DIR", str(agent.state_dir))
    nvim: Driver = request.getfixturevalue("nvim")
    nvim.nvim.command("LouiseChat codex")
    nvim.wait("return require('louise.chat').last", timeout=120)
    nvim.wait_status("ready", timeout=120)
    win = int(nvim.lua("local c = require('louise.chat');"
                       " return vim.fn.win_findbuf(c.chats[c.last].buf)[1]"))
    nvim.prompt("hello")
    nvim.wait("local c = require('louise.chat'); return c.chats[c.last].status.status"
              " ~= 'ready'", timeout=60)
    # Every winbar the person saw while the turn ran (polled: a note shows until the next),
    # and when the first note reached the wire and the winbar (a figure, not asserted).
    bars: list[str] = []
    on_wire = on_screen = None
    end = time.monotonic() + 400
    while time.monotonic() < end:
        status = nvim.status()
        bar = str(nvim.lua("local w = ...; return vim.api.nvim_eval_statusline("
                           "vim.wo[w].winbar, {winid = w, use_winbar = true}).str", win))
        bars.append(bar)
        if on_wire is None and notes_on_the_wire(agent):
            on_wire = time.monotonic()
        if on_screen is None and "Reconnecting" in bar:
            on_screen = time.monotonic()
        if status not in ("prompting", "cancelling"):
            break
        time.sleep(0.1)
    print(f"first note: on the wire at +0, in the winbar at "
          f"{(on_screen or 0) - (on_wire or 0):+.2f} s (polled every 0.1 s)")
    assert any(re.search(r"working \d+s", bar) for bar in bars), bars[:5]
    notes = notes_on_the_wire(agent)
    assert notes, "codex sent no note of its retries"
    assert any(note[:40] in bar for note in notes for bar in bars), (notes, bars[-5:])
    assert nvim.status() in ("ready", "error")
    assert "made no progress for 20 s" in nvim.chat_text()
