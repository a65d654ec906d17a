"""Issue 16, a newcomer's first hour: the rough edges a new user meets, end to end in a real
headless Neovim with the real demo agent (the minor items: test_newcomer_minor.py)."""

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


def test_a_narrow_winbar_keeps_the_turn_state_and_drops_the_limits_label_first(
        nvim: Driver) -> None:
    open_chat(nvim)
    nvim.run_prompt("hello")
    label = str(nvim.wait(FRESH_LABEL))
    nvim.nvim.command("LouiseRename a rather long name for this review session")
    nvim.wait("local c = require('louise.chat');"
              " return type(c.chats[c.last].status.title) == 'string'")
    win = int(nvim.lua(CHAT_WIN))
    # Room for the turn state, the agent and the label: the label goes first (the
    # statusline shows it; issue 23 item 5), and the name, too long to fit.
    width = len("● ready · demo · ") + len(label) + 6
    nvim.lua("vim.api.nvim_win_set_width(select(1, ...), select(2, ...))", win, width)
    bar = str(nvim.wait("local w = ...; local bar = vim.wo[w].winbar;"
                        " return vim.api.nvim_win_get_width(w) == select(2, ...) and"
                        " vim.api.nvim_eval_statusline(bar, {winid = w, use_winbar = true}).str",
                        win, width))
    assert "ready" in bar and "demo" in bar, bar
    assert label not in bar, bar
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


# ------------------------------------------------------------------- 3, 4, 7. permission float

FLOAT_LINES = ("local p = require('louise.permission');"
               " return vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)")
FOCUSED = ("local p = require('louise.permission');"
           " return p.win ~= nil and vim.api.nvim_get_current_win() == p.win")


def option_lines(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip()[:1].isdigit()]


def test_the_permission_float_keeps_its_options_visible_in_an_80x24_editor(
    nvim: Driver,
) -> None:
    nvim.lua("vim.o.columns = 80; vim.o.lines = 24")
    open_chat(nvim)
    nvim.prompt("/scenario multi_edit")
    nvim.wait(WAITING)
    lines = list(nvim.lua(FLOAT_LINES))
    height = int(nvim.lua("return vim.api.nvim_win_get_height(require('louise.permission').win)"))
    top = int(nvim.lua("local p = require('louise.permission'); return"
                       " vim.api.nvim_win_call(p.win, function() return vim.fn.line('w0') end)"))
    visible = lines[top - 1: top - 1 + height]
    assert option_lines(visible) == ["1  ✓ Allow once", "2  ✓✓ Always allow", "3  ✗ Reject",
                                     "4  ✗✗ Always reject"], visible
    assert any("q refuse" in line for line in visible), visible
    assert any("press d for the full diff" in line for line in visible), "the preview shrank"
    # Made smaller while it is open, it still fits.
    nvim.lua("vim.o.lines = 16")
    nvim.wait("local p = require('louise.permission'); "
              " local h = vim.api.nvim_win_get_height(p.win);"
              " return #vim.api.nvim_buf_get_lines(p.buf, 0, -1, false) <= h and h <= 16")
    assert len(option_lines(list(nvim.lua(FLOAT_LINES)))) == 4


def test_louisepermission_focuses_a_float_that_was_left_and_names_the_session(
    nvim: Driver,
) -> None:
    first = open_chat(nvim)
    nvim.nvim.command("LouiseRename first review")
    nvim.nvim.command("LouiseNew")
    second = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                           first))
    nvim.wait_status("ready", second)
    nvim.nvim.command("LouiseRename second review")
    nvim.wait("local c = require('louise.chat');"
              " return type(c.chats[...].status.title) == 'string'", second)
    nvim.prompt("/scenario edit path=one.py", first)
    nvim.wait(WAITING)
    nvim.prompt("/scenario edit path=two.py", second)
    nvim.wait("return require('louise.permission').queue == 2")
    assert "first review" in nvim.lua(FLOAT_LINES)[0]
    nvim.nvim.command("wincmd p")  # the person goes elsewhere; the float stays
    assert not nvim.lua(FOCUSED)
    nvim.nvim.command("LouisePermission")
    assert nvim.lua(FOCUSED), ":LouisePermission puts the cursor in the float"
    nvim.permission_key("1")
    nvim.wait("local p = require('louise.permission'); return p.current and"
              " p.current.session == ...", second)
    assert "second review" in nvim.lua(FLOAT_LINES)[0]
    nvim.nvim.command("wincmd p")
    nvim.nvim.command("LouisePermission")
    assert nvim.lua(FOCUSED), "also for the second request of the queue"
    nvim.permission_key("4")  # always reject, from the float (not a count in another window)
    nvim.wait("return require('louise.permission').current == nil")
    work = str(nvim.lua("return vim.fn.getcwd()"))
    nvim.wait("return vim.uv.fs_stat(...) ~= nil", work + "/one.py")
    assert nvim.lua("return vim.uv.fs_stat(...) == nil", work + "/two.py")


def test_a_key_typed_as_the_permission_float_opens_answers_nothing(nvim: Driver) -> None:
    open_chat(nvim)
    # The person is typing a count (`10j`) just as the request arrives.
    nvim.lua("local p = require('louise.permission'); local show = p.show;"
             " p.show = function(req) show(req); p.show = show; vim.api.nvim_input('10j') end")
    nvim.prompt("/scenario edit")
    nvim.wait("return require('louise.permission').ignored > 0")
    assert nvim.lua(WAITING), "the 1 of 10j picked nothing"
    assert nvim.status() == "waiting_permission"
    nvim.permission_key("3")  # a deliberate answer works
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    assert nvim.lua("return vim.uv.fs_stat(vim.fn.getcwd() .. '/hello.py') == nil")


