"""End to end: the User LouiseTurnEnd, LouisePermission and LouiseLimits autocommands and
their data, and the notification and bell (setup{ notify }) while Neovim is unfocused."""

from __future__ import annotations

import contextlib
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

from tests.e2e.conftest import ROOT, Driver, nvim_binary
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e

WAITING = "return require('louise.permission').current ~= nil"


def record_hooks(nvim: Driver) -> None:
    """Every User Louise… autocommand and its data, in order; notes go to a list."""
    nvim.lua("_G.louise_hooks = {}; for _, p in ipairs({'LouiseTurnEnd', 'LouisePermission',"
             " 'LouiseLimits'}) do vim.api.nvim_create_autocmd('User', {pattern = p,"
             " callback = function(ev) table.insert(_G.louise_hooks,"
             " {pattern = ev.match, data = ev.data}) end}) end;"
             " _G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end")


def hooks(nvim: Driver, pattern: str) -> list[dict[str, Any]]:
    return [h["data"] for h in nvim.lua("return _G.louise_hooks") if h["pattern"] == pattern]


def wait_hooks(nvim: Driver, pattern: str, count: int, timeout: float = 30.0) -> list[Any]:
    nvim.wait("local n = 0; for _, h in ipairs(_G.louise_hooks) do"
              " if h.pattern == select(1, ...) then n = n + 1 end end;"
              " return n >= select(2, ...)", pattern, count, timeout=timeout)
    return hooks(nvim, pattern)


def notes(nvim: Driver) -> list[str]:
    return [str(n) for n in nvim.lua("return _G.louise_test_notes")]


def test_turn_end_permission_and_limits_autocommands_carry_their_data(nvim: Driver) -> None:
    record_hooks(nvim)
    key = open_chat(nvim)
    nvim.run_prompt("hello")
    (turn,) = wait_hooks(nvim, "LouiseTurnEnd", 1)
    assert turn == {"key": key, "agent": "demo", "title": "hello", "turn": 1,
                    "status": "ready", "stop_reason": "end_turn"}
    # The demo agent has account limits: its label, once per change.
    limits = wait_hooks(nvim, "LouiseLimits", 1)
    assert limits[-1]["agent"] == "demo" and limits[-1]["label"].startswith("limits ")
    assert limits[-1]["level"] in ("ok", "active", "warning", "error", "neutral")
    # Once per change: never the same label twice in a row (a refresh that finds the
    # same figures goes label -> "… loading" -> label, which is two changes).
    shown = [(d["label"], d["level"]) for d in limits]
    assert all(a != b for a, b in itertools.pairwise(shown)), limits
    # A permission: told once (the float's state repeats), with what it asks.
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    (asked,) = wait_hooks(nvim, "LouisePermission", 1)
    assert asked["key"] == key and asked["agent"] == "demo" and asked["kind"] == "edit"
    assert asked["title"] == "Edit hello.py" and asked["position"] == 1
    assert [o["kind"] for o in asked["options"]] == ["allow_once", "allow_always",
                                                     "reject_once", "reject_always"]
    assert isinstance(asked["id"], int)
    nvim.permission_key("3")  # reject
    second = wait_hooks(nvim, "LouiseTurnEnd", 2)[1]
    assert second["turn"] == 2 and second["key"] == key
    assert len(hooks(nvim, "LouisePermission")) == 1
    # Focused (no FocusLost): no notification about either.
    assert not [n for n in notes(nvim) if ": turn " in n or " asks: " in n], notes(nvim)


def test_a_cancelled_turn_and_a_failing_handler(nvim: Driver) -> None:
    record_hooks(nvim)
    nvim.lua("vim.api.nvim_create_autocmd('User', {pattern = 'LouiseTurnEnd',"
             " callback = function() error('the handler broke') end})")
    key = open_chat(nvim)
    nvim.prompt("/scenario slow")
    nvim.wait_status("prompting", key)
    nvim.nvim.command("LouiseCancel")
    (turn,) = wait_hooks(nvim, "LouiseTurnEnd", 1)
    assert turn["stop_reason"] == "cancelled" and turn["status"] == "ready", turn
    # Neovim reports the broken handler, as for any autocommand; the others ran.
    assert "the handler broke" in nvim.lua("return vim.v.errmsg")
    nvim.run_prompt("and on", key)  # louise goes on
    assert [t["turn"] for t in wait_hooks(nvim, "LouiseTurnEnd", 2)] == [1, 2]


