"""End to end (issue 23, item 4) at 80×24: the chat is one unit (closing its transcript or
its prompt closes both; the prompt keeps its height when another window closes),
:LouiseToggle hides and shows it, the windows louise opens beside it are at least 40
columns wide, and setup{ layout, width, height } places it."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.ui_screen import Screen, ui_nvim_fixture  # noqa: F401 (the fixture)

pytestmark = pytest.mark.e2e

# Every window of the tab: {buffer's filetype, width, height, row, col, float}.
WINDOWS = ("local out = {}; for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
           " local b = vim.api.nvim_win_get_buf(w); local p = vim.api.nvim_win_get_position(w);"
           " table.insert(out, {ft = vim.bo[b].filetype, name = vim.api.nvim_buf_get_name(b),"
           "   width = vim.api.nvim_win_get_width(w), height = vim.api.nvim_win_get_height(w),"
           "   row = p[1], col = p[2],"
           "   float = vim.api.nvim_win_get_config(w).relative ~= ''}) end; return out")


def windows(nvim: Driver) -> list[dict[str, object]]:
    return list(nvim.lua(WINDOWS))


def of(nvim: Driver, ft: str) -> list[dict[str, object]]:
    return [w for w in windows(nvim) if w["ft"] == ft]


def open_demo(nvim: Driver, setup: str = "") -> str:
    if setup:
        nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, " + setup + "})")
    nvim.nvim.command("LouiseChat demo")
    key = str(nvim.wait("return require('louise.chat').last", timeout=60))
    nvim.wait_status("ready", key, timeout=60)
    return key


def test_closing_the_transcript_or_the_prompt_closes_the_chat(
        ui_nvim: tuple[Driver, Screen]) -> None:
    nvim, screen = ui_nvim
    open_demo(nvim)
    assert len(of(nvim, "louise")) == 1 and len(of(nvim, "louise_prompt")) == 1
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf("
             "require('louise.chat').chats[require('louise.chat').last].buf)[1])")
    nvim.nvim.command("quit")
    nvim.wait("return #vim.api.nvim_tabpage_list_wins(0) == 1")
    assert of(nvim, "louise_prompt") == [], windows(nvim)  # not left alone at 22 lines
    nvim.nvim.command("LouiseChat")
    nvim.wait("return #vim.api.nvim_tabpage_list_wins(0) == 3")
    nvim.nvim.command("quit")  # in the prompt, where :LouiseChat put the cursor
    nvim.wait("return #vim.api.nvim_tabpage_list_wins(0) == 1")
    assert of(nvim, "louise") == [], windows(nvim)
    assert screen.hit_enter == 0, screen.hit_enter_screens


def test_a_window_closing_under_the_chat_leaves_the_prompt_its_height(
        ui_nvim: tuple[Driver, Screen]) -> None:
    """As a tool's terminal did: a full-width split under everything, then closed."""
    nvim, _ = ui_nvim
    open_demo(nvim)
    before = {w["ft"]: w["height"] for w in windows(nvim)}
    nvim.nvim.command("botright 15new")
    nvim.nvim.command("quit")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return vim.api.nvim_win_get_height(vim.fn.win_findbuf(s.prompt)[1]) == 6")
    after = {w["ft"]: w["height"] for w in windows(nvim)}
    assert after["louise_prompt"] == 6 and after["louise"] == before["louise"], (before, after)


def test_a_terminal_view_opens_readable_and_closing_it_leaves_the_chat_as_it_was(
        ui_nvim: tuple[Driver, Screen]) -> None:
    """Where a tool's terminal opens (not a full-width split under the chat)."""
    nvim, _ = ui_nvim
    open_demo(nvim)
    chat_windows = of(nvim, "louise") + of(nvim, "louise_prompt")
    nvim.lua("local b = vim.api.nvim_create_buf(false, true);"
             " require('louise.chat.placement').side_split(15); vim.api.nvim_win_set_buf(0, b)")
    assert nvim.lua("return vim.api.nvim_win_get_width(0)") >= 40
    nvim.nvim.command("quit")
    nvim.wait("return #vim.api.nvim_list_tabpages() == 1")
    assert of(nvim, "louise") + of(nvim, "louise_prompt") == chat_windows