# --------------------------------------------------------------------------- 5. contrast

CONTRAST = """
local function lum(rgb)
  local function lin(c)
    c = c / 255
    return c <= 0.03928 and c / 12.92 or ((c + 0.055) / 1.055) ^ 2.4
  end
  return 0.2126 * lin(math.floor(rgb / 65536) % 256) + 0.7152 * lin(math.floor(rgb / 256) % 256)
    + 0.0722 * lin(rgb % 256)
end
local function ratio(a, b)
  local x, y = lum(a), lum(b)
  if x < y then x, y = y, x end
  return (x + 0.05) / (y + 0.05)
end
local function colours(group, bar)
  local hl = vim.api.nvim_get_hl(0, {name = group, link = false})
  local base = vim.api.nvim_get_hl(0, {name = bar, link = false})
  local fg, bg = hl.fg, hl.bg
  if hl.reverse then fg, bg = bg, fg end
  local bfg, bbg = base.fg, base.bg
  if base.reverse then bfg, bbg = bbg, bfg end
  return fg or bfg, bg or bbg
end
local out = {}
local limits = require('louise.limits')
for _, level in ipairs({'ok', 'active', 'warning', 'error', 'neutral'}) do
  limits.labels = {demo = {'limits 42%/5h', level}}
  local res = vim.api.nvim_eval_statusline("%{%v:lua.require'louise'.statusline()%}",
    {use_winbar = false, highlights = true})
  local group = nil
  for _, h in ipairs(res.highlights) do
    if h.start == 0 then group = h.group end
  end
  local fg, bg = colours(group, 'StatusLine')
  out[level] = {group = group, ratio = ratio(fg, bg), text = res.str}
end
limits.labels = {}
return out
"""


@pytest.mark.parametrize(("scheme", "background"),
                         [("default", "dark"), ("default", "light"), ("habamax", "dark"),
                          ("shine", "light")])
def test_the_statusline_label_is_readable_in_every_level(
    nvim: Driver, scheme: str, background: str,
) -> None:
    nvim.lua("vim.o.termguicolors = true; vim.o.background = select(2, ...);"
             " vim.cmd.colorscheme((select(1, ...))); vim.o.background = select(2, ...)",
             scheme, background)
    results = nvim.lua(CONTRAST)
    for level, result in results.items():
        assert result["text"] == "limits 42%/5h", result
        assert result["group"].startswith("LouiseLimits"), result
        assert result["ratio"] >= 4.5, (scheme, background, level, result)


# --------------------------------------------------------------------------- 6. scrolled up

TRANSCRIPT_CURSOR = ("local c = require('louise.chat'); local s = c.chats[c.last];"
                     " local w = vim.fn.win_findbuf(s.buf)[1];"
                     " return {vim.api.nvim_win_get_cursor(w)[1],"
                     " vim.api.nvim_buf_line_count(s.buf)}")


def test_sending_with_the_transcript_scrolled_up_shows_the_new_turn(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.run_prompt("hello")
    nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
             " vim.api.nvim_win_set_cursor(vim.fn.win_findbuf(s.buf)[1], {1, 0})")
    nvim.submit("the second prompt")  # typed in the prompt window, <CR>
    row, count = nvim.lua(TRANSCRIPT_CURSOR)
    assert row == count, "the transcript follows the new turn to its end"
    bottom = nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
                      " return vim.api.nvim_win_call(vim.fn.win_findbuf(s.buf)[1],"
                      " function() return vim.fn.line('w$') end)")
    assert bottom == count, "the end of the new turn is on screen"
    assert "You wrote: *the second prompt*" in nvim.chat_text()


def test_output_below_a_scrolled_up_transcript_is_announced_in_its_winbar(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.run_prompt("hello")
    win = int(nvim.lua(CHAT_WIN))
    nvim.lua("vim.api.nvim_set_current_win(...); vim.api.nvim_win_set_cursor(0, {1, 0})", win)
    # Sent from elsewhere (another window's mapping, the engine): the view stays put.
    nvim.lua("local c = require('louise.chat');"
             " require('louise.engine').send('prompt', {key = c.last, text = 'more please'})")
    nvim.wait("return vim.wo[...].winbar:find('↓', 1, true) ~= nil", win)
    assert nvim.lua("return vim.api.nvim_win_get_cursor(...)[1]", win) == 1
    nvim.wait_status("ready")
    nvim.nvim.input("G")  # caught up: the hint goes
    nvim.wait("return vim.wo[...].winbar:find('↓', 1, true) == nil", win)
    # Wide enough, it says it in words.
    nvim.nvim.command("set columns=200")
    nvim.lua("vim.api.nvim_win_set_width(..., 150); vim.api.nvim_win_set_cursor(..., {1, 0})",
             win)
    nvim.lua("local c = require('louise.chat');"
             " require('louise.engine').send('prompt', {key = c.last, text = 'again'})")
    nvim.wait("return vim.wo[...].winbar:find('new output below (G)', 1, true) ~= nil", win)
