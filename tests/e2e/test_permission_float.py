"""Issue 23 items 6 and 7: the permission float fits an 80x24 screen once its lines wrap,
its diff is coloured, its diff tab fits 80 columns and its tab reads as words, and <Esc>
hides it while the request keeps waiting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e

WAITING = ("local p = require('louise.permission'); return p.current ~= nil"
           " and p.win ~= nil and vim.api.nvim_win_is_valid(p.win)")  # asked, and on screen


def small_screen(nvim: Driver) -> None:
    nvim.lua("vim.o.columns = 80; vim.o.lines = 24; vim.o.cmdheight = 1")


def screen(nvim: Driver) -> list[str]:
    """The screen as drawn (floats included), one string per row."""
    return list(nvim.lua(
        "vim.cmd('redraw'); local out = {}; for r = 1, vim.o.lines do local s = {};"
        " for c = 1, vim.o.columns do s[#s + 1] = vim.fn.screenstring(r, c) end;"
        " out[#out + 1] = table.concat(s) end; return out"))


def float_rows(nvim: Driver) -> list[str]:
    """The rows of the screen the permission float covers, inside its border."""
    nvim.lua("vim.cmd('redraw')")  # what the last frame drew, before reading the screen
    rows = screen(nvim)
    pos = nvim.lua("local w = require('louise.permission').win;"
                   " vim.cmd('redraw');"
                   " local at = vim.fn.screenpos(w, 1, 1);"
                   " return {at.row - 1, at.col - 1, vim.api.nvim_win_get_height(w),"
                   " vim.api.nvim_win_get_width(w)}")
    row, col, height, width = (int(v) for v in pos)
    return [rows[r][col:col + width] for r in range(row, row + height)]


def test_at_80x24_a_multi_file_edit_keeps_its_header_and_keys(nvim: Driver) -> None:
    small_screen(nvim)
    open_chat(nvim)
    nvim.prompt("/scenario multi_edit")
    nvim.wait(WAITING)
    shown = "\n".join(float_rows(nvim))
    assert "Permission 1 of 1 · demo" in shown, shown
    assert "edit: Edit 3 files" in shown, shown
    for option in ("1  ✓ Allow once", "4  ✗✗ Always reject"):
        assert option in shown, shown
    assert "d diff · q refuse" in shown, shown
    assert "d diff · q refuse · <Esc> hide" in shown, shown
    # The preview's lines do not wrap: a cut one says so.
    assert nvim.lua("local p = require('louise.permission');"
                    " return vim.api.nvim_win_text_height(p.win, {}).all"
                    " <= vim.api.nvim_win_get_height(p.win)")


def test_long_wrapping_lines_never_push_out_the_header_or_the_keys(nvim: Driver) -> None:
    small_screen(nvim)
    long = "x" * 150
    request = {
        "id": 7, "agent": "demo", "kind": "execute", "position": 1, "total": 1,
        "title": "\n".join(f"step {n} {long}" for n in range(6)),
        "command": "\n".join(f"echo {n} {long}" for n in range(8)),
        "paths": [f"/tmp/{n}/{long}" for n in range(5)],
        "options": [{"id": "a", "name": "Allow once", "kind": "allow_once"},
                    {"id": "r", "name": "Reject", "kind": "reject_once"}],
        "diff": [f"    +added {n} {long}" for n in range(30)],
        "diffs": [],
    }
    nvim.lua("require('louise.permission').show(vim.json.decode(...))", json.dumps(request))
    rows = float_rows(nvim)
    assert rows[0].startswith("Permission 1 of 1 · demo"), rows
    assert rows[-1].strip() == "q refuse · <Esc> hide", rows
    assert any("1  ✓ Allow once" in row for row in rows), rows
    assert any("2  ✗ Reject" in row for row in rows), rows
    assert any(row.startswith("execute: step 0") for row in rows), rows
    assert any(row.startswith("  $ echo 0") for row in rows), rows
    nvim.lua("require('louise.permission').hide()")
    # Wrapping of the person's own, which a new float inherits from their window.
    nvim.nvim.command("set nowrap linebreak showbreak=>>>\\ ")
    nvim.lua("require('louise.permission').render(true)")
    rows = float_rows(nvim)
    assert rows[0].startswith("Permission 1 of 1 · demo"), rows
    assert rows[-1].strip() == "q refuse · <Esc> hide", rows


def test_the_floats_diff_is_coloured(nvim: Driver) -> None:
    nvim.lua("vim.o.lines = 60")  # room for the whole preview
    open_chat(nvim)
    nvim.prompt("/scenario multi_edit")
    nvim.wait(WAITING)
    marks = nvim.lua(
        "local p = require('louise.permission'); local out = {};"
        " for _, m in ipairs(vim.api.nvim_buf_get_extmarks(p.buf, -1, 0, -1,"
        " {details = true})) do if m[4].hl_group then"
        " out[vim.api.nvim_buf_get_lines(p.buf, m[2], m[2] + 1, false)[1]] = m[4].hl_group"
        " end end; return out")
    assert marks.get("    -greet()") == "LouiseReviewDelete", marks
    assert marks.get('    +greet("louise")') == "LouiseReviewAdd", marks
    assert marks.get("    @@ -1,3 +1,3 @@") == "LouiseReviewHunk", marks
    assert "     from greet import greet" not in marks, "context lines keep the float's colour"
    # Drawn so: the removed line's cells have another attribute than the context line's.
    attrs = nvim.lua(
        "vim.cmd('redraw'); local p = require('louise.permission'); local out = {};"
        " for i, l in ipairs(vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)) do"
        " local at = vim.fn.screenpos(p.win, i, 7);"
        " out[l] = vim.fn.screenattr(at.row, at.col) end; return out")
    assert attrs["    -greet()"] != attrs["     from greet import greet"]


def test_the_diff_tab_fits_80_columns_and_its_tabs_read_as_words(nvim: Driver) -> None:
    small_screen(nvim)
    open_chat(nvim)
    nvim.prompt("/scenario multi_edit")
    nvim.wait(WAITING)
    nvim.permission_key("d")
    nvim.wait("return vim.wo.diff == true")
    for _ in range(3):
        bars = nvim.lua(
            "local out = {}; for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
            " local s = vim.api.nvim_eval_statusline(vim.wo[w].winbar, {winid = w,"
            " use_winbar = true}); out[#out + 1] = {s.str, s.width,"
            " vim.api.nvim_win_get_width(w)} end; return out")
        for text, width, room in bars:
            assert width <= room, (text, width, room)  # never cut by Neovim
        current, proposed = bars[0][0], bars[1][0]
        assert "/3 " in current and current.rstrip().endswith(" · ]f [f"), current
        assert "proposed · 1-4 answer · q back" in proposed, proposed
        nvim.nvim.input("]f")
        nvim.wait("return vim.wo.diff == true")
    tabs = nvim.lua("return vim.api.nvim_eval_statusline(vim.o.tabline ~= '' and vim.o.tabline"
                    " or ' ', {use_tabline = true}).str")
    assert "louise: edit 3 files" in tabs and "louise: demo 1" in tabs, tabs
    assert "l//" not in tabs, tabs
    nvim.nvim.input("q")  # back to the float; the tab and its labels go
    nvim.wait("local p = require('louise.permission'); return p.win ~= nil and"
              " vim.api.nvim_get_current_win() == p.win")
    assert nvim.lua("return vim.o.tabline") == "", "the person's default tabline is back"


def test_esc_hides_the_float_and_the_request_keeps_waiting(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    nvim.permission_key("<Esc>")
    nvim.wait("return require('louise.permission').win == nil")
    assert nvim.status() == "waiting_permission", "<Esc> answers nothing"
    assert nvim.lua("return require('louise.permission').current ~= nil")
    assert "waiting for permission" in nvim.lua(
        "local c = require('louise.chat'); return c.winbar(c.chats[c.last], 200)")
    assert "permission waiting (:LouisePermission)" in nvim.lua(
        "return require('louise').statusline({plain = true})")
    # The engine's next frames (the queue count, a resync) leave it hidden.
    nvim.lua("local p = require('louise.permission'); p.set_queue(1); p.show(p.current)")
    assert nvim.lua("return require('louise.permission').win") is None
    nvim.nvim.command("LouisePermission")
    nvim.wait("local p = require('louise.permission'); return p.win ~= nil and"
              " vim.api.nvim_get_current_win() == p.win")
    assert "permission waiting" not in nvim.lua(
        "return require('louise').statusline({plain = true})")
    nvim.permission_key("q")  # refusing is its own key
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    assert not (Path(str(nvim.lua("return vim.fn.getcwd()"))) / "hello.py").exists()


def test_the_demos_first_edit_changes_a_file_of_its_workspace(nvim: Driver) -> None:
    """The workspace `python3 dev.py run` prepares has the file `/scenario edit` changes:
    the float shows a change of it, not a new file."""
    from tests.unit.test_nvim_dev_py import ROOT, load_dev

    work = Path(str(nvim.lua("return vim.fn.getcwd()")))
    load_dev(ROOT).seed_demo_workspace(work)
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    change = nvim.lua("return require('louise.permission').current.diffs[1]")
    assert change["mode"] == "edit" and change["whole"] is True, change
    preview = nvim.lua("local p = require('louise.permission');"
                       " return vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)")
    assert "    -def greet():" in preview, preview
    nvim.permission_key("1")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    assert "def greet(name: str) -> None:" in (work / "hello.py").read_text()
