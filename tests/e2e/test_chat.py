"""End to end: a real headless Neovim, the real plugin, the real demo agent."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e


def open_chat(nvim: Driver) -> str:
    nvim.nvim.command("LouiseChat")
    key = nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    return str(key)


def test_chat_streams_the_demo_agents_reply_into_the_buffer(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("hello from e2e")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s and vim.tbl_contains(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false),"
              " '## Hello from the demo agent')")
    nvim.wait_status("ready")
    text = nvim.chat_text()
    assert "▌ You\nhello from e2e" in text
    assert "You wrote: *hello from e2e*" in text
    assert text.count("▌ plan") == 1, "the plan block is replaced in place, not repeated"
    # The buffer is the engine's: the person cannot type into the transcript by accident.
    assert nvim.lua("return vim.bo[require('louise.chat').chats[require('louise.chat').last]"
                    ".buf].modifiable") is False


def test_thoughts_are_folded(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.run_prompt("think about it")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " local win = vim.fn.win_findbuf(s.buf)[1];"
              " for i, line in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)) do"
              "   if line == '▌ thinking' then"
              "     return vim.api.nvim_win_call(win, function()"
              "       return vim.fn.foldclosed(i) end) ~= -1"
              "   end end return false")


def test_a_tool_line_updates_in_place(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait("return require('louise.permission').current ~= nil")
    lines = nvim.chat_lines()
    tool = [line for line in lines if "edit: Edit hello.py" in line]
    assert len(tool) == 1 and "pending" in tool[0]
    assert nvim.status() == "waiting_permission"
    nvim.permission_key("1")  # allow once, as a person would
    nvim.wait_status("ready")
    tool = [line for line in nvim.chat_lines() if "edit: Edit hello.py" in line]
    assert len(tool) == 1 and "completed" in tool[0], tool


def test_cancel_ends_the_turn_and_says_so(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario slow delay_ms=50")
    # Mid-stream: a few ticks are on screen.
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return table.concat(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false), '\\n')"
              ":find('tick 2', 1, true) ~= nil")
    nvim.nvim.command("LouiseCancel")
    nvim.wait_status("ready")
    assert "⊘ cancelled" in nvim.chat_text()


def test_two_sessions_and_switching(nvim: Driver) -> None:
    first = open_chat(nvim)
    nvim.run_prompt("first session")
    nvim.nvim.command("LouiseNew")
    second = nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last", first)
    nvim.wait_status("ready", second)
    nvim.prompt("second session", second)
    nvim.wait("return vim.tbl_contains(vim.api.nvim_buf_get_lines("
              "require('louise.chat').chats[...].buf, 0, -1, false), 'second session')", second)
    assert "second session" not in nvim.chat_text(first)
    assert "first session" in nvim.chat_text(first)
    nvim.lua("require('louise.engine').send('focus', {key = ...})", first)
    nvim.wait("return require('louise.chat').last == ...", first)
    assert nvim.lua("return vim.api.nvim_get_current_buf() == "
                    "require('louise.chat').chats[...].prompt", first)


def test_agent_crash_shows_the_error_and_the_next_prompt_works(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario fail crash")
    nvim.wait_status("error")
    # The exit status is known once the process is reaped, which may be a frame after the
    # turn's failure: wait for it rather than read the chat at once.
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return table.concat(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false), '\\n')"
              ":find('exit status 3', 1, true) ~= nil")
    text = nvim.chat_text()
    assert "exit status 3" in text
    assert "crashing on purpose" in text  # the agent's stderr tail
    nvim.run_prompt("back again")
    assert "You wrote: *back again*" in nvim.chat_text()


def test_typing_in_the_prompt_during_a_long_stream_keeps_every_character(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.prompt("/scenario stream chunks=10000 size=10 delay_ms=0")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status and s.status.status == 'prompting'")
    nvim.lua("local s = require('louise.chat').chats[...];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.prompt)[1])", key)
    typed = "the quick brown fox jumps over the lazy dog 0123456789"
    nvim.nvim.input("i")
    for char in typed:
        # Each key between two frames of the stream (or after it, once it is over).
        tick = nvim.lua("return vim.b[require('louise.chat').chats[...].buf].changedtick", key)
        nvim.nvim.input(char)
        nvim.wait("local s = require('louise.chat').chats[select(1, ...)];"
                  " return vim.b[s.buf].changedtick > select(2, ...)"
                  " or s.status.status ~= 'prompting'", key, tick)
    nvim.wait_status("ready", timeout=60)
    nvim.nvim.input("<Esc>")
    prompt = nvim.lua("return vim.api.nvim_buf_get_lines(require('louise.chat').chats[...].prompt,"
                      " 0, -1, false)", key)
    assert prompt == [typed]
    lines = nvim.chat_lines(key)
    assert sum(len(line) for line in lines) >= 10000 * 10 * 0.99


def test_the_python_side_dying_restarts_it_and_reattaches_the_chat(nvim: Driver) -> None:
    import os
    import signal

    key = open_chat(nvim)
    nvim.run_prompt("before the crash")
    old_pid = int(nvim.lua("return require('louise.engine').pid"))
    os.kill(old_pid, signal.SIGKILL)
    nvim.wait("local pid = require('louise.engine').pid; return pid ~= nil and pid ~= ...",
              old_pid, timeout=60)
    nvim.wait_status("ready", key, timeout=60)
    assert "before the crash" in nvim.chat_text(key)  # the history came back (session/load)
    nvim.run_prompt("after the crash", key)
    assert "You wrote: *after the crash*" in nvim.chat_text(key)


def test_a_new_chat_takes_the_chat_windows_instead_of_adding_splits(nvim: Driver) -> None:
    first = open_chat(nvim)
    windows = nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)")
    nvim.nvim.command("LouiseNew")
    second = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                           first))
    nvim.wait_status("ready", second)
    assert nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)") == windows
    assert nvim.lua("return vim.api.nvim_get_current_buf() == "
                    "require('louise.chat').chats[...].prompt", second)
    # The hidden first chat still reports its state (for the winbar's background list).
    nvim.prompt("/scenario slow delay_ms=100", first)
    nvim.wait("local c = require('louise.chat'); return c.chats[...].status.status"
              " == 'prompting'", first)
    assert "… " in nvim.lua("local c = require('louise.chat'); return c.winbar(c.chats[...],"
                            " 300)", second)
    nvim.lua("require('louise.engine').send('cancel', {key = ...})", first)
