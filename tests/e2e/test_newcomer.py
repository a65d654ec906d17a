"""Issue 16, a newcomer's first hour: the rough edges a new user meets, end to end in a real
headless Neovim with the real demo agent."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e

FRESH_LABEL = ("local l = require('louise.limits').labels.demo;"
               " return l and l[1] ~= '' and not l[1]:find('loading', 1, true) and l[1]")
CHAT_WIN = ("local c = require('louise.chat'); local s = c.chats[c.last];"
            " return s and vim.fn.win_findbuf(s.buf)[1]")
WAITING = "return require('louise.permission').current ~= nil"


def capture_notes(nvim: Driver) -> None:
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, {msg = msg, level = level}) end")


def notes(nvim: Driver) -> list[str]:
    return [str(n["msg"]) for n in nvim.lua("return _G.louise_test_notes")]


# --------------------------------------------------------------------------- 1. winbar


def test_a_narrow_winbar_keeps_the_limits_label_and_turn_state(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.run_prompt("hello")
    label = str(nvim.wait(FRESH_LABEL))
    nvim.nvim.command("LouiseRename a rather long name for this review session")
    nvim.wait("local c = require('louise.chat'); return c.chats[c.last].status.title ~= nil")
    win = int(nvim.lua(CHAT_WIN))
    # Just room for the turn state and the label: the name and the agent go first.
    width = len("● ready · ") + len(label) + 6
    nvim.lua("vim.api.nvim_win_set_width(select(1, ...), select(2, ...))", win, width)
    bar = str(nvim.wait("local w = ...; local bar = vim.wo[w].winbar;"
                        " return vim.api.nvim_win_get_width(w) == select(2, ...) and"
                        " vim.api.nvim_eval_statusline(bar, {winid = w, use_winbar = true}).str",
                        win, width))
    assert "ready" in bar
    assert label in bar, bar
    assert "rather long name" not in bar


# --------------------------------------------------------------------------- 2. setup{}


def test_setup_reports_every_bad_option_with_its_path_and_the_chat_still_opens(
    nvim: Driver,
) -> None:
    capture_notes(nvim)
    ok = nvim.lua("return require('louise').setup{ python = vim.env.LOUISE_PYTHON,"
                  " width = 'wide', keymaps = 'yes', fold_thoughts = 1, alerts = 'loud',"
                  " prompt_height = -3, widht = 90 }")
    assert ok is False
    said = "\n".join(notes(nvim))
    for path in ("width:", "keymaps:", "fold_thoughts:", "alerts:", "prompt_height:"):
        assert f"setup{{}}: {path}" in said, (path, said)
    assert "widht: unknown option" in said and "did you mean 'width'" in said
    # The defaults stand in for the bad values: the chat opens and works.
    open_chat(nvim)
    nvim.run_prompt("still works")
    assert "You wrote: *still works*" in nvim.chat_text()
    prompt_win = nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
                          " return vim.fn.win_findbuf(s.prompt)[1]")
    assert nvim.lua("return vim.api.nvim_win_get_height(...)", prompt_win) == 6
