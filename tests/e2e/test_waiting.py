"""Issue 23 items 1 and 5 in a real Neovim: a chat is never silent while it waits (the
winbar and the transcript's tail count the seconds and show the agent's own notes, such as
codex-acp's "Reconnecting... 2/5"), and its winbar keeps the state in words at 60 columns,
drops the limits first, and says "new output below" only when the tail is off screen."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).resolve().parents[1] / "fakes" / "script_agent.py"
CHAT_WIN = ("local c = require('louise.chat'); local s = c.chats[c.last];"
            " return s and vim.fn.win_findbuf(s.buf)[1]")
SHOWN_WINBAR = ("local w = ...; return vim.api.nvim_eval_statusline(vim.wo[w].winbar,"
                " {winid = w, use_winbar = true}).str")
TAIL = ("local c = require('louise.chat'); local s = c.chats[c.last];"
        " local ns = vim.api.nvim_create_namespace('louise_wait');"
        " local out = {};"
        " for _, m in ipairs(vim.api.nvim_buf_get_extmarks(s.buf, ns, 0, -1, {details = true}))"
        " do for _, l in ipairs(m[4].virt_lines or {}) do"
        "   table.insert(out, {row = m[2], text = l[1][1]}) end end;"
        " return {marks = out, last = vim.api.nvim_buf_line_count(s.buf) - 1}")


def codex_note(text: str) -> dict[str, Any]:
    """A retry note as codex-acp 2.6 sends it while the model API is unreachable."""
    return {"update": {"sessionUpdate": "session_info_update", "_meta": {"codex": {"error": {
        "message": text, "codexErrorInfo": {"responseStreamDisconnected": {
            "httpStatusCode": None}}, "turnId": "1", "willRetry": True}}}}}


def reply(text: str) -> dict[str, Any]:
    return {"update": {"sessionUpdate": "agent_message_chunk",
                       "content": {"type": "text", "text": text}}}


def open_script_chat(nvim: Driver) -> int:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON,"
             " default_agent = 'script',"
             " agents = {script = {command = ..., args = {'-P', select(2, ...)}}}})",
             sys.executable, str(SCRIPT))
    nvim.nvim.command("LouiseChat script")
    nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    return int(nvim.lua(CHAT_WIN))


def test_the_winbar_and_the_tail_count_the_wait_and_show_the_agents_notes(
        nvim: Driver) -> None:
    win = open_script_chat(nvim)
    nvim.lua("vim.api.nvim_win_set_width(...)", win, 60)
    steps = [codex_note("Reconnecting... 2/5"), {"sleep": 4}, reply("back")]
    nvim.prompt(json.dumps(steps))
    # The agent's note, as soon as it comes, and the seconds going up meanwhile.
    bar = str(nvim.wait(f"local bar = (function(...) {SHOWN_WINBAR} end)(...);"
                        " return bar:find('Reconnecting... 2/5', 1, true) and bar", win))
    assert re.search(r"working \d+s · Reconnecting\.\.\. 2/5", bar), bar
    bar = str(nvim.wait(f"local bar = (function(...) {SHOWN_WINBAR} end)(...);"
                        " return bar:find('working [2-9]s') and bar", win))
    tail = nvim.lua(TAIL)
    assert [m["row"] for m in tail["marks"]] == [tail["last"]], tail
    assert re.fullmatch(r"… working \d+s · Reconnecting\.\.\. 2/5", tail["marks"][0]["text"])
    nvim.wait_status("ready")
    assert "back" in nvim.chat_text()
    assert nvim.lua(TAIL)["marks"] == []  # over: the tail is the transcript again
    assert "ready" in str(nvim.lua(SHOWN_WINBAR, win))


WINBAR = ("local width, status, since = ...;"
          " require('louise.limits').labels.demo = {'limits 5h 12% · 7d 3%', 'ok'};"
          " local state = {agent = 'demo', key = 'demo:test', n = 1, buf = 0,"
          "  since = since >= 0 and vim.uv.now() - since or nil,"
          "  status = {status = status, title = 'Review of the parser', model = 'demo-large',"
          "   mode = 'default', context = 12, cost = '0.12 USD'}};"
          " return require('louise.chat.winbar').winbar(state, width)")


def plain(bar: str) -> str:
    return re.sub(r"%#[^#]*#|%\*|%\d*@[^@]*@|%X", "", bar).replace("%%", "%")


def test_at_60_columns_the_state_stays_in_words_and_the_limits_go_first(nvim: Driver) -> None:
    working = plain(str(nvim.lua(WINBAR, 60, "prompting", 12_300)))
    assert working.startswith(" … working 12s · "), working
    assert "Review of the parser" in working and "limits" not in working, working
    waiting = plain(str(nvim.lua(WINBAR, 60, "waiting_permission", 3_000)))
    assert waiting.startswith(" ! waiting for permission · "), waiting
    assert "limits" not in waiting, waiting
    starting = plain(str(nvim.lua(WINBAR, 60, "starting", 3_200)))
    assert starting.startswith(" … starting demo · 3s"), starting
    # Wide, everything; narrow, the state in words all the same (never a glyph alone).
    assert "limits 5h 12%" in plain(str(nvim.lua(WINBAR, 200, "ready", -1)))
    for width in (30, 20, 12):
        assert "waiting for permission" in plain(
            str(nvim.lua(WINBAR, width, "waiting_permission", 0)))
        assert "working 0s" in plain(str(nvim.lua(WINBAR, width, "prompting", 0)))


def test_new_output_below_only_when_the_tail_is_off_screen(nvim: Driver) -> None:
    nvim.nvim.command("set lines=120")
    open_chat(nvim)
    win = int(nvim.lua(CHAT_WIN))
    nvim.lua("vim.api.nvim_win_set_height(...)", win, 100)
    nvim.run_prompt("hello")
    nvim.lua("vim.api.nvim_set_current_win(...); vim.api.nvim_win_set_cursor(0, {1, 0})", win)
    before = nvim.turns_done()
    nvim.lua("local c = require('louise.chat');"
             " require('louise.engine').send('prompt', {key = c.last, text = 'more please'})")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done > ...", before)
    nvim.wait("local w = ...; local s = require('louise.chat').chats[require('louise.chat').last];"
              " return vim.fn.line('w$', w) >= vim.api.nvim_buf_line_count(s.buf)", win)
    assert "more please" in nvim.chat_text()
    assert nvim.lua("return vim.api.nvim_win_get_cursor(...)[1]", win) == 1  # not followed
    bar = str(nvim.lua(SHOWN_WINBAR, win))
    assert "below" not in bar and "↓" not in bar, bar


def test_new_output_below_goes_when_the_tail_is_scrolled_into_view(nvim: Driver) -> None:
    open_chat(nvim)
    win = int(nvim.lua(CHAT_WIN))
    nvim.run_prompt("hello")
    nvim.lua("vim.api.nvim_set_current_win(...); vim.api.nvim_win_set_cursor(0, {1, 0})", win)
    before = nvim.turns_done()
    nvim.lua("local c = require('louise.chat');"
             " require('louise.engine').send('prompt', {key = c.last, text = 'more please'})")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done > ...", before)
    nvim.wait(f"return (function(...) {SHOWN_WINBAR} end)(...):find('below', 1, true)", win)
    # Scrolled with <C-e> until the last line shows (the cursor is not on it): the hint goes.
    # (Each poll scrolls again: the turn's last lines may still be arriving.)
    scroll = ("local w = ...; local buf = vim.api.nvim_win_get_buf(w);"
              " local n = vim.api.nvim_buf_line_count(buf) - vim.fn.line('w$', w);"
              " if n > 0 then vim.api.nvim_win_call(w, function()"
              "   vim.cmd('normal! ' .. n .. '\\5') end); vim.cmd('redraw') end;")
    nvim.wait(scroll + f" return not (function(...) {SHOWN_WINBAR} end)(w):find('below', 1, true)",
              win)
    assert nvim.lua("local w = ...; return vim.api.nvim_win_get_cursor(w)[1] <"
                    " vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(w))", win)


def test_the_tail_shows_the_wait_under_a_long_reply_it_follows(nvim: Driver) -> None:
    win = open_script_chat(nvim)
    long = "\n".join(f"line {i}" for i in range(200))
    nvim.prompt(json.dumps([reply(long), codex_note("Reconnecting... 3/5"),
                            {"hang": True}]))
    nvim.wait("local c = require('louise.chat'); return c.chats[c.last].status.status"
              " == 'prompting'")
    nvim.wait(f"return (function(...) {TAIL} end)().marks[1] ~= nil")
    # The window follows the tail: the virtual line under the last line is on screen.
    # (While the reply's first frame is not there yet, the prompt's one line is taller than
    # the window and `zb` leaves the top past the last line: not shown yet, not an error.)
    shown = ("local w = ...; local buf = vim.api.nvim_win_get_buf(w);"
             " local h = vim.api.nvim_win_text_height(w, {start_row ="
             "   math.min(vim.fn.line('w0', w), vim.api.nvim_buf_line_count(buf)) - 1});"
             " return vim.fn.line('w$', w) == vim.api.nvim_buf_line_count(buf)"
             "   and h.all <= vim.api.nvim_win_get_height(w) and h.fill >= 1")
    nvim.wait(shown, win)
    assert nvim.lua("local w = ...; return vim.api.nvim_win_get_cursor(w)[1] =="
                    " vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(w))", win)
    nvim.nvim.command("LouiseCancel")
    nvim.wait_status("ready")


# After every frame: a window following the tail while the wait line shows must show what
# `zb` makes of it (louise skips `zb` when the window already does): `zb` is run here and
# must not move the view.
ZB_CHECK = """
local R = require('louise.render')
local c = require('louise.chat')
_G.zb_check = { frames = 0, moved = {} }
local apply = R.apply
R.apply = function(batch)
  local out = apply(batch)
  local s = c.chats[c.last]
  local win = s and vim.fn.win_findbuf(s.buf)[1]
  local last = s and vim.api.nvim_buf_line_count(s.buf)
  if win and s.wait_mark and vim.api.nvim_win_get_cursor(win)[1] == last then
    _G.zb_check.frames = _G.zb_check.frames + 1
    local before = vim.api.nvim_win_call(win, vim.fn.winsaveview)
    vim.api.nvim_win_call(win, function() vim.cmd('normal! zb') end)
    local after = vim.api.nvim_win_call(win, vim.fn.winsaveview)
    if before.topline ~= after.topline or before.topfill ~= after.topfill
        or before.skipcol ~= after.skipcol then
      table.insert(_G.zb_check.moved, { before.topline, after.topline })
    end
  end
  return out
