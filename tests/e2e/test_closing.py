"""Issue 17 item 6 (and issue 16's `:qa`): closing safely. :LouiseClose asks before it ends a
session that works or waits for a permission; quitting Neovim refuses while a session
works, a permission waits or a prompt is unsent, as for a modified buffer."""

from __future__ import annotations

import pynvim
import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e

WAITING = "return require('louise.permission').current ~= nil"


def stub_select(nvim: Driver, answer: str) -> None:
    nvim.lua("local want = ...; _G.louise_test_selects = {};"
             " vim.ui.select = function(items, opts, cb)"
             " table.insert(_G.louise_test_selects, opts.prompt);"
             " for _, item in ipairs(items) do if item == want then return cb(item) end"
             " end; cb(nil) end", answer)


def capture_notes(nvim: Driver) -> None:
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end")


def refused_quit(nvim: Driver) -> str:
    with pytest.raises(pynvim.NvimError) as refused:
        nvim.nvim.command("qa")
    assert nvim.lua("return 1") == 1, "Neovim is still there"
    return str(refused.value)


def test_louiseclose_asks_before_closing_a_working_session(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.prompt("/scenario slow delay_ms=200")
    nvim.wait_status("prompting")
    stub_select(nvim, "Keep it")
    nvim.nvim.command("LouiseClose")
    prompts = nvim.lua("return _G.louise_test_selects")
    assert prompts and "is working; close it?" in prompts[0], prompts
    assert nvim.lua("return require('louise.chat').chats[...] ~= nil", key)
    assert nvim.status(key) in ("prompting", "ready")
    stub_select(nvim, "Close it")
    nvim.nvim.command("LouiseClose")
    nvim.wait("return require('louise.chat').chats[...] == nil", key)


def test_louiseclose_asks_while_a_permission_waits_and_bang_does_not(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    stub_select(nvim, "Keep it")
    nvim.lua("local c = require('louise.chat'); vim.api.nvim_set_current_win("
             "vim.fn.win_findbuf(c.chats[...].prompt)[1])", key)
    nvim.nvim.command("LouiseClose")
    assert "waiting for your permission" in nvim.lua("return _G.louise_test_selects[1]")
    assert nvim.lua(WAITING)
    nvim.nvim.command("LouiseClose!")
    nvim.wait("return require('louise.chat').chats[...] == nil", key)
    nvim.wait("return require('louise.permission').current == nil")  # closing answered it
    assert nvim.lua("return vim.uv.fs_stat(vim.fn.getcwd() .. '/hello.py') == nil")


def test_quitting_refuses_while_a_session_works_or_waits(nvim: Driver) -> None:
    capture_notes(nvim)
    open_chat(nvim)
    nvim.prompt("/scenario slow delay_ms=300")
    nvim.wait_status("prompting")
    error = refused_quit(nvim)  # not typed (another client): Neovim's own refusal
    assert "E162" in error or "E37" in error, error
    nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
              " if m:find('louise: demo 1 is still working — :LouiseCancel, or :qa! to quit',"
              " 1, true) then return true end end")
    # The mark that refused it (on the prompt: the transcript is 'nofile') was for that
    # moment only, and the transcript never was modified.
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return not vim.bo[s.prompt].modified and not vim.bo[s.buf].modified"
              " and next(require('louise.chat.lifecycle').quit_marks) == nil")
    nvim.nvim.command("LouiseCancel")
    nvim.wait_status("ready")
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    refused_quit(nvim)
    nvim.permission_key("q")
    nvim.wait_status("ready")
    # Idle, nothing unsent: nothing holds quitting any more.
    assert nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
                    " return vim.bo[s.buf].modified or vim.bo[s.prompt].modified") is False


