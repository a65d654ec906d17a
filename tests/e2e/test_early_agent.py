"""`:LouiseChat` on first use starts its agent at the start of louise's Python process,
before the engine's modules load (lua/louise/engine.lua's early_agent, louise/nvim/
early_agent.py), and the chat runs on that very process: the engine says it adopted it
(LOUISE_LOG=INFO), and it is the only such agent among the engine's children."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pynvim
import pytest

from tests.e2e.conftest import ROOT, Driver, nvim_binary
from tests.integration.agents import FAKES

pytestmark = pytest.mark.e2e

ADOPTED = re.compile(r"adopted the agent started early \(pid (\d+)\)")


def _start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str) -> Any:
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / name))
    monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
    monkeypatch.setenv("LOUISE_PYTHON", sys.executable)
    monkeypatch.setenv("LOUISE_DEMO_STATE_DIR", str(tmp_path / "demo-agent"))
    monkeypatch.setenv("LOUISE_LOG", "INFO")
    monkeypatch.setenv("LOUISE_E2E_SCRIPT_AGENT", str(FAKES / "script_agent.py"))
    work = tmp_path / "work"
    work.mkdir()
    init = tmp_path / "init.lua"
    init.write_text("vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)\n"
                    "vim.opt.swapfile = false\n"
                    "vim.cmd('runtime plugin/louise.lua')\n"
                    f"require('louise').setup({setup})\n")
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-u",
                                        str(init), "-i", "NONE"])
    nvim.command(f"cd {work}")
    return nvim


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            found.extend(int(child) for child in (task / "children").read_text().split())
    return found


def _agents(engine: int, name: str) -> list[int]:
    """The engine's children running `name` (others come and go: git for checkpoints)."""
    found = []
    for pid in _children(engine):
        with contextlib.suppress(OSError):
            if name in Path(f"/proc/{pid}/cmdline").read_text():
                found.append(pid)
    return found


def _adopted_pid(driver: Driver) -> int:
    stderr = "\n".join(driver.lua("return require('louise.engine').stderr"))
    match = ADOPTED.search(stderr)
    assert match, f"no agent was started early and adopted; stderr: {stderr}"
    return int(match.group(1))


def test_louisechat_on_first_use_runs_on_the_demo_agent_started_early(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvim = _start(tmp_path, monkeypatch, "{ python = vim.env.LOUISE_PYTHON }")
    driver = Driver(nvim)
    try:
        nvim.command("LouiseChat")
        driver.wait_status("ready", timeout=60)
        engine = int(driver.wait("return require('louise.engine').pid"))
        agent = _adopted_pid(driver)
        assert _agents(engine, "louise.demo_agent") == [agent]
        assert "louise.demo_agent" in Path(f"/proc/{agent}/cmdline").read_text()
        # The agent never sees the hint meant for louise's own process.
        assert b"LOUISE_EARLY_AGENT" not in Path(f"/proc/{agent}/environ").read_bytes()
        driver.run_prompt("hello")
        assert "Hello from the demo agent" in driver.chat_text()
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")


def _chat_on_the_early_script_agent(nvim: pynvim.Nvim) -> None:
    """`:LouiseChat` is ready on tests/fakes/script_agent.py, the engine's only agent is the
    one started early, and a turn runs on it; Neovim quits after."""
    driver = Driver(nvim)
    try:
        nvim.command("LouiseChat")
        driver.wait_status("ready", timeout=60)
        engine = int(driver.wait("return require('louise.engine').pid"))
        agent = _adopted_pid(driver)
        assert _agents(engine, "script_agent.py") == [agent]
        driver.run_prompt("[]")
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")


def test_louisechat_with_a_setup_agent_runs_on_the_agent_started_early(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvim = _start(tmp_path, monkeypatch,
                  "{ python = vim.env.LOUISE_PYTHON, agents = { script = {"
                  " command = vim.env.LOUISE_PYTHON, args = { vim.env.LOUISE_E2E_SCRIPT_AGENT },"
                  " env = { FAKE_NOTE = 'early' } } } }")
    _chat_on_the_early_script_agent(nvim)


def test_louisechat_with_a_config_toml_agent_runs_on_the_agent_started_early(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("LOUISE_CONFIG", str(config))
    config.write_text(f'[agents.script]\ncommand = "{sys.executable}"\n'
                      f'args = ["{FAKES / "script_agent.py"}"]\n')
    nvim = _start(tmp_path, monkeypatch, "{ python = vim.env.LOUISE_PYTHON }")
    _chat_on_the_early_script_agent(nvim)


def test_the_hint_names_an_agent_only_for_a_chat_and_never_through_the_session_host(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What engine.lua hands the new process (`early_agent`), read without starting it."""
    nvim = _start(tmp_path, monkeypatch,
                  "{ python = vim.env.LOUISE_PYTHON, agents = { a = { command = 'a-acp',"
                  " env = { X = '1' } } }, default_agent = 'a' }")
    driver = Driver(nvim)
    try:
        hint = driver.lua("return require('louise.engine').early_agent('chat', {})")
        assert json.loads(hint) == {"setup": True, "default_agent": "a", "agents": {
            "a": {"command": "a-acp", "env": {"X": "1"}}}}
        named = driver.lua("return require('louise.engine').early_agent('new', {agent = 'b'})")
        assert json.loads(named)["agent"] == "b"
        for command in ("limits", "load", "reattach", "switch"):
            assert driver.lua("return require('louise.engine').early_agent(...)",
                              command, {}) is None
        driver.lua("require('louise').setup({ python = vim.env.LOUISE_PYTHON,"
                   " host = 'auto' })")
        assert driver.lua("return require('louise.engine').early_agent('chat', {})") is None
        driver.lua("require('louise').setup({ python = vim.env.LOUISE_PYTHON })")
        assert json.loads(driver.lua(
            "return require('louise.engine').early_agent('chat', {})")) == {"setup": False}
        # None of this started anything.
        assert driver.lua("return require('louise.engine').chan") is None
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")


def test_an_inherited_hint_starts_no_agent(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`LOUISE_EARLY_AGENT` in Neovim's own environment is not Lua's word: the idle start
    (which asks for no agent) starts none."""
    monkeypatch.setenv("LOUISE_EARLY_AGENT", json.dumps({"setup": True, "agents": {
        "x": {"command": "/bin/sh", "args": ["-c", "exec sleep 600"]}}}))
    nvim = _start(tmp_path, monkeypatch, "{ python = vim.env.LOUISE_PYTHON,"
                                         " start_engine = 'idle' }")
    driver = Driver(nvim)
    try:
        engine = int(driver.wait("local e = require('louise.engine');"
                                 " return e.ready and e.pid or false", timeout=60))
        assert _children(engine) == []
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")