def test_toggle_hides_and_shows_the_chat(ui_nvim: tuple[Driver, Screen]) -> None:
    nvim, screen = ui_nvim
    key = open_demo(nvim)
    nvim.run_prompt("before hiding", key)
    nvim.nvim.command("wincmd h")  # the person is in their code
    nvim.nvim.command("LouiseToggle")
    nvim.wait("return #vim.api.nvim_tabpage_list_wins(0) == 1")
    nvim.prompt("while hidden", key)
    nvim.wait("local s = require('louise.chat').chats[...]; return s.status.turns_done >= 2",
              key)
    nvim.nvim.command("LouiseToggle")
    nvim.wait("return #vim.api.nvim_tabpage_list_wins(0) == 3")
    assert nvim.lua("return vim.bo.filetype") == "louise_prompt"  # shown to be used
    nvim.wait("local c = require('louise.chat'); return table.concat("
              "vim.api.nvim_buf_get_lines(c.chats[...].buf, 0, -1, false), '\\n')"
              ":find('while hidden', 1, true) ~= nil", key)
    assert of(nvim, "louise_prompt")[0]["height"] == 6
    assert screen.hit_enter == 0, screen.hit_enter_screens


def test_log_and_permissions_open_at_least_40_columns_wide(
        ui_nvim: tuple[Driver, Screen]) -> None:
    nvim, screen = ui_nvim
    open_demo(nvim)
    assert all(int(w["width"]) >= 40 for w in of(nvim, "louise"))  # type: ignore[call-overload]
    nvim.nvim.command("LouiseLog")
    nvim.wait("return vim.api.nvim_buf_get_name(0):find('louise%-log://') ~= nil")
    assert nvim.lua("return vim.api.nvim_win_get_width(0)") >= 40
    nvim.nvim.command("LouisePermissions")
    nvim.wait("return vim.bo.filetype ~= 'log' and vim.api.nvim_buf_get_name(0)"
              ":find('permission') ~= nil")
    assert nvim.lua("return vim.api.nvim_win_get_width(0)") >= 40
    assert screen.hit_enter == 0, screen.hit_enter_screens


@pytest.mark.parametrize("layout", ["left", "bottom", "float", "tab"])
def test_setup_layout_places_the_chat(ui_nvim: tuple[Driver, Screen], layout: str) -> None:
    nvim, _ = ui_nvim
    open_demo(nvim, f"layout = '{layout}', width = 0.5, height = 12")
    transcript, prompt = of(nvim, "louise")[0], of(nvim, "louise_prompt")[0]
    assert int(prompt["row"]) > int(transcript["row"])  # type: ignore[call-overload]
    if layout == "left":
        assert transcript["col"] == 0 and transcript["width"] == 40, windows(nvim)
    elif layout == "bottom":
        assert transcript["col"] == 0 and transcript["width"] == 80
        assert int(transcript["height"]) + 1 + 6 + 1 <= 12 + 1, windows(nvim)  # type: ignore[call-overload]
    elif layout == "float":
        assert transcript["float"] and prompt["float"] and transcript["width"] == 40
    else:
        assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 2
        assert len(windows(nvim)) == 2 and transcript["width"] == 80
    # One unit in every layout: closing the transcript closes the prompt.
    nvim.lua("vim.api.nvim_win_close(vim.fn.win_findbuf("
             "require('louise.chat').chats[require('louise.chat').last].buf)[1], false)")
    nvim.wait("for _, w in ipairs(vim.api.nvim_list_wins()) do"
              " if vim.bo[vim.api.nvim_win_get_buf(w)].filetype == 'louise_prompt' then"
              " return false end end; return true")


def test_a_bad_layout_is_reported_with_its_path(ui_nvim: tuple[Driver, Screen]) -> None:
    nvim, _ = ui_nvim
    nvim.lua("_G.notes = {}; vim.notify = function(m) table.insert(_G.notes, m) end")
    ok = nvim.lua("return require('louise').setup({layout = 'middle', width = 1.5})")
    assert ok is False
    said = "\n".join(nvim.lua("return _G.notes"))
    assert "setup{}: layout: expected" in said and "setup{}: width: expected" in said, said


def test_views_of_a_floating_chat_open_where_they_are_seen(
        ui_nvim: tuple[Driver, Screen]) -> None:
    """Not in a window under the chat's floats: in a tab of their own."""
    nvim, _ = ui_nvim
    open_demo(nvim, "layout = 'float'")
    nvim.nvim.command("LouiseLog")
    nvim.wait("return vim.api.nvim_buf_get_name(0):find('louise%-log://') ~= nil")
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == 2
    assert nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 1
