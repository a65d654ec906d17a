"""Issue 17 item 2: the limits view opens at once, follows every change while open, closes
with q and <Esc>, and is a named buffer with its own filetype."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e

HELD = Path(__file__).resolve().parents[1] / "fakes" / "held_limits_agent.py"
VIEW_LINES = ("local l = require('louise.limits');"
              " return l.buf and vim.api.nvim_buf_get_lines(l.buf, 0, -1, false) or {}")
VIEW_OPEN = ("local l = require('louise.limits');"
             " return l.win ~= nil and vim.api.nvim_win_is_valid(l.win)")


def view_text(nvim: Driver) -> str:
    return "\n".join(nvim.lua(VIEW_LINES))


def test_the_limits_view_opens_at_once_and_follows_a_slow_read(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, default_agent = 'held',"
             " request_timeout = 120, agents = {held = {command = select(1, ...),"
             " args = {select(2, ...)}}}})", sys.executable, str(HELD))
    nvim.nvim.command("LouiseChat held")
    nvim.wait_status("ready")
    # The read that started with the session is held by the agent: the view shows the
    # state now ("loading"), it does not wait for the read.
    nvim.nvim.command("LouiseLimits")
    nvim.wait(VIEW_OPEN)
    nvim.wait("return table.concat(vim.api.nvim_buf_get_lines(require('louise.limits').buf,"
              " 0, -1, false), '\\n'):find('Status: loading', 1, true) ~= nil")
    assert nvim.lua("return vim.api.nvim_buf_get_name(require('louise.limits').buf)") \
        == "louise://limits/held"
    assert nvim.lua("return vim.bo[require('louise.limits').buf].filetype") == "louise_limits"
    assert nvim.lua("return vim.api.nvim_get_current_win() == require('louise.limits').win")
    # The agent answers (the next prompt releases it): the open view changes by itself.
    nvim.lua("local c = require('louise.chat');"
             " require('louise.engine').send('prompt', {key = c.last, text = 'go'})")
    nvim.wait("return table.concat(vim.api.nvim_buf_get_lines(require('louise.limits').buf,"
              " 0, -1, false), '\\n'):find('Status: fresh', 1, true) ~= nil")
    assert "% used · Requests" in view_text(nvim)
    nvim.nvim.input("<Esc>")
    nvim.wait("local l = require('louise.limits'); return not vim.api.nvim_win_is_valid(l.win)")


def test_the_limits_view_updates_live_and_q_closes_it(nvim: Driver) -> None:
    nvim.nvim.command("LouiseChat")
    nvim.wait_status("ready")
    nvim.wait("local l = require('louise.limits').labels.demo; return l and l[1] ~= ''"
              " and not l[1]:find('loading', 1, true)")
    nvim.nvim.command("LouiseLimits")
    nvim.wait(VIEW_OPEN)
    nvim.wait("return table.concat(vim.api.nvim_buf_get_lines(require('louise.limits').buf,"
              " 0, -1, false), '\\n'):find('Status: fresh', 1, true) ~= nil")
    before = view_text(nvim)
    # Three turns use more of the quota; the open view shows each new reading.
    for _ in range(3):
        nvim.run_prompt("/scenario limits")
    nvim.wait("return table.concat(vim.api.nvim_buf_get_lines(require('louise.limits').buf,"
              " 0, -1, false), '\\n') ~= ...", before)
    assert "Status: fresh" in view_text(nvim)
    assert "r refresh" not in view_text(nvim)  # the footer has the keys (issue 23)
    nvim.lua("vim.api.nvim_set_current_win(require('louise.limits').win)")
    nvim.nvim.input("q")
    nvim.wait("local l = require('louise.limits'); return not vim.api.nvim_win_is_valid(l.win)")
    # Closed, it stays closed when the limits change again.
    nvim.run_prompt("/scenario limits")
    assert not nvim.lua(VIEW_OPEN)


def test_r_without_a_live_session_says_so_and_s_starts_the_agent(nvim: Driver) -> None:
    nvim.lua("_G.louise_test_notes = {}; local notify = vim.notify;"
             " vim.notify = function(msg, level) table.insert(_G.louise_test_notes, msg) end")
    nvim.nvim.command("LouiseLimits demo")
    nvim.wait(VIEW_OPEN)
    assert "No live session of demo" in view_text(nvim)
    footer = nvim.lua("local c = vim.api.nvim_win_get_config(require('louise.limits').win);"
                      " local out = {}; for _, part in ipairs(c.footer or {}) do"
                      " table.insert(out, type(part) == 'table' and part[1] or part) end;"
                      " return table.concat(out)")
    assert "s start a session · q close" in footer, footer
    # The keys once: in the footer, not again as the view's last line (issue 23).
    assert "q close" not in view_text(nvim)
    nvim.nvim.input("r")
    nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
              " if m:find('no live session of demo', 1, true) then return true end end")
    nvim.nvim.input("s")
    nvim.wait_status("ready")
    nvim.wait("local l = require('louise.limits').labels.demo; return l and l[1] ~= ''"
              " and not l[1]:find('loading', 1, true) and not l[1]:find('stale', 1, true)")
