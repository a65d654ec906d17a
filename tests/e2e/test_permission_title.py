"""Issue 23 item 14: the permission float's title says who asks (it said only "louise"),
fitted to the float's border however narrow the screen or long the session's name."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e

WAITING = "return require('louise.permission').current ~= nil"
# The float's title as Neovim draws it in the border, and the room the border has.
TITLE = ("local w = require('louise.permission').win; vim.cmd('redraw');"
         " local title = vim.api.nvim_win_get_config(w).title or {};"
         " local text = table.concat(vim.tbl_map(function(c) return c[1] end, title));"
         " return {text, vim.api.nvim_win_get_width(w)}")
TOP_BORDER = ("local w = require('louise.permission').win; vim.cmd('redraw');"
              " local at = vim.fn.screenpos(w, 1, 1); local s = {};"
              " for c = at.col - 1, at.col + vim.api.nvim_win_get_width(w) do"
              " s[#s + 1] = vim.fn.screenstring(at.row - 1, c) end; return table.concat(s)")


def width_of(nvim: Driver, text: str) -> int:
    return int(nvim.lua("return vim.fn.strdisplaywidth(...)", text))


def title(nvim: Driver) -> tuple[str, int]:
    text, width = nvim.lua(TITLE)
    return str(text), int(width)


def test_the_float_says_which_chat_asks(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    text, _ = title(nvim)
    assert text == " louise · demo 1 asks ", text
    assert "louise · demo 1 asks" in nvim.lua(TOP_BORDER)  # as drawn on the border


def test_a_named_chat_is_named_and_the_name_cut_to_the_border(nvim: Driver) -> None:
    nvim.lua("vim.o.columns = 80; vim.o.lines = 24; vim.o.cmdheight = 1")
    open_chat(nvim)
    name = "refactor the parser so that it reads every file of the repository at once"
    nvim.nvim.command("LouiseRename " + name)
    nvim.wait("local c = require('louise.chat'); return c.chats[c.last].status.title == ...",
              name)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    text, width = title(nvim)
    assert text.startswith(" louise · demo 1 asks · refactor the parser"), text
    assert text.endswith("… "), text
    assert width_of(nvim, text) <= width - 2, (text, width)
    shown = nvim.lua(TOP_BORDER)
    assert text.strip() in shown, shown


def test_on_a_narrow_screen_the_title_still_fits(nvim: Driver) -> None:
    nvim.lua("vim.o.columns = 30; vim.o.lines = 24")
    request = {
        "id": 9, "agent": "claude-with-a-long-configured-name", "kind": "execute",
        "position": 1, "total": 1, "title": "Run the tests",
        "command": "pytest -q", "paths": [], "diff": [], "diffs": [],
        "options": [{"id": "a", "name": "Allow once", "kind": "allow_once"},
                    {"id": "r", "name": "Reject", "kind": "reject_once"}],
    }
    nvim.lua("require('louise.permission').show(vim.json.decode(...))", json.dumps(request))
    text, width = title(nvim)
    assert text.startswith(" claude-with") and text.endswith("… asks "), text  # no chat of it
    assert width_of(nvim, text) <= width - 2, (text, width)
    nvim.lua("vim.o.columns = 80")
    nvim.lua("require('louise.permission').render(false)")
    text, width = title(nvim)
    assert text == " louise · claude-with-a-long-configured-name asks ", text
