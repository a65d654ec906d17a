"""Issue 23's acceptance: a first hour with louise in a real Neovim at 80×24, `cmdheight=1`,
as a person drives it with keys (the demo agent, here slow to start: it answers nothing
until the test opens its gate), counting what would be in the way:

- hit-enter prompts ("Press ENTER", seen on the screen, or Neovim's mode `r`/`rm`),
- keys landing in a buffer the person did not type into,
- windows louise opens narrower than 40 columns,

and that the chat is on screen while its agent is still starting."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ROOT, Driver
from tests.e2e.test_sign_in import stub_selects
from tests.e2e.ui_screen import Screen, ui_nvim_fixture  # noqa: F401 (the fixture)

pytestmark = pytest.mark.e2e

SLOW_AGENT = ROOT / "tests" / "fakes" / "slow_start_agent.py"

# changedtick of every buffer a person types into (not transcripts, views or terminals).
TICKS = ("local out = {}; for _, b in ipairs(vim.api.nvim_list_bufs()) do"
         " if vim.api.nvim_buf_is_loaded(b) and (vim.bo[b].buftype == ''"
         "   or vim.bo[b].filetype == 'louise_prompt') then"
         "   out[tostring(b)] = vim.api.nvim_buf_get_changedtick(b) end end; return out")
# Every window of every tab: id, width, whether it is a float.
WINDOWS = ("local out = {}; for _, w in ipairs(vim.api.nvim_list_wins()) do"
           " table.insert(out, {w, vim.api.nvim_win_get_width(w),"
           "   vim.api.nvim_win_get_config(w).relative ~= '',"
           "   vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w))}) end; return out")
CHAT = "local c = require('louise.chat'); local s = c.chats[c.last];"


@dataclass
class Tally:
    nvim: Driver
    screen: Screen
    first_window: int
    stray_keys: list[str] = field(default_factory=list)
    narrow: dict[int, tuple[int, str]] = field(default_factory=dict)
    modes: list[str] = field(default_factory=list)

    def look(self) -> None:
        """What is on screen now: hit-enter mode, narrow windows louise opened."""
        mode = self.screen.mode()
        if mode in ("r", "rm"):
            self.modes.append(mode)
        for win, width, _float, name in self.nvim.lua(WINDOWS):
            if win > self.first_window and width < 40:
                self.narrow[win] = (width, name)

    def type(self, keys: str, into: int) -> None:
        """Type `keys` meaning them for buffer `into`; any other buffer that changes got
        keys that were not its."""
        before = self.nvim.lua(TICKS)
        self.nvim.nvim.input(keys)
        self.nvim.lua("return 1")  # the keys are handled before the next request
        after = self.nvim.lua(TICKS)
        for buf, tick in after.items():
            if int(buf) != into and before.get(buf) is not None and before[buf] != tick:
                self.stray_keys.append(f"{keys!r} meant for {into} changed buffer {buf}")
        self.look()


def current_buf(nvim: Driver) -> int:
    return int(nvim.lua("return vim.api.nvim_get_current_buf()"))


def chat_prompt(nvim: Driver) -> int:
    return int(nvim.lua(CHAT + " return s.prompt"))


def turns(nvim: Driver) -> int:
    return int(nvim.lua(CHAT + " return s and s.status and s.status.turns_done or 0"))


def test_a_first_hour(ui_nvim: tuple[Driver, Screen], tmp_path: Path) -> None:
    nvim, screen = ui_nvim
    assert nvim.lua("return {vim.o.columns, vim.o.lines, vim.o.cmdheight}") == [80, 24, 1]
    gate = tmp_path / "gate"
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {"
             " demo = {command = select(1, ...), args = {select(2, ...)},"
             "   env = {FAKE_START_GATE = select(3, ...)}}}})",
             sys.executable, str(SLOW_AGENT), str(gate))
    work = tmp_path / "work"
    (work / "code.py").write_text("def add(a, b):\n    return a + b\n")
    (work / "hello.py").write_text("print('hello')\n")
    nvim.nvim.command("edit code.py")
    code_win = int(nvim.lua("return vim.api.nvim_get_current_win()"))
    code = current_buf(nvim)
    tally = Tally(nvim, screen, int(nvim.lua("local m = 0; for _, w in ipairs("
                                             "vim.api.nvim_list_wins()) do m = math.max(m, w)"
                                             " end; return m")))

    # Open a chat: on screen at once, while the agent has not answered `initialize`.
    nvim.nvim.command("LouiseChat demo")
    screen.wait_for("… starting demo · ")
    assert nvim.lua("return vim.bo.filetype") == "louise_prompt"
    tally.look()
    # Type while it starts, send, and go back to the code.
    prompt = current_buf(nvim)
    tally.type("ihello while it starts<Esc>", prompt)
    tally.type("<CR>", prompt)
    nvim.lua("vim.api.nvim_set_current_win(...)", code_win)
    tally.type("Go# a note<Esc>", code)
    gate.write_text("go")
    nvim.wait(CHAT + " return s and (s.status.turns_done or 0) >= 1", timeout=60)
    assert "You wrote: *hello while it starts*" in nvim.chat_text()
    assert nvim.lua("return vim.api.nvim_get_current_win()") == code_win
    tally.type("Go# another note<Esc>", code)  # the chat did not take these keys
    tally.look()

    # A prompt, with the keys: back to the chat, type, send.
    nvim.nvim.command("LouiseChat")
    prompt = chat_prompt(nvim)
    before = turns(nvim)
    tally.type("iexplain the build<Esc>", prompt)
    tally.type("<CR>", prompt)
    nvim.wait(CHAT + " return (s.status.turns_done or 0) > ...", before, timeout=60)
    tally.look()

    # Allow an edit: the float asks, "1" allows, the tool finishes without an Enter.
    before = turns(nvim)
    tally.type("i/scenario edit<Esc>", prompt)
    tally.type("<CR>", prompt)
    nvim.wait("return require('louise.permission').current ~= nil", timeout=60)
    tally.look()
    nvim.permission_key("1")
    nvim.wait(CHAT + " return (s.status.turns_done or 0) > ...", before, timeout=60)
    tally.look()

    # Cancel a turn that runs on.
    nvim.nvim.command("LouiseChat")
    tally.type("i/scenario slow chunks=200<Esc>", prompt)
    tally.type("<CR>", prompt)
    nvim.wait_status("prompting")
    nvim.nvim.command("LouiseCancel")
    nvim.wait_status("ready", timeout=60)
    tally.look()

    # The limits, the log, the permissions list: each opened, read, closed with q.
    nvim.nvim.command("LouiseLimits")
    nvim.wait("local l = require('louise.limits'); return l.win and"
              " vim.api.nvim_win_is_valid(l.win)")
    tally.look()
    nvim.nvim.input("q")
    nvim.wait("local l = require('louise.limits'); return not vim.api.nvim_win_is_valid(l.win)")
    for command, name in (("LouiseLog", "louise%-log://"), ("LouisePermissions", "permission")):
        nvim.nvim.command(command)
        nvim.wait("return vim.api.nvim_buf_get_name(0):find(...) ~= nil", name)
        assert nvim.lua("return vim.api.nvim_win_get_width(0)") >= 40
        tally.look()
        nvim.nvim.input("q")
        nvim.wait("return vim.api.nvim_buf_get_name(0):find(...) == nil", name)
        tally.look()

    # Resume: the picker lists the sessions (looked at, nothing picked).
    stub_selects(nvim, [])
    nvim.nvim.command("LouiseResume")
    listed: Any = nvim.wait("return _G.louise_test_selects and _G.louise_test_selects[1]",
                            timeout=60)
    assert any("explain the build" in item or "hello while it starts" in item
               for item in listed["items"]), listed
    tally.look()

    # Toggle it away and back, then close it.
    nvim.nvim.command("LouiseToggle")
    nvim.wait("return #vim.api.nvim_tabpage_list_wins(0) == 1")
    tally.look()
    nvim.nvim.command("LouiseToggle")
    nvim.wait("return vim.bo.filetype == 'louise_prompt'")
    tally.look()
    nvim.nvim.command("LouiseClose")
    nvim.wait("return next(require('louise.chat').chats) == nil", timeout=60)
    tally.look()

    assert screen.hit_enter == 0, screen.hit_enter_screens
    assert tally.modes == []
    assert tally.stray_keys == []
    assert tally.narrow == {}
    assert (work / "code.py").read_text() == "def add(a, b):\n    return a + b\n"  # unsaved
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", code) == [
        "def add(a, b):", "    return a + b", "# a note", "# another note"]


@pytest.fixture(autouse=True)
def _screen_after(ui_nvim: tuple[Driver, Screen]) -> Iterator[None]:
    """The last screen, in the report of a failure."""
    yield
    print("the screen at the end:\n" + ui_nvim[1].text())
