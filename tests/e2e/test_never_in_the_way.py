"""End to end (issue 23, item 2): louise never raises a hit-enter prompt. The notices of a
frame are one message, one line with Neovim's own vim.notify (80×24, cmdheight=1), the
whole text for a notification plugin; the demo's quota lasts a first hour."""

from __future__ import annotations

import time

import pytest

from louise import limits as lim
from louise.demo_agent.limits import snapshot
from tests.e2e.conftest import Driver
from tests.e2e.ui_screen import Screen, ui_nvim_fixture  # noqa: F401 (the fixture)

pytestmark = pytest.mark.e2e

# Three pace alerts of one change, as the demo's first allowed `/scenario edit` raised them
# (one prompt each before).
PACE = [
    ["louise: demo Requests 5h window: out after ~3m of work at this pace (resets in 4h)",
     "warn"],
    ["louise: demo Requests 7d window: out after ~2h of work at this pace (resets in 6d)",
     "warn"],
    ["louise: demo Tokens 1d window: out after ~24m of work at this pace (resets in 23h)",
     "warn"],
]


def test_a_frame_of_long_alerts_is_one_line_and_no_hit_enter_prompt(
        ui_nvim: tuple[Driver, Screen]) -> None:
    nvim, screen = ui_nvim
    nvim.lua("require('louise.render').apply({ notify = ... })", PACE)
    nvim.lua("require('louise.render').apply({ notify = ... })",
             [["louise: a second frame's error, long enough to fill most of the line here",
               "error"]])
    nvim.nvim.command("redraw")
    assert screen.mode() == "n"
    assert screen.hit_enter == 0, screen.hit_enter_screens
    bottom = screen.text().split("\n")[-1]
    assert bottom.startswith("louise: a second frame's error"), bottom
    # The whole text of each is kept for :LouiseNotices.
    recent = nvim.lua("return vim.tbl_map(function(n) return n.text end,"
                      " require('louise.notice').recent)")
    assert recent[:3] == [text for text, _ in PACE]


def test_a_notification_plugin_gets_the_frame_whole_in_one_call(
        ui_nvim: tuple[Driver, Screen]) -> None:
    nvim, _ = ui_nvim
    nvim.lua("_G.calls = {}; vim.notify = function(msg, level, opts)"
             " table.insert(_G.calls, {msg, level, opts and opts.title}) end")
    nvim.lua("require('louise.render').apply({ notify = ... })",
             [*PACE, ["louise: demo Requests 5h limit reached", "error"]])
    calls = nvim.lua("return _G.calls")
    levels = nvim.lua("return vim.log.levels")
    assert len(calls) == 1, calls
    message, level, title = calls[0]
    assert message.split("\n") == [PACE[0][0]] + [t.removeprefix("louise: ") for t, _ in PACE[1:]] \
        + ["demo Requests 5h limit reached"]
    assert level == levels["ERROR"] and title == "louise"


def test_an_agents_alerts_of_one_change_are_one_notice(ui_nvim: tuple[Driver, Screen]) -> None:
    """The demo reaching its 5-hour limit and a warning on another window at once: one
    notice, no prompt, and the turn is over without a key pressed."""
    nvim, screen = ui_nvim
    nvim.lua("_G.calls = {}; local stock = vim.notify; vim.notify = function(msg, level, o)"
             " table.insert(_G.calls, msg) end")
    nvim.lua("vim.env.LOUISE_DEMO_QUOTA_STEP = '100'")
    nvim.nvim.command("LouiseChat demo")
    nvim.wait_status("ready", timeout=60)
    nvim.run_prompt("/scenario limits")
    alerts = nvim.wait("local out = {}; for _, m in ipairs(_G.calls) do"
                       " if m:find('remaining;') or m:find('limit reached') then"
                       " table.insert(out, m) end end; return #out > 0 and out")
    assert len(alerts) == 1, alerts
    assert "Requests 5h limit reached" in alerts[0] and "Tokens 1d has" in alerts[0], alerts
    assert alerts[0].count("demo ") == 1, alerts  # the agent named once
    assert screen.hit_enter == 0, screen.hit_enter_screens


def test_the_demo_account_lasts_a_first_hour_of_prompts() -> None:
    """A prompt a minute for an hour: no threshold alert (the old pace reached the limit
    after 22 prompts, about ten minutes)."""
    now = time.time()
    seen: lim.AlertMemory | None = None
    for prompts in range(61):
        state = lim.accepted("demo", lim.parse_snapshot(snapshot(prompts, now)), now)
        alerts, seen = lim.threshold_alerts(state, seen, now)
        assert alerts == [], (prompts, alerts)