@pytest.fixture
def nvim_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Driver,
                                                                               Path]]:
    """A headless Neovim as the `nvim` fixture's, its stderr (a TUI's terminal) in a file."""
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / f"xdg-{name.lower()}"))
    monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
    monkeypatch.setenv("LOUISE_PYTHON", sys.executable)
    monkeypatch.setenv("LOUISE_DEMO_STATE_DIR", str(tmp_path / "demo-agent"))
    work = tmp_path / "work"
    work.mkdir()
    terminal = tmp_path / "terminal"
    argv = ["/bin/sh", "-c", 'exec "$@" 2>"$0"', str(terminal), nvim_binary(), "--embed",
            "--headless", "-u", str(ROOT / "tests" / "e2e" / "minimal_init.lua"), "-i", "NONE"]
    session = pynvim.attach("child", argv=argv)
    session.command(f"cd {work}")
    try:
        yield Driver(session), terminal
    finally:
        with contextlib.suppress(Exception):
            session.command("qa!")


def test_unfocused_a_turn_end_and_a_permission_notify_and_ring(
        nvim_stderr: tuple[Driver, Path], tmp_path: Path) -> None:
    nvim, terminal = nvim_stderr
    told = tmp_path / "told"
    # A notify command (the message is its last argument), as notify-send would get it.
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, notify = {"
             " command = {select(1, ...), '-c', 'import sys; open(sys.argv[1], \"a\")"
             ".write(sys.argv[2] + chr(10))', select(2, ...)}}})", sys.executable, str(told))
    record_hooks(nvim)
    key = open_chat(nvim)
    nvim.run_prompt("while you look")
    assert b"\a" not in terminal.read_bytes()  # focused: nothing
    nvim.nvim.command("doautocmd FocusLost")
    nvim.run_prompt("while you are away")
    nvim.wait("for _, n in ipairs(_G.louise_test_notes) do"
              " if n:find(': turn 2 done', 1, true) then return n end end")
    assert any(n.startswith("louise: demo") and n.endswith(": turn 2 done")
               for n in notes(nvim)), notes(nvim)
    nvim.wait("return vim.uv.fs_stat(...) ~= nil", str(told))
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    nvim.wait("for _, n in ipairs(_G.louise_test_notes) do"
              " if n == 'louise: demo asks: Edit hello.py' then return n end end")
    nvim.wait("local f = io.open(...); local t = f and f:read('*a') or '';"
              " if f then f:close() end; return select(2, t:gsub('\\n', '')) >= 2", str(told))
    lines = told.read_text().splitlines()
    assert lines[0].endswith(": turn 2 done") and lines[1] == "louise: demo asks: Edit hello.py"
    assert terminal.read_bytes().count(b"\a") == 2
    # Back: the answer ends the turn without telling anyone.
    nvim.nvim.command("doautocmd FocusGained")
    nvim.permission_key("3")
    wait_hooks(nvim, "LouiseTurnEnd", 3)
    assert terminal.read_bytes().count(b"\a") == 2
    assert len(told.read_text().splitlines()) == 2
    assert key == hooks(nvim, "LouiseTurnEnd")[-1]["key"]


def test_notify_options_are_checked(nvim: Driver) -> None:
    ok, problems = nvim.lua("return {require('louise').setup({python = vim.env.LOUISE_PYTHON,"
                            " notify = {bell = 'yes', command = 'notify-send', tun_end = true}})}")
    assert ok is False
    texts = sorted(p["text"] for p in problems)
    assert texts == [
        "setup{}: notify.bell: expected true or false, got \"yes\" (using the default)",
        "setup{}: notify.command: expected a list of strings (the command and its arguments),"
        " got \"notify-send\" (using the default)",
        "setup{}: notify.tun_end: unknown setting (ignored)",
    ], texts
