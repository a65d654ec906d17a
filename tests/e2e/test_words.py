"""Issue 23 item 9 in a real Neovim: `:LouiseLog [agent]` works for any configured agent,
running or not, and `:LouiseLimits claude` before any figure says what claude sends and
when, not "unsupported"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e

CLAUDE = Path(__file__).resolve().parents[1] / "fakes" / "claude_limits_agent.py"
LOG_LINES = ("return vim.api.nvim_buf_get_name(0):find('louise%-log://' .. ...) and"
             " table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')")
VIEW_LINES = ("local l = require('louise.limits');"
              " if not (l.win and vim.api.nvim_win_is_valid(l.win)) then return false end;"
              " local lines = vim.api.nvim_buf_get_lines(l.buf, 0, -1, false);"
              " local text = table.concat(lines, '\\n');"
              " return text:find('Agent: claude', 1, true) and text")


def setup_agents(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON,"
             " agents = {claude = {command = select(1, ...), args = {'-P', select(2, ...)}},"
             "  broken = {command = 'sh', args = {'-c', 'echo boom from broken >&2; exit 3'}}}})",
             sys.executable, str(CLAUDE))


def test_louiselog_names_any_configured_agent_running_or_not(nvim: Driver) -> None:
    setup_agents(nvim)
    nvim.nvim.command("LouiseLog claude")
    text = str(nvim.wait(LOG_LINES, "claude"))
    assert "claude has not run yet here (:LouiseChat claude starts it)" in text, text
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg)"
             " table.insert(_G.louise_test_notes, msg) end")
    nvim.nvim.command("LouiseChat broken")  # exits at once
    nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
              " if m:find('exit status 3', 1, true) then return true end end", timeout=60)
    nvim.nvim.command("LouiseLog broken")
    text = str(nvim.wait(LOG_LINES, "broken"))
    assert "(not running)" in text and "## stderr of its last run (tail)" in text, text
    assert "tail)\nboom from broken" in text, text


def test_louiselimits_before_any_figure_says_what_claude_sends_and_when(nvim: Driver) -> None:
    setup_agents(nvim)
    nvim.nvim.command("LouiseChat claude")
    nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    nvim.nvim.command("LouiseLimits claude")
    text = str(nvim.wait(VIEW_LINES))
    assert "Status: no figures yet" in text, text
    assert ("no figures yet: claude sends them with its replies, for a claude.ai "
            "subscription") in text, text
    assert "unsupported" not in text and "does not advertise" not in text, text