def test_quitting_refuses_while_a_prompt_is_unsent(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.lua("local s = require('louise.chat').chats[...];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.prompt)[1])", key)
    nvim.nvim.input("ihalf a thought<Esc>")
    nvim.wait("return vim.bo[require('louise.chat').chats[...].prompt].modified", key)
    refused_quit(nvim)
    nvim.nvim.input("<CR>")  # sent: nothing is lost by quitting now
    nvim.wait("local s = require('louise.chat').chats[...]; return not vim.bo[s.prompt].modified"
              " and vim.tbl_contains(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false),"
              " 'half a thought')", key)


def test_a_typed_quit_during_a_turn_is_refused_in_words_and_nothing_is_modified(
        nvim: Driver) -> None:
    """Issue 23 item 9: `:qa` typed while a turn runs is refused with one louise message,
    no E37/E162 naming `louise://…`, no window changed, and the transcript never shows
    `[+]`."""
    capture_notes(nvim)
    key = open_chat(nvim)
    nvim.prompt("/scenario slow delay_ms=100 chunks=300")
    nvim.wait_status("prompting")
    nvim.lua("_G.louise_test_notes = {}")
    code = int(nvim.lua("vim.cmd('wincmd t'); return vim.api.nvim_get_current_win()"))
    assert nvim.lua("local s = require('louise.chat').chats[...]; return vim.bo[s.buf].modified",
                    key) is False
    for typed in (":qa<CR>", ":quitall<CR>", ":wqa<CR>", ":xa<CR>"):
        nvim.nvim.input(typed)
        nvim.wait("return vim.api.nvim_get_mode().mode == 'n' and #_G.louise_test_notes > 0")
        assert nvim.lua("return 1") == 1, "Neovim is still there"
        note = nvim.lua("return table.remove(_G.louise_test_notes, 1)")
        assert note == ("louise: demo 1 is still working — :LouiseCancel, or :qa! to quit"), note
        assert nvim.lua("return vim.v.errmsg") == "", nvim.lua("return vim.v.errmsg")
        assert nvim.lua("return vim.api.nvim_get_current_win()") == code
        assert nvim.lua("local s = require('louise.chat').chats[...];"
                        " return vim.bo[s.buf].modified", key) is False
    assert nvim.status(key) == "prompting"
    nvim.nvim.command("LouiseCancel")
    nvim.wait_status("ready")


def test_a_write_typed_in_a_transcript_is_answered_in_words_and_writes_nothing(
        nvim: Driver) -> None:
    """The transcript is 'nofile' (never modified, no flag flipped per frame): `:w` in it
    gets louise's words, not E382, and `:wa` passes it by."""
    capture_notes(nvim)
    key = open_chat(nvim)
    nvim.run_prompt("hello", key)  # a turn: its frames edited the transcript
    nvim.lua("local s = require('louise.chat').chats[...];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.buf)[1])", key)
    nvim.lua("_G.louise_test_notes = {}")
    nvim.nvim.input(":w<CR>")
    nvim.wait("return vim.api.nvim_get_mode().mode == 'n' and #_G.louise_test_notes > 0")
    assert nvim.lua("return _G.louise_test_notes[1]") == (
        "louise: a transcript is not a file; :LouiseExport [path] saves it")
    assert nvim.lua("return vim.v.errmsg") == "", nvim.lua("return vim.v.errmsg")
    nvim.nvim.command("wall")  # passes the transcript by, says nothing
    assert nvim.lua("local s = require('louise.chat').chats[...];"
                    " return {vim.bo[s.buf].buftype, vim.bo[s.buf].modified}", key) == [
        "nofile", False]
    assert nvim.lua("return #vim.fn.glob(vim.fn.getcwd() .. '/louise:*', false, true)") == 0


LONE_WINDOW = ("local wins = vim.tbl_filter(function(w)"
               " return vim.api.nvim_win_get_config(w).relative == '' end,"
               " vim.api.nvim_tabpage_list_wins(0));"
               " if #wins ~= 1 then return nil end; local b = vim.api.nvim_win_get_buf(wins[1]);"
               " return {name = vim.api.nvim_buf_get_name(b), modified = vim.bo[b].modified,"
               " lines = vim.api.nvim_buf_get_lines(b, 0, -1, false),"
               " marks = vim.api.nvim_buf_get_extmarks(b, -1, 0, -1, {details = true}),"
               " mode = vim.api.nvim_get_mode().mode}")


def test_the_last_close_leaves_a_hint_not_a_bare_empty_window(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.nvim.command("LouiseClose")
    nvim.wait("return require('louise.chat').chats[...] == nil", key)
    lone = nvim.wait(LONE_WINDOW)
    assert lone["name"] == "" and lone["lines"] == [""] and not lone["modified"]
    assert lone["mode"] == "n"  # no message waiting for Enter
    hints = [chunk[0] for mark in lone["marks"] for chunk in mark[3].get("virt_text", [])]
    assert hints == ["louise: chat closed · :LouiseChat opens one, "
                     ":LouiseResume brings one back"]
    nvim.nvim.input("ihello<Esc>")  # the first edit takes the hint away
    nvim.wait("local b = vim.api.nvim_get_current_buf(); return #vim.api.nvim_buf_get_extmarks("
              "b, -1, 0, -1, {}) == 0 and vim.api.nvim_get_current_line() == 'hello'")


def test_the_last_close_goes_back_to_the_file_the_person_had(nvim: Driver) -> None:
    nvim.nvim.command("edit README.md")
    nvim.nvim.command("enew")
    key = open_chat(nvim)
    nvim.nvim.command("LouiseClose")
    nvim.wait("return require('louise.chat').chats[...] == nil", key)
    lone = nvim.wait(LONE_WINDOW)
    assert lone["name"].endswith("README.md") and lone["lines"] == ["# e2e workspace"]
    assert lone["marks"] == []
