"""End to end (issue 23, item 13): reading and adding context. A finished message conceals
its markdown markup in the transcript window; `:LouiseAdd file` picks a workspace file
(or takes a path, with completion); `/` completion offers the agent's commands in a
resumed session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat
from tests.e2e.test_sign_in import stub_selects
from tests.integration.agents import FAKES

pytestmark = pytest.mark.e2e
MARKUP_LINE = "- **bold**, *italic* and `inline code`"


def screen_row(nvim: Driver, line: str) -> str:
    """What the transcript window shows of its first line reading `line` (put at the top
    of the window, the window's cursor one line below)."""
    return str(nvim.lua("""
      local c = require('louise.chat'); local s = c.chats[c.last]
      local win = vim.fn.win_findbuf(s.buf)[1]
      local lnum
      for i, l in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)) do
        if l == ... then lnum = i break end
      end
      vim.fn.win_execute(win, 'normal! ' .. lnum .. 'Gztj')
      vim.cmd('redraw!')
      local pos = vim.fn.screenpos(win, lnum, 1)
      local out = {}
      for col = pos.col, pos.col + vim.api.nvim_win_get_width(win) - 1 do
        out[#out + 1] = vim.fn.screenstring(pos.row, col)
      end
      return vim.trim(table.concat(out))""", line))


def test_a_finished_message_conceals_its_markup(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.run_prompt("hello")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return #vim.api.nvim_buf_get_extmarks(s.buf,"
              " require('louise.chat.markdown').conceal_ns, 0, -1, {}) > 0")
    assert nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
                    " return vim.wo[vim.fn.win_findbuf(s.buf)[1]].conceallevel") == 2
    assert screen_row(nvim, MARKUP_LINE) == "- bold, italic and inline code"
    assert screen_row(nvim, "- a [link](https://agentclientprotocol.com)") == "- a link"
    # Fenced code keeps what it holds.
    assert screen_row(nvim, '    return f"Hello, {name}!"') == 'return f"Hello, {name}!"'


def chips(nvim: Driver) -> list[str]:
    return list(nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
                         " return vim.tbl_map(function(chip) return chip.path end,"
                         " s.context or {})"))


def test_add_file_picks_a_workspace_file_or_takes_a_path(nvim: Driver) -> None:
    cwd = str(nvim.lua("return vim.fn.getcwd()"))
    nvim.lua("vim.fn.mkdir('src/deep', 'p'); vim.fn.writefile({'x = 1'}, 'src/deep/app.py');"
             " vim.fn.mkdir('node_modules/pkg', 'p'); vim.fn.writefile({''},"
             " 'node_modules/pkg/index.js'); vim.fn.mkdir('.git', 'p');"
             " vim.fn.writefile({''}, '.git/config')")
    open_chat(nvim)  # the cursor is in the chat's prompt: no file of its own
    stub_selects(nvim, [2])
    nvim.nvim.command("LouiseAdd file")
    offered = nvim.lua("return _G.louise_test_selects[1].items")
    assert offered == ["README.md", "src/deep/app.py"]  # no dependency or hidden files
    bounded = nvim.lua("return {require('louise.chat.attach').workspace_files(vim.fn.getcwd(), 1)}")
    assert bounded == [["README.md"], True]  # cut at its bound, and says so
    assert chips(nvim) == [f"{cwd}/src/deep/app.py"]
    nvim.nvim.command("LouiseAdd file README.md")
    assert chips(nvim)[-1] == f"{cwd}/README.md"
    completed = nvim.lua("return vim.fn.getcompletion('LouiseAdd file sr', 'cmdline')")
    assert completed == ["src/"]
    nvim.submit("what is in these files?")
    assert "@app.py" in nvim.chat_text() and "@README.md" in nvim.chat_text()


def test_slash_completion_after_a_resume(nvim: Driver, tmp_path: Path) -> None:
    """An agent that sends its commands only for a new session (as claude-agent-acp's
    shape, tests/fakes/attach_agent.py): closed and opened again, `/` still offers them."""
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {fake = {"
             " command = vim.env.LOUISE_PYTHON, args = {select(1, ...)},"
             " env = {FAKE_STORE = select(2, ...), FAKE_CAPS = 'load', FAKE_COMMANDS = '1'}}},"
             " default_agent = 'fake'})", str(FAKES / "attach_agent.py"),
             str(tmp_path / "store.json"))
    key = open_chat(nvim)
    words = ("local c = require('louise.chat'); local s = c.chats[...]; if not s then"
             " return nil end; return vim.tbl_map(function(i) return i.word end,"
             " require('louise.chat.complete').items(s, '/'))")
    nvim.wait(f"local w = (function(...) {words} end)(...); return w and #w > 0", key)
    nvim.run_prompt("remember me", key)
    nvim.nvim.command("LouiseClose!")
    nvim.wait("return require('louise.chat').chats[...] == nil", key)
    cwd = str(nvim.lua("return vim.fn.getcwd()"))
    nvim.lua("require('louise.engine').send('load', {agent = 'fake', id = select(1, ...),"
             " cwd = select(2, ...)})", key.split(":", 1)[1], cwd)
    nvim.wait_status("ready", key)
    assert "remember me" in nvim.chat_text(key)  # the history, replayed
    assert nvim.lua(f"return (function(...) {words} end)(...)", key) == ["/review", "/compact"]
