"""Issue 17 item 7: the winbar can show idle background sessions too
(`winbar = { others = 'all' }`), collapsing to counts, a count opening the picker."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e

BAR = ("local c = require('louise.chat'); local s = c.chats[select(1, ...)];"
       " local w = vim.fn.win_findbuf(s.buf)[1]; vim.api.nvim_win_set_width(w, select(2, ...));"
       " c.refresh_winbar(s); return vim.wo[w].winbar")


def three_sessions(nvim: Driver) -> list[str]:
    keys: list[str] = []
    for command in ("LouiseChat", "LouiseNew", "LouiseNew"):
        nvim.nvim.command(command)
        key = str(nvim.wait("local c = require('louise.chat'); local seen = {...};"
                            " return not vim.tbl_contains(seen, c.last) and c.last", *keys))
        nvim.wait_status("ready", key)
        keys.append(key)
    return keys


def test_idle_background_sessions_show_and_collapse_to_a_count_that_opens_the_picker(
    nvim: Driver,
) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON,"
             " winbar = {others = 'all'}})")
    nvim.nvim.command("set columns=200")
    first, _, third = three_sessions(nvim)
    nvim.lua("local c = require('louise.chat'); vim.api.nvim_buf_call(c.chats[...].buf,"
             " function() vim.cmd('LouiseRename the first one') end)", first)
    nvim.wait("local c = require('louise.chat');"
              " return type(c.chats[...].status.title) == 'string'", first)
    wide = str(nvim.lua(BAR, third, 150))
    assert "· the first one" in wide and "· demo 2" in wide, wide
    narrow = str(nvim.lua(BAR, third, 60))
    assert "the first one" not in narrow
    assert "%@v:lua.__louise_switch_click@·2%X" in narrow, narrow
    nvim.lua("_G.louise_test_selects = {}; vim.ui.select = function(items, opts, cb)"
             " table.insert(_G.louise_test_selects, {prompt = opts.prompt, n = #items}) end")
    nvim.lua("_G.__louise_switch_click()")
    nvim.wait("return #_G.louise_test_selects > 0")
    assert nvim.lua("return _G.louise_test_selects[1]") == {"prompt": "louise: switch to", "n": 3}


def test_by_default_idle_background_sessions_stay_out_of_the_winbar(nvim: Driver) -> None:
    _, _, third = three_sessions(nvim)
    bar = str(nvim.lua(BAR, third, 150))
    assert "demo 1" not in bar and "demo 2" not in bar, bar
