"""End to end: :LouiseResume lists the sessions of every configured agent (an agent that
cannot list shows why in its place), and opens, forks or deletes the pick."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_sign_in import stub_selects

pytestmark = pytest.mark.e2e


def setup(nvim: Driver, tmp_path: Path) -> None:
    # Notes go to a list (a long one would stop headless Neovim at a hit-enter prompt).
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end")
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {"
             " demo = {command = select(1, ...), args = {'-P', '-m', 'louise.demo_agent'},"
             "   env = {LOUISE_DEMO_SAVED_SESSIONS = '0'}},"
             " missing = {command = 'no-such-agent-command-anywhere'}},"
             " default_agent = 'demo'})", sys.executable)


def open_demo(nvim: Driver) -> str:
    nvim.nvim.command("LouiseChat demo")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    return key


def test_every_agent_listed_then_fork_and_delete(nvim: Driver, tmp_path: Path) -> None:
    setup(nvim, tmp_path)
    first = open_demo(nvim)
    nvim.run_prompt("the first question", first)
    stub_selects(nvim, [1, 2])  # the demo session, then "Fork it"
    nvim.nvim.command("LouiseResume")
    fork = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                         first, timeout=90))
    nvim.wait_status("ready", fork)
    listed = nvim.lua("return _G.louise_test_selects")
    items = listed[0]["items"]
    assert items[0].startswith("▸ demo · the first question · ")  # the chat open now
    # Cut to fit the row (picked, the whole error is shown).
    assert any(i.startswith("  missing · ✗ missing: ") and len(i) <= 72 for i in items), items
    assert listed[1]["items"] == ["Open it (its history is replayed)",
                                  "Fork it (a new session with the same history)", "Delete it"]
    assert "the first question" in nvim.chat_text(fork)  # the fork's history, replayed
    # Delete the first session: asked for confirmation; its chat closes.
    stub_selects(nvim, [2, 3, 1])  # the older session (the fork lists first), Delete, yes
    nvim.nvim.command("LouiseResume")
    nvim.wait("return require('louise.chat').chats[...] == nil", first)
    confirm = nvim.lua("return _G.louise_test_selects[3]")
    assert confirm["items"] == ["Delete it for good", "Keep it"]
    stub_selects(nvim, [])
    nvim.nvim.command("LouiseResume")
    nvim.wait("return _G.louise_test_selects and #_G.louise_test_selects == 1")
    items = nvim.lua("return _G.louise_test_selects[1].items")
    assert [i for i in items if i[2:].startswith("demo · ")] == [
        i for i in items if "Fork of the first question" in i]


def test_resume_says_which_agents_are_still_listing(nvim: Driver, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level, opts)"
             " table.insert(_G.louise_test_notes, {msg, opts and opts.id}) end")
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {"
             " demo = {command = select(1, ...), args = {'-P', '-m', 'louise.demo_agent'},"
             "   env = {LOUISE_DEMO_SAVED_SESSIONS = '0'}},"
             " slow = {command = select(1, ...), args = {'-P', '-m',"
             "   'tests.fakes.slow_start_agent'}, cwd = select(3, ...),"
             "   env = {FAKE_START_GATE = select(2, ...), PYTHONPATH = select(3, ...)}}},"
             " default_agent = 'demo'})", sys.executable, str(gate),
             str(Path(__file__).resolve().parents[2]))
    stub_selects(nvim, [])
    nvim.nvim.command("LouiseResume")
    # The demo agent listed, the slow one still starting: said so, and counted.
    counted = nvim.wait(
        "for _, n in ipairs(_G.louise_test_notes) do"
        " if n[1]:find('listing sessions: demo done, slow starting [1-9]%d*s$') then"
        " return n end end", timeout=60)
    assert counted[0].startswith("louise: … listing sessions: demo done, slow starting ")
    progress = [n for n in nvim.lua("return _G.louise_test_notes")
                if "listing sessions" in n[0]]
    assert all("\n" not in n[0] and n[1] == progress[0][1] for n in progress), progress
    assert progress[0][1]  # one id: a notification plugin updates one notice
    assert nvim.lua("return #_G.louise_test_selects") == 0  # the picker waits for both
    gate.write_text("open")
    # Both listed (no session anywhere yet): the picker's own word, and no more progress.
    nvim.wait("local n = _G.louise_test_notes; return n[#n][1]:find('no agent lists sessions"
              " here', 1, true)", timeout=90)
    notes = [n[0] for n in nvim.lua("return _G.louise_test_notes")]
    assert not any("slow failed" in n for n in notes), notes
