"""End to end: signing in from Neovim. The demo agent with LOUISE_DEMO_AUTH=required
refuses sessions until signed in; louise offers its methods in a picker, runs a terminal
method's command in a Neovim terminal on the person's say-so, restarts the agent and
opens the chat; :LouiseLogout logs out and the next prompt asks again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e


def stub_selects(nvim: Driver, answers: list[int]) -> None:
    """vim.ui.select answers each call with the next index of `answers` (then dismisses)
    and records its prompt and the items as shown."""
    nvim.lua("_G.louise_test_answers = ...; _G.louise_test_selects = {};"
             " vim.ui.select = function(items, opts, cb)"
             "   local shown = {}; for _, it in ipairs(items) do"
             "     table.insert(shown, opts.format_item and opts.format_item(it) or tostring(it))"
             "   end"
             "   table.insert(_G.louise_test_selects, {prompt = opts.prompt, items = shown})"
             "   cb(items[table.remove(_G.louise_test_answers, 1) or 0]) end", answers)


def authed_agent(nvim: Driver, tmp_path: Path, login_env: str = "{}") -> None:
    """The demo agent as `authed`, requiring a sign-in; `login_env` (JSON): more
    variables its terminal method sets."""
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {authed = {"
             " command = select(1, ...), args = {'-P', '-m', 'louise.demo_agent'},"
             " env = {LOUISE_DEMO_AUTH = 'required', LOUISE_DEMO_STATE_DIR = select(2, ...),"
             " LOUISE_DEMO_LOGIN_ENV = select(3, ...)}}},"
             " default_agent = 'authed'})", sys.executable, str(tmp_path / "authed-state"),
             login_env)


def test_sign_in_on_a_terminal_then_the_chat_opens(nvim: Driver, tmp_path: Path) -> None:
    authed_agent(nvim, tmp_path)
    stub_selects(nvim, [2, 1])  # "Demo login (runs in a terminal)", then "Run it"
    nvim.nvim.command("LouiseChat authed")
    job = nvim.wait("for _, t in pairs(require('louise.ask').terminals) do"
                    " return t.job end")
    selects = nvim.lua("return _G.louise_test_selects")
    assert selects[0]["prompt"] == "louise: sign in to authed"
    assert selects[0]["items"][1].startswith("Demo login (runs in a terminal)")
    # The whole command, its env included, before anything ran.
    assert "LOUISE_DEMO_LOGIN=1" in selects[1]["prompt"]
    assert "louise.demo_agent --login" in selects[1]["prompt"]
    assert selects[1]["items"] == ["Run it in a terminal", "Cancel"]
    nvim.wait("local b = vim.api.nvim_get_current_buf(); return vim.bo[b].buftype == 'terminal'"
              " and table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false)):find("
              "'Type yes', 1, true)")
    nvim.lua("vim.fn.chansend(..., 'yes\\r')", job)
    key = nvim.wait("return require('louise.chat').last", timeout=60)
    assert str(key).startswith("authed:")
    nvim.wait_status("ready")
    assert (tmp_path / "authed-state" / "signed-in").exists()
    nvim.run_prompt("hello after signing in")
    assert "Hello from the demo agent" in nvim.chat_text()


def test_a_padded_command_shows_what_runs_first_and_can_be_shown_whole(
        nvim: Driver, tmp_path: Path) -> None:
    authed_agent(nvim, tmp_path, json.dumps({"LOUISE_DEMO_PAD": "p" * 8000}))
    stub_selects(nvim, [2, 2, 3])  # the terminal method, "Show the whole command", Cancel
    nvim.nvim.command("LouiseChat authed")
    nvim.wait("return #_G.louise_test_selects >= 3")
    first, again = nvim.lua("return _G.louise_test_selects")[1:3]
    prompt = first["prompt"]
    # What runs, first: the configured command and the method's argument, then the
    # variables, shortened, and the prompt says so.
    assert prompt.startswith("louise: to sign in to authed (Demo login), run in a terminal: "
                             f"{sys.executable} -P -m louise.demo_agent --login with "
                             "LOUISE_DEMO_LOGIN=1 LOUISE_DEMO_PAD=ppp")
    assert "[shortened: the whole command is" in prompt and len(prompt) < 1000
    assert first["items"] == ["Run it in a terminal", "Show the whole command", "Cancel"]
    assert again == first  # asked again after the view
    view = nvim.lua("for _, b in ipairs(vim.api.nvim_list_bufs()) do"
                    " if vim.api.nvim_buf_get_name(b):find('louise%-signin%-command://') then"
                    " return vim.api.nvim_buf_get_lines(b, 0, -1, false) end end")
    assert "  LOUISE_DEMO_PAD=" + "p" * 8000 in view and "  --login" in view
    assert nvim.lua("return next(require('louise.ask').terminals) == nil")  # nothing ran


def test_a_method_setting_a_foreign_variable_is_refused_and_says_which(
        nvim: Driver, tmp_path: Path) -> None:
    nvim.lua("_G.louise_test_notes = {};"
             " vim.notify = function(msg, level) table.insert(_G.louise_test_notes, msg) end")
    authed_agent(nvim, tmp_path, json.dumps({"PERL5OPT": "-Mevil"}))
    stub_selects(nvim, [2, 1])
    nvim.nvim.command("LouiseChat authed")
    note = nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
                     " if m:find('PERL5OPT', 1, true) then return m end end")
    assert "'Demo login' would set PERL5OPT, which is not one of the agent's own " \
        "settings" in str(note)
    assert nvim.lua("return #_G.louise_test_selects") == 1  # never asked to run it
    assert nvim.lua("return next(require('louise.ask').terminals) == nil")


def test_declining_runs_nothing_and_says_why(nvim: Driver, tmp_path: Path) -> None:
    nvim.lua("_G.louise_test_notes = {}; local notify = vim.notify;"
             " vim.notify = function(msg, level) table.insert(_G.louise_test_notes, msg) end")
    authed_agent(nvim, tmp_path)
    stub_selects(nvim, [2, 2])  # the terminal method, then "Cancel"
    nvim.nvim.command("LouiseChat authed")
    note = nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
                     " if m:find('requires authentication', 1, true) then return m end end")
    assert "Demo token, Demo login" in str(note)
    assert nvim.lua("return next(require('louise.ask').terminals) == nil")
    assert not (tmp_path / "authed-state" / "signed-in").exists()


def test_logout_then_the_next_prompt_asks_again(nvim: Driver, tmp_path: Path) -> None:
    authed_agent(nvim, tmp_path)
    stub_selects(nvim, [1])  # "Demo token": the agent signs itself in (authenticate)
    nvim.nvim.command("LouiseChat authed")
    nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    nvim.lua("_G.louise_test_notes = {};"
             " vim.notify = function(msg, level) table.insert(_G.louise_test_notes, msg) end")
    nvim.nvim.command("LouiseLogout")
    nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
              " if m:find('logged out of authed', 1, true) then return true end end")
    stub_selects(nvim, [1])
    before = nvim.turns_done()
    nvim.prompt("hello once more")
    # The refused turn, then the same prompt again once signed in.
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done >= ... + 2 and s.status.status == 'ready'", before)
    assert nvim.lua("return #_G.louise_test_selects") == 1  # asked to sign in again
    text = nvim.chat_text()
    assert "requires authentication" in text  # the refused turn says why
    assert text.count("▌ You\nhello once more") == 2  # then the prompt ran again
    assert "Hello from the demo agent" in text.split("▌ You\nhello once more")[-1]


def hold_selects(nvim: Driver) -> None:
    """vim.ui.select keeps its callback (the person has not picked yet): answer with
    `_G.louise_test_pick(index)`."""
    nvim.lua("_G.louise_test_selects = {};"
             " vim.ui.select = function(items, opts, cb)"
             "   table.insert(_G.louise_test_selects, {prompt = opts.prompt})"
             "   _G.louise_test_pick = function(i) cb(items[i]) end end")


def test_the_chat_says_it_waits_for_sign_in_not_ready(nvim: Driver, tmp_path: Path) -> None:
    authed_agent(nvim, tmp_path)
    hold_selects(nvim)
    nvim.nvim.command("LouiseChat authed")
    nvim.wait("return #_G.louise_test_selects == 1")
    # The placeholder: waiting for the person, not "starting" (nor counting for ever).
    placeholder = str(nvim.lua("return next(require('louise.chat.starting').by_id) and"
                               " 'starting:' .. next(require('louise.chat.starting').by_id)"))
    nvim.wait("local b = ...; for _, w in ipairs(vim.api.nvim_list_wins()) do"
              " if vim.api.nvim_win_get_buf(w) == b and"
              " vim.wo[w].winbar:find('waiting for sign-in', 1, true) then return true end end",
              nvim.lua("return require('louise.chat.starting').placeholder(...).buf",
                       placeholder))
    first = nvim.lua("local b = require('louise.chat.starting').placeholder(...).buf;"
                     " return vim.api.nvim_buf_get_lines(b, 0, 1, false)[1]", placeholder)
    assert str(first).startswith("… waiting for sign-in to authed")
    nvim.lua("_G.louise_test_pick(1)")  # "Demo token": the agent signs itself in
    nvim.wait_status("ready")
    nvim.wait("local c = require('louise.chat'); local b = c.chats[c.last].buf;"
              " for _, w in ipairs(vim.api.nvim_list_wins()) do"
              " if vim.api.nvim_win_get_buf(w) == b then"
              " return vim.wo[w].winbar:find('● ready', 1, true) end end")
    # Logged out, the next prompt asks again: meanwhile the chat does not say `ready`.
    nvim.nvim.command("LouiseLogout")
    nvim.wait("return not require('louise.chat.winbar').signing_in.authed")
    hold_selects(nvim)
    before = nvim.turns_done()
    nvim.prompt("hello once more")
    nvim.wait("return #_G.louise_test_selects == 1")
    bar = nvim.wait("local c = require('louise.chat'); local b = c.chats[c.last].buf;"
                    " for _, w in ipairs(vim.api.nvim_list_wins()) do"
                    " local bar = vim.wo[w].winbar"
                    " if vim.api.nvim_win_get_buf(w) == b and"
                    " bar:find('waiting for sign-in', 1, true) then return bar end end")
    assert "waiting for sign-in · :LouiseSignIn" in str(bar) and "ready" not in str(bar)
    nvim.lua("_G.louise_test_pick(1)")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done >= ... + 2 and s.status.status == 'ready'", before)
    nvim.wait("local c = require('louise.chat'); local b = c.chats[c.last].buf;"
              " for _, w in ipairs(vim.api.nvim_list_wins()) do"
              " if vim.api.nvim_win_get_buf(w) == b then"
              " return vim.wo[w].winbar:find('● ready', 1, true) end end")