end
"""


APPLY = "local key, ops = ...; require('louise.render').apply({chats = {[key] = ops}})"
WRAPPED = "a wrapped line of the reply, longer than the forty columns: "


def hanging_reply(nvim: Driver, block: str, zb_check: bool = True) -> tuple[int, str]:
    """A script chat 40 columns wide whose turn hangs with its wait line shown (with the
    ZB_CHECK recorder, `zb_check`), and a reply block `block` begun in it, as the engine
    would; returns the window and the chat's key, for frames applied with APPLY."""
    win = open_script_chat(nvim)
    nvim.lua("vim.api.nvim_win_set_width(...)", win, 40)
    nvim.prompt(json.dumps([{"hang": True}]))
    nvim.wait("local c = require('louise.chat'); return c.chats[c.last].wait_mark")
    if zb_check:
        nvim.lua(ZB_CHECK)
    key = nvim.lua("return require('louise.chat').last")
    nvim.lua(APPLY, key, [["block", block, "agent", ["", "▌ script", ""]]])
    return win, key


def test_the_tail_that_follows_shows_the_wait_line_as_zb_would_after_every_frame(
        nvim: Driver) -> None:
    """Frames applied as the engine sends them (1 to 4 wrapped lines, a frame taller than
    the window, a last line growing without a newline) while a turn works."""
    _win, key = hanging_reply(nvim, "zb-test")
    texts = ["".join(f"{WRAPPED}{i}.{j}\n" for j in range(1 + i % 4)) for i in range(40)]
    texts.append("".join(f"{WRAPPED}big {j}\n" for j in range(80)))
    texts += [f"growing {i} " * 3 for i in range(10)]
    texts += ["\nshort\n"] + ["".join(f"{WRAPPED}{i}\n" for _ in range(2)) for i in range(5)]
    for text in texts:
        nvim.lua(APPLY, key, [["text", "zb-test", text]])
    check = nvim.lua("return _G.zb_check")
    assert check["frames"] == len(texts) + 1, check
    assert check["moved"] == [], check
    nvim.nvim.command("LouiseCancel")
    nvim.wait_status("ready")


