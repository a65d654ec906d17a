"""End to end (issue 23, item 3): `:LouiseChat` puts the chat on screen at once, with a
ticking "… starting <agent> · Ns" placeholder, while the agent is still starting (a fake
that answers nothing until the test opens its gate); what the person types there is kept
and sent when the session is ready; a person who went elsewhere is not pulled back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, Driver
from tests.e2e.ui_screen import Screen, ui_nvim_fixture  # noqa: F401 (the fixture)

pytestmark = pytest.mark.e2e

SLOW_AGENT = ROOT / "tests" / "fakes" / "slow_start_agent.py"

# The first line of a chat transcript shown in this tab (nil without one).
PLACEHOLDER = ("for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
               " local b = vim.api.nvim_win_get_buf(w);"
               " if vim.bo[b].filetype == 'louise' then"
               "   return vim.api.nvim_buf_get_lines(b, 0, 1, false)[1] end end")
PROMPT_LINE = "return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]"


def setup_slow_agent(nvim: Driver, gate: Path) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {"
             " slow = {command = select(1, ...), args = {select(2, ...)},"
             "   env = {FAKE_START_GATE = select(3, ...)}}}})",
             sys.executable, str(SLOW_AGENT), str(gate))


def code_buffer(nvim: Driver, work: Path) -> int:
    (work / "code.py").write_text("def add(a, b):\n    return a + b\n")
    nvim.nvim.command("edit code.py")
    return int(nvim.lua("return vim.api.nvim_get_current_win()"))


def test_the_chat_is_on_screen_while_the_agent_starts_and_a_prompt_typed_meanwhile_goes(
        ui_nvim: tuple[Driver, Screen], tmp_path: Path) -> None:
    nvim, screen = ui_nvim
    gate = tmp_path / "gate"
    setup_slow_agent(nvim, gate)
    code_win = code_buffer(nvim, tmp_path / "work")
    nvim.nvim.command("LouiseChat slow")
    # At once, before the agent (or even louise's Python side) answered anything.
    first = nvim.lua(PLACEHOLDER)
    assert first is not None and first.startswith("… starting slow · "), first
    assert nvim.lua("return vim.bo.filetype") == "louise_prompt"  # the cursor is there
    screen.wait_for("… starting slow · ")
    # The counter ticks.
    nvim.wait(f"local l = (function() {PLACEHOLDER} end)();"
              " return l and l:find('starting slow', 1, true) and not l:find('· 0s', 1, true)",
              timeout=10)
    # The person types a prompt and sends it, then goes back to the code.
    nvim.nvim.input("ihello from the start<Esc>")
    nvim.wait(f"{PROMPT_LINE} == 'hello from the start' and vim.api.nvim_get_mode().mode == 'n'")
    nvim.nvim.input("<CR>")
    nvim.wait(f"{PROMPT_LINE} == ''")  # sent: it waits for the session
    nvim.lua("vim.api.nvim_set_current_win(...)", code_win)
    nvim.nvim.input("G")  # the person moves on in the code meanwhile
    gate.write_text("go")
    key = str(nvim.wait("local c = require('louise.chat'); return c.last and"
                        " c.last:find('^slow:') and c.last", timeout=60))
    nvim.wait("local c = require('louise.chat'); local s = c.chats[...];"
              " return s.status and (s.status.turns_done or 0) >= 1", key, timeout=60)
    assert "You wrote: *hello from the start*" in nvim.chat_text(key)
    assert "starting slow" not in nvim.chat_text(key)
    # The cursor never left the code; the code is as it was.
    assert nvim.lua("return vim.api.nvim_get_current_win()") == code_win
    assert nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)") == [
        "def add(a, b):", "    return a + b"]
    # The placeholder became the chat: one chat, in the windows it had.
    assert nvim.lua("return vim.tbl_count(require('louise.chat').chats)") == 1
    bottom = screen.text().split("\n")[-1]
    assert "starting" not in bottom, bottom  # no "… starting slow" left on the command line
    assert screen.hit_enter == 0, screen.hit_enter_screens


def test_a_prompt_being_typed_as_the_agent_becomes_ready_stays_under_the_cursor(
        ui_nvim: tuple[Driver, Screen], tmp_path: Path) -> None:
    nvim, screen = ui_nvim
    gate = tmp_path / "gate"
    setup_slow_agent(nvim, gate)
    code_buffer(nvim, tmp_path / "work")
    nvim.nvim.command("LouiseChat slow")
    assert nvim.lua(PLACEHOLDER)
    nvim.nvim.input("ihalf a tho")
    nvim.wait(f"{PROMPT_LINE} == 'half a tho'")
    gate.write_text("go")
    key = str(nvim.wait("local c = require('louise.chat'); return c.last and"
                        " c.last:find('^slow:') and c.last", timeout=60))
    nvim.wait_status("ready", key, timeout=60)
    nvim.nvim.input("ught")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[...];"
              " return vim.api.nvim_buf_get_lines(s.prompt, 0, 1, false)[1] == 'half a thought'"
              " and vim.api.nvim_get_current_buf() == s.prompt"
              " and vim.api.nvim_get_mode().mode == 'i'", key)
    assert screen.hit_enter == 0, screen.hit_enter_screens


def test_no_session_comes_of_it_and_the_placeholder_goes(ui_nvim: tuple[Driver, Screen],
                                                          tmp_path: Path) -> None:
    """An agent whose command is missing: the placeholder is dropped, one line says why."""
    nvim, screen = ui_nvim
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {"
             " gone = {command = 'no-such-agent-command-anywhere'}}})")
    nvim.nvim.command("LouiseChat gone")
    assert nvim.lua(PLACEHOLDER)
    nvim.wait(f"return (function() {PLACEHOLDER} end)() == nil", timeout=60)
    assert nvim.lua("return next(require('louise.chat').chats) == nil")
    assert nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 1
    assert screen.hit_enter == 0, screen.hit_enter_screens


# ---- which chat is the last one once a placeholder's session is ready ------------------

SLOW_KEY = ("for k, s in pairs(require('louise.chat').chats) do"
            " if k:find('^slow:') and s.status and s.status.status == 'ready' then return k end"
            " end")
LAST = "return require('louise.chat').last"


def open_demo_then_slow(nvim: Driver, tmp_path: Path) -> tuple[int, str]:
    """The code in one window, a demo chat ready, then `:LouiseChat slow` (its placeholder
    takes the demo chat's windows): the code's window and the demo chat's key."""
    gate = tmp_path / "gate"
    setup_slow_agent(nvim, gate)
    code_win = code_buffer(nvim, tmp_path / "work")
    nvim.nvim.command("LouiseChat demo")
    demo = str(nvim.wait("local c = require('louise.chat'); return c.last"))
    nvim.wait_status("ready", demo)
    nvim.nvim.command("LouiseChat slow")
    assert nvim.lua(PLACEHOLDER)
    assert nvim.lua(LAST) == demo  # a placeholder is never the last chat
    return code_win, demo


def test_the_chat_that_became_ready_is_the_last_wherever_the_cursor_went(
        nvim: Driver, tmp_path: Path) -> None:
    """:LouiseChat, then waiting: the new chat is the last one (:LouisePrompt's, the
    statusline's), also when the person went back to their code meanwhile."""
    code_win, demo = open_demo_then_slow(nvim, tmp_path)
    nvim.lua("vim.api.nvim_set_current_win(...)", code_win)
    (tmp_path / "gate").write_text("go")
    key = str(nvim.wait(SLOW_KEY, timeout=60))
    assert nvim.lua(LAST) == key
    assert nvim.lua("return vim.api.nvim_get_current_win()") == code_win  # not pulled back
    # And when the cursor stayed in the placeholder, the same.
    nvim.nvim.command("LouiseNew slow")
    assert nvim.lua("return vim.bo.filetype") == "louise_prompt"
    newer = str(nvim.wait("local c = require('louise.chat'); for k, s in pairs(c.chats) do"
                          " if k ~= ... and k:find('^slow:') then return k end end", key,
                          timeout=60))
    assert nvim.lua(LAST) == newer and demo != newer


def test_a_chat_the_person_went_into_meanwhile_stays_the_last(nvim: Driver,
                                                              tmp_path: Path) -> None:
    """The person went into another chat while the agent started (here: the demo chat's
    transcript split beside the placeholder): that chat stays the last one when the new
    one is ready, though the new one is on screen too."""
    _, demo = open_demo_then_slow(nvim, tmp_path)
    nvim.lua("local s = require('louise.chat').chats[...]; vim.cmd('split');"
             " vim.api.nvim_win_set_buf(0, s.buf)", demo)
    assert nvim.lua(LAST) == demo
    (tmp_path / "gate").write_text("go")
    key = str(nvim.wait(SLOW_KEY, timeout=60))
    assert nvim.lua("local c = require('louise.chat'); return vim.fn.bufwinid(c.chats[...].buf)"
                    " ~= -1", key)  # the new chat is on screen, in this tab
    assert nvim.lua(LAST) == demo
    assert nvim.lua("return vim.api.nvim_get_current_buf() == require('louise.chat')"
                    ".chats[...].buf", demo)  # the cursor stayed where the person put it


# ---- the engine's answer to an earlier command never moves the cursor -----------------

# Records every chat the engine's answers opened (after opening it), in order.
SPY_ANSWERS = ("_G.louise_test_answers = {}; local c = require('louise.chat');"
               " local open = require('louise.chat.layout').open;"
               " c.open = function(key, ...) local r = open(key, ...);"
               " table.insert(_G.louise_test_answers, key); return r end")
ANSWERED = "return vim.tbl_contains(_G.louise_test_answers, ...)"
CURRENT_CHAT = ("local s = require('louise.chat').by_buf[vim.api.nvim_get_current_buf()];"
                " return s and vim.api.nvim_get_current_buf() == s.prompt and s.key")


def test_a_late_answer_for_a_chat_does_not_take_the_cursor_from_a_newer_one(
        nvim: Driver, tmp_path: Path) -> None:
    """`:LouiseChat demo` (a chat already there), then at once `:LouiseNew slow`: the
    engine's answer for the demo chat comes after the person went into the new chat's
    placeholder, and leaves them there."""
    gate = tmp_path / "gate"
    setup_slow_agent(nvim, gate)
    code_win = code_buffer(nvim, tmp_path / "work")
    nvim.nvim.command("LouiseChat demo")
    demo = str(nvim.wait("local c = require('louise.chat'); return c.last"))
    nvim.wait_status("ready", demo)
    nvim.lua("vim.api.nvim_set_current_win(...)", code_win)
    nvim.lua(SPY_ANSWERS)
    # Both in one go: the answer to the first can only come after the second.
    nvim.lua("vim.cmd('LouiseChat demo'); vim.cmd('LouiseNew slow')")
    placeholder = nvim.lua(CURRENT_CHAT)
    assert isinstance(placeholder, str) and placeholder.startswith("starting:"), placeholder
    nvim.wait(ANSWERED, demo, timeout=60)
    assert nvim.lua(CURRENT_CHAT) == placeholder  # still in the new chat's prompt
    first = nvim.lua(PLACEHOLDER)
    assert first is not None and first.startswith("… starting slow"), first
    # What the person types goes there, and stays when the session is ready.
    nvim.nvim.input("ifor slow<Esc>")
    gate.write_text("go")
    key = str(nvim.wait(SLOW_KEY, timeout=60))
    assert nvim.lua(CURRENT_CHAT) == key
    assert nvim.lua(PROMPT_LINE) == "for slow"


def test_chat_alone_still_focuses_the_chat(nvim: Driver, tmp_path: Path) -> None:
    """`:LouiseChat demo` from the code, for a chat already there: its prompt has the
    cursor, and the engine's answer leaves it there."""
    code_win = code_buffer(nvim, tmp_path / "work")
    nvim.nvim.command("LouiseChat demo")
    demo = str(nvim.wait("local c = require('louise.chat'); return c.last"))
    nvim.wait_status("ready", demo)
    nvim.lua("vim.api.nvim_set_current_win(...)", code_win)
    nvim.lua(SPY_ANSWERS)
    nvim.nvim.command("LouiseChat demo")
    nvim.wait(ANSWERED, demo, timeout=60)
    assert nvim.lua(CURRENT_CHAT) == demo


def test_an_answer_that_is_the_only_focus_still_focuses(nvim: Driver, tmp_path: Path) -> None:
    """Several agents, no chat yet: `:LouiseChat` asks which agent; the chat the engine
    then opens takes the cursor, the person having stayed where they chose."""
    gate = tmp_path / "gate"
    gate.write_text("go")
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {"
             " slow = {command = select(1, ...), args = {select(2, ...)},"
             "   env = {FAKE_START_GATE = select(3, ...)}},"
             " other = {command = select(1, ...), args = {select(2, ...)},"
             "   env = {FAKE_START_GATE = select(3, ...)}}}})",
             sys.executable, str(SLOW_AGENT), str(gate))
    code_win = code_buffer(nvim, tmp_path / "work")
    nvim.lua("vim.ui.select = function(items, opts, cb) cb('slow') end")
    nvim.nvim.command("LouiseChat")
    key = str(nvim.wait(SLOW_KEY, timeout=60))
    assert nvim.wait(CURRENT_CHAT, timeout=60) == key
    assert nvim.lua("return vim.api.nvim_get_current_win()") != code_win


def test_a_late_answer_does_not_bring_back_a_chat_closed_meanwhile(nvim: Driver,
                                                                   tmp_path: Path) -> None:
    """`:LouiseChat demo` puts the chat on screen at once; the person closes it (`:quit` in
    its prompt) before the engine's answer comes: the answer leaves the code alone on
    screen with the cursor."""
    code_win = code_buffer(nvim, tmp_path / "work")
    nvim.nvim.command("LouiseChat demo")
    demo = str(nvim.wait("local c = require('louise.chat'); return c.last"))
    nvim.wait_status("ready", demo)
    nvim.lua("vim.api.nvim_set_current_win(...)", code_win)
    nvim.lua(SPY_ANSWERS)
    nvim.lua("vim.cmd('LouiseChat demo'); vim.cmd('quit')")  # the answer can only come after
    assert nvim.lua("return vim.api.nvim_get_current_win()") == code_win
    nvim.wait(ANSWERED, demo, timeout=60)
    assert nvim.lua("return vim.api.nvim_get_current_win()") == code_win
    assert nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 1
    # And :LouiseChat brings it back.
    nvim.nvim.command("LouiseChat demo")
    assert nvim.lua(CURRENT_CHAT) == demo
