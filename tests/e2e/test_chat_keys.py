"""Issue 23 item 7: a chat's keys follow Vim's habits."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e


def to_prompt(nvim: Driver, key: str) -> None:
    nvim.lua("local s = require('louise.chat').chats[...];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.prompt)[1])", key)


def to_transcript(nvim: Driver, key: str) -> None:
    nvim.lua("local s = require('louise.chat').chats[...];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.buf)[1])", key)


def mapped(nvim: Driver, mode: str, lhs: str) -> str:
    """The buffer's own mapping of `lhs` (Neovim's global defaults aside), or ''."""
    return str(nvim.lua("local m = vim.fn.maparg(select(2, ...), select(1, ...), false, true);"
                        " return m.buffer == 1 and (m.desc or m.rhs or 'mapped') or ''",
                        mode, lhs))


def test_ctrl_c_with_no_turn_running_leaves_insert_mode(nvim: Driver) -> None:
    key = open_chat(nvim)
    to_prompt(nvim, key)
    nvim.nvim.input("ihalf a thought<C-c>")
    nvim.wait("return vim.api.nvim_get_mode().mode == 'n'")
    assert nvim.lua("return vim.api.nvim_get_current_line()") == "half a thought"
    assert nvim.status(key) == "ready"
    assert "cancel" not in nvim.chat_text(key)
    # With a turn running, <C-c> cancels it (in Insert mode too).
    nvim.prompt("/scenario slow delay_ms=300", key)
    nvim.wait_status("prompting", key)
    nvim.nvim.input("A<C-c>")
    nvim.wait_status("ready", key)
    assert "⊘ cancelled" in nvim.chat_text(key)


def test_no_default_on_tab_or_ctrl_s_and_their_replacements_work(nvim: Driver) -> None:
    key = open_chat(nvim)
    to_prompt(nvim, key)
    assert mapped(nvim, "i", "<C-s>") == "", "XOFF freezes terminals"
    assert mapped(nvim, "n", "<C-s>") == ""
    nvim.nvim.input("isent with alt-enter<M-CR>")
    nvim.wait("local s = require('louise.chat').chats[...];"
              " return vim.tbl_contains(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false),"
              " 'sent with alt-enter')", key)
    nvim.wait_status("ready", key)
    to_transcript(nvim, key)
    assert mapped(nvim, "n", "<Tab>") == "", "<Tab> is <C-i>, the jumplist forward"
    assert "louise" in str(nvim.lua("return vim.fn.maparg('za', 'n', false, true).desc"))


def test_a_key_the_person_mapped_in_the_prompt_is_kept(nvim: Driver) -> None:
    # A LouiseLM habit kept by a config of one's own: <C-s> sends.
    nvim.lua("vim.api.nvim_create_autocmd('FileType', {pattern = 'louise_prompt',"
             " callback = function(ev) vim.keymap.set({'i', 'n'}, '<C-s>',"
             " require('louise.chat').send, {buffer = ev.buf})"
             " vim.keymap.set('n', 'g?', '<cmd>let g:mine = 1<cr>', {buffer = ev.buf}) end})")
    key = open_chat(nvim)
    to_prompt(nvim, key)
    nvim.nvim.input("isent with my own key<C-s>")
    nvim.wait("local s = require('louise.chat').chats[...];"
              " return vim.tbl_contains(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false),"
              " 'sent with my own key')", key)
    nvim.nvim.input("<Esc>g?")
    nvim.wait("return vim.g.mine == 1")


def test_g_question_mark_shows_the_chats_keys_and_q_closes_them(nvim: Driver) -> None:
    key = open_chat(nvim)
    to_transcript(nvim, key)
    assert mapped(nvim, "n", "?") == "", "? stays Vim's search backward"
    nvim.nvim.input("g?")
    nvim.wait("return vim.bo.filetype == 'louise_keys'")
    text = "\n".join(nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))
    for expected in ("<M-CR>", "<C-c>", "]] [[", "za", "g?"):
        assert expected in text, text
    assert nvim.lua("return vim.api.nvim_win_get_config(0).relative") == "editor"
    nvim.nvim.input("q")
    nvim.wait("return vim.bo.filetype ~= 'louise_keys'")
    nvim.nvim.input("g?")
    nvim.wait("return vim.bo.filetype == 'louise_keys'")
    nvim.nvim.input("<Esc>")
    nvim.wait("return vim.bo.filetype == 'louise'")


def test_brackets_jump_between_messages(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.run_prompt("first question", key)
    nvim.run_prompt("second question", key)
    lines = nvim.chat_lines(key)
    you = [i + 1 for i, line in enumerate(lines) if line == "▌ You"]
    replies = [i + 1 for i, line in enumerate(lines) if line == "▌ demo"]
    assert len(you) == 2 and len(replies) == 2, lines
    to_transcript(nvim, key)
    nvim.lua("vim.api.nvim_win_set_cursor(0, {1, 0})")
    rows = []
    for _ in range(4):
        nvim.nvim.input("]]")
        rows.append(nvim.wait("return vim.api.nvim_win_get_cursor(0)[1]"))
    assert rows == sorted(you + replies), (rows, you, replies)  # on each heading
    nvim.nvim.input("]]")  # past the last message: it stays
    assert nvim.lua("return vim.api.nvim_win_get_cursor(0)[1]") == rows[-1]
    nvim.nvim.input("[[")
    assert nvim.lua("return vim.api.nvim_win_get_cursor(0)[1]") == rows[-2]
    nvim.nvim.input("2[[")
    assert nvim.lua("return vim.api.nvim_win_get_cursor(0)[1]") == rows[0]
    nvim.nvim.input("<C-o>")  # the jumplist remembers where it was
    assert nvim.lua("return vim.api.nvim_win_get_cursor(0)[1]") == rows[-2]