def test_a_view_scrolled_between_frames_shows_the_wait_line_again_on_the_next(
        nvim: Driver) -> None:
    """A window following the tail is measured again once something else moved its view
    (the person scrolled it past the end, the cursor still on the last line): the frames
    between two measurements may skip it only while the view is as the last one left it."""
    win, key = hanging_reply(nvim, "zb-test")
    scroll = ("local w = ...; vim.api.nvim_win_call(w, function() vim.cmd('normal! 3\\5') end);"
              " return vim.api.nvim_win_get_cursor(w)[1] =="
              " vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(w))")
    scrolled = 0
    for i in range(60):
        if i > 30 and i % 5 == 0:
            assert nvim.lua(scroll, win), "the cursor left the last line"
            scrolled += 1
        nvim.lua(APPLY, key, [["text", "zb-test", f"{WRAPPED}{i}\n"]])
    check = nvim.lua("return _G.zb_check")
    assert scrolled == 5 and check["frames"] == 61, check
    assert check["moved"] == [], check


def test_frames_that_only_add_lines_measure_the_window_once_in_a_while(
        nvim: Driver) -> None:
    """While a reply streams in whole lines, the window that follows it is measured (or
    `zb` run) at most once every BOTTOM_RECHECK frames: the frames between are known to
    show the wait line (the zb test above checks that they do)."""
    _win, key = hanging_reply(nvim, "m-test", zb_check=False)
    for i in range(40):  # the window fills up
        nvim.lua(APPLY, key, [["text", "m-test", f"{WRAPPED}{i}\n"]])
    nvim.lua("""
      local view = require('louise.chat.view')
      _G.measured = 0
      local at_bottom = view.at_bottom
      view.at_bottom = function(...) _G.measured = _G.measured + 1; return at_bottom(...) end
    """)
    for i in range(40, 80):
        nvim.lua(APPLY, key, [["text", "m-test", f"{WRAPPED}{i}\n"]])
    recheck = nvim.lua("return require('louise.chat.view').BOTTOM_RECHECK")
    measured = nvim.lua("return _G.measured")
    assert 0 < measured <= 40 // recheck + 1, measured
