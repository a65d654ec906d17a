"""Issue 13, end to end: a real headless Neovim with the claude-shaped fake agent
(tests/fakes/claude_limits_agent.py, no v1 extension): after one prompt the statusline and
the chat's winbar show its 5h and 7d windows, and `:LouiseLimits` names their source. The
expected label is computed with `louise.limits` from what the fake sends."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from louise import limits as lim
from louise.limits.sources import claude
from louise.nvim.limits_ui import LABEL_TICK_SECONDS
from tests.e2e.conftest import Driver
from tests.e2e.test_quota_display import group_of

pytestmark = pytest.mark.e2e

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "claude_limits_agent.py"
STATUSLINE = "%{%v:lua.require'louise'.statusline({'agent': 'claude'})%}"
CHAT_WIN = ("local c = require('louise.chat'); local s = c.chats[c.last];"
            " return s and vim.fn.win_findbuf(s.buf)[1]")


# Well under the label's periodic re-render (LABEL_TICK_SECONDS): `n/a` must not wait for it.
N_A_TIMEOUT = 10.0
assert N_A_TIMEOUT < LABEL_TICK_SECONDS / 2


def expected_text(now: float) -> str:
    """The label for the fake's first reading (5h at 0.24, 7d at 0.13), received at `now`;
    the reset times are the fake's (2 h and 4 d after it started, about now)."""
    info = {"status": "allowed", "unifiedWindows": {
        "five_hour": {"utilization": 0.24, "resetsAt": int(now) + 2 * 3600},
        "seven_day": {"utilization": 0.13, "resetsAt": int(now) + 4 * 86400}}}
    wire = claude.translate(info, None, now)
    assert wire is not None
    state = lim.translated("claude", lim.parse_snapshot(wire), claude.SOURCE, now)
    label = lim.render_label(state, now)
    assert label is not None and label.level == "ok"
    return label.text


def test_statusline_and_winbar_show_claude_windows_after_one_prompt(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON,"
             " default_agent = 'claude',"
             " agents = {claude = {command = ..., args = {'-P', select(2, ...)}}}})",
             sys.executable, str(FAKE))
    nvim.nvim.command("LouiseChat claude")
    nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    # Before any rate-limit data: the agent offers no extension (said as soon as the
    # session is ready, not at the label's periodic re-render).
    nvim.wait("local l = require('louise.limits').labels.claude;"
              " return l and l[1] == 'limits n/a'", timeout=N_A_TIMEOUT)
    nvim.submit("hello")
    label = nvim.wait("local l = require('louise.limits').labels.claude;"
                      " return l and l[1]:find('/7d', 1, true) and l")
    text = str(label[0])
    assert text == expected_text(time.time()), text
    assert text.startswith("limits 76%/5h ↻2h 87%/7d ↻4d")
    assert label[1] == "ok"

    shown = nvim.lua("return vim.api.nvim_eval_statusline(..., {use_winbar = false,"
                     " highlights = true})", STATUSLINE)
    assert shown["str"] == text
    assert shown["highlights"][0]["group"] == group_of("ok")
    win = nvim.lua(CHAT_WIN)
    # Wide enough for the label (a narrow winbar drops it first: the statusline has it).
    nvim.nvim.command("set columns=240")
    nvim.lua("vim.api.nvim_win_set_width(...)", win, 200)
    bar = nvim.wait("local w, text = ...; local s = vim.api.nvim_eval_statusline("
                    " vim.wo[w].winbar, {winid = w, use_winbar = true}).str;"
                    " return s:find(text, 1, true) and s", win, text)
    assert "76%/5h" in bar and "87%/7d" in bar

    nvim.nvim.command("LouiseLimits claude")
    lines = nvim.wait("local l = require('louise.limits');"
                      " if not (l.win and vim.api.nvim_win_is_valid(l.win)) then return false end;"
                      " local lines = vim.api.nvim_buf_get_lines(l.buf, 0, -1, false);"
                      " return table.concat(lines, '\\n'):find('Source:', 1, true) and lines")
    assert "Source: claude rate-limit metadata" in lines
    assert "Status: fresh" in lines
    assert "Plan: Claude Max" in lines


def test_a_chat_with_an_agent_without_limits_says_n_a_as_soon_as_it_is_ready(
    nvim: Driver,
) -> None:
    """The agent's `initialize` answer has no limits extension: the statusline and the
    chat's winbar say `limits n/a` once its session is ready, long before the label's
    periodic re-render, and nothing once that session is closed."""
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON,"
             " default_agent = 'claude',"
             " agents = {claude = {command = ..., args = {'-P', select(2, ...)}}}})",
             sys.executable, str(FAKE))
    nvim.nvim.command("LouiseChat claude")
    nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    label = nvim.wait("local l = require('louise.limits').labels.claude;"
                      " return l and l[1] == 'limits n/a' and l", timeout=N_A_TIMEOUT)
    assert label[1] == "neutral"
    shown = nvim.lua("return vim.api.nvim_eval_statusline(..., {use_winbar = false}).str",
                     STATUSLINE)
    assert shown == "limits n/a"
    win = nvim.lua(CHAT_WIN)
    nvim.wait("local w = ...; return vim.api.nvim_eval_statusline(vim.wo[w].winbar,"
              " {winid = w, use_winbar = true}).str:find('limits n/a', 1, true)", win,
              timeout=N_A_TIMEOUT)
    nvim.nvim.command("LouiseClose")
    nvim.wait("local l = require('louise.limits').labels.claude; return l and l[1] == ''",
              timeout=N_A_TIMEOUT)
