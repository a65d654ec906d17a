"""Issue 23 item 14: what went wrong is said once. An agent's error answer to a prompt is in
the chat; a chat on screen is not echoed by a notification as well."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "cli_agent.py"


def test_an_agent_error_in_a_shown_chat_is_not_notified_again(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {fake ="
             " {command = select(1, ...), args = {select(2, ...)}}}})", sys.executable,
             str(FAKE))
    nvim.nvim.command("LouiseChat fake")
    nvim.wait_status("ready")
    nvim.prompt("error")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return table.concat(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false), '\\n')"
              ":find('the model backend answered 529', 1, true) ~= nil")
    # A later turn's reply: by then anything the failed turn would have said is out.
    nvim.run_prompt("hello")
    assert nvim.chat_text().count("the model backend answered 529") == 1, nvim.chat_text()
    messages = str(nvim.nvim.command_output("messages"))
    assert "the model backend answered 529" not in messages, messages


def test_a_remembered_always_reject_says_why_the_tool_failed(nvim: Driver) -> None:
    from tests.e2e.test_chat import open_chat
    from tests.e2e.test_permissions import WAITING, turn_done

    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    nvim.permission_key("4")  # always reject
    turn_done(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == 2")
    text = nvim.chat_text()
    assert not nvim.lua(WAITING)  # nobody was asked the second time
    tail = text[text.rindex("▌ You"):]
    assert "Edit hello.py: refused: you chose to always reject this earlier" in tail, text
    assert ":LouisePermissions" in tail, tail


HINT = ("local c = require('louise.chat'); local s = c.chats[...];"
        " local ns = vim.api.nvim_create_namespace('louise_empty_hint');"
        " local marks = vim.api.nvim_buf_get_extmarks(s.buf, ns, 0, -1, {details = true});"
        " return marks[1] and marks[1][4].virt_text[1][1] or ''")


def test_a_new_empty_chat_says_what_to_do_until_its_first_turn(nvim: Driver) -> None:
    """Issue 23: :LouiseNew opened a blank transcript with no hint."""
    nvim.nvim.command("LouiseNew")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    hint = str(nvim.lua(HINT, key))
    assert "A new session with demo: write in the prompt below" in hint, hint
    assert nvim.chat_lines(key) == [""]  # virtual text: nothing in the buffer itself
    nvim.run_prompt("hello", key)
    assert nvim.lua(HINT, key) == ""


def test_enter_on_a_line_that_points_nowhere_goes_to_the_prompt(nvim: Driver) -> None:
    """Issue 23: <CR> on a transcript line other than a tool line did nothing."""
    from tests.e2e.test_chat import open_chat

    key = open_chat(nvim)
    nvim.run_prompt("hello", key)
    nvim.lua("local s = require('louise.chat').chats[...];"
             " local win = vim.fn.win_findbuf(s.buf)[1]; vim.api.nvim_set_current_win(win);"
             " vim.api.nvim_win_set_cursor(win, {2, 0})", key)  # "▌ You"
    nvim.nvim.input("<CR>")
    nvim.wait("local s = require('louise.chat').chats[...];"
              " return vim.api.nvim_get_current_buf() == s.prompt", key)
    assert nvim.lua("return vim.api.nvim_get_mode().mode") == "n"


def test_resume_of_one_agent_not_running_says_it_is_starting_it(nvim: Driver) -> None:
    """Issue 23: :LouiseResume showed nothing while it started the agent."""
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end;"
             " vim.ui.select = function(items, opts, cb) cb(nil) end")
    nvim.nvim.command("LouiseResume demo")
    note = str(nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
                         " if m:find('starting demo', 1, true) then return m end end"))
    assert note == "louise: … starting demo to list its sessions", note
