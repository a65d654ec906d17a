"""Permission prompts as a person meets them: keys, queue, diff tab, fail closed."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e

WAITING = "return require('louise.permission').current ~= nil"
# The winbar of window `w` as it is drawn (a diff window's is an expression).
WINBAR = ("vim.api.nvim_eval_statusline(vim.wo[w].winbar, {winid = w, use_winbar = true,"
          " maxwidth = vim.api.nvim_win_get_width(w)}).str")


def float_lines(nvim: Driver) -> list[str]:
    return list(nvim.lua("local p = require('louise.permission');"
                         " return p.buf and vim.api.nvim_buf_get_lines(p.buf, 0, -1, false) or {}"))


def work_dir(nvim: Driver) -> Path:
    return Path(str(nvim.lua("return vim.fn.getcwd()")))


def turn_done(nvim: Driver, key: str | None = None) -> None:
    nvim.wait("local c = require('louise.chat'); local s = c.chats[... or c.last];"
              " return s.status.turns_done == s.status.turn and s.status.turn > 0", key)


def test_the_float_shows_every_option_and_q_cancels(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    lines = float_lines(nvim)
    assert lines[0].startswith("Permission 1 of 1 · demo")
    assert "edit: Edit hello.py" in lines
    options = [line.strip() for line in lines if line.strip()[:1].isdigit()]
    assert options == ["1  ✓ Allow once", "2  ✓✓ Always allow", "3  ✗ Reject",
                       "4  ✗✗ Always reject"]
    assert any("d diff" in line for line in lines)
    assert nvim.status() == "waiting_permission"
    nvim.wait("local c = require('louise.chat'); return vim.tbl_contains("
              "vim.api.nvim_buf_get_lines(c.chats[c.last].buf, 0, -1, false),"
              " '! waiting for permission (:LouisePermission shows it)')")
    assert "waiting for permission" in nvim.lua(
        "local c = require('louise.chat'); return c.winbar(c.chats[c.last], 200)")
    nvim.permission_key("q")
    turn_done(nvim)
    assert not (work_dir(nvim) / "hello.py").exists(), "q never allows"
    assert "! waiting for permission" not in nvim.chat_text()  # gone once answered
    assert nvim.lua("return require('louise.permission').win") is None


def test_the_prompt_survives_leaving_it_and_louisepermission_brings_it_back(
    nvim: Driver,
) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    nvim.lua("vim.api.nvim_win_close(require('louise.permission').win, true)")
    nvim.nvim.command("wincmd t")
    assert nvim.status() == "waiting_permission"  # not answered by going away
    nvim.nvim.command("LouisePermission")
    nvim.wait("local p = require('louise.permission'); return p.win and"
              " vim.api.nvim_get_current_win() == p.win")
    nvim.permission_key("1")
    turn_done(nvim)
    assert (work_dir(nvim) / "hello.py").exists()


def test_cancelling_the_turn_closes_the_prompt_by_itself(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    nvim.lua("local c = require('louise.chat'); require('louise.engine').send('cancel',"
             " {key = c.last})")
    nvim.wait("return require('louise.permission').current == nil")
    turn_done(nvim)
    assert "⊘ cancelled" in nvim.chat_text()
    assert not (work_dir(nvim) / "hello.py").exists()


def test_requests_from_two_sessions_queue_one_at_a_time(nvim: Driver) -> None:
    first = open_chat(nvim)
    nvim.nvim.command("LouiseNew")
    second = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                           first))
    nvim.wait_status("ready", second)
    nvim.prompt("/scenario edit path=one.py", first)
    nvim.wait(WAITING)
    nvim.prompt("/scenario edit path=two.py", second)
    nvim.wait("return require('louise.permission').queue == 2")
    assert float_lines(nvim)[0].startswith("Permission 1 of 2")
    shown = nvim.lua("return require('louise.permission').current.session")
    assert shown == first
    nvim.permission_key("1")
    nvim.wait("local p = require('louise.permission'); return p.current and"
              " p.current.session == ...", second)
    nvim.permission_key("3")  # reject the second
    turn_done(nvim, first)
    turn_done(nvim, second)
    assert (work_dir(nvim) / "one.py").exists()
    assert not (work_dir(nvim) / "two.py").exists()


def test_the_diff_tab_shows_every_file_of_the_request(nvim: Driver) -> None:
    (work_dir(nvim) / "src").mkdir()
    # The agent's old text is in the file, below a line it does not know of.
    (work_dir(nvim) / "src" / "app.py").write_text("# mine\nfrom greet import greet\n\ngreet()\n")
    nvim.lua("vim.o.columns = 300")  # every winbar whole, notes included
    open_chat(nvim)
    nvim.prompt("/scenario multi_edit")
    nvim.wait(WAITING)
    nvim.permission_key("d")
    nvim.wait("return vim.wo.diff == true")
    seen = []
    for _ in range(3):
        names = nvim.lua("local out = {} for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0))"
                         " do table.insert(out, vim.api.nvim_buf_get_name("
                         "vim.api.nvim_win_get_buf(w)) .. ' ' .. " + WINBAR + ") end"
                         " return out")
        seen.append(" ".join(names))
        nvim.nvim.input("]f")
        nvim.wait("return vim.wo.diff == true")
    joined = "\n".join(seen)
    for path in ("src/app.py", "README.md", "docs/CHANGES.md"):
        assert path in joined, (path, seen)
    assert "(new file)" in joined
    readme = next(line for line in seen if "README.md" in line)
    assert "only its snippet is shown" in readme and "(snippet)" in readme, readme
    panes = nvim.lua("local out = {}; for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
                     " local n = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w))"
                     " if n:find('app.py', 1, true) then out[n:match('^louise%-(%a+)')] ="
                     " vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false)"
                     " end end; return out")
    assert panes["current"] == ["# mine", "from greet import greet", "", "greet()"], \
        "the left side is the file as it is now"
    assert panes["proposed"] == ["# mine", "from greet import greet", "", 'greet("louise")'], \
        "the right side is the agent's edit put onto it"
    nvim.nvim.input("1")  # answer from the diff tab
    turn_done(nvim)
    assert (work_dir(nvim) / "docs" / "CHANGES.md").exists()


def test_agent_exit_closes_the_prompt_and_nothing_is_written(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait(WAITING)
    # Kill the agent (a child of louise's Python process) as a crash would. Only the agent:
    # the engine's other children (a checkpoint's git) come and go on their own.
    engine_pid = int(nvim.lua("return require('louise.engine').pid"))
    agents = [int(child) for child in _children_of(engine_pid)
              if b"louise.demo_agent" in _cmdline(int(child))]
    assert agents, "the demo agent runs as a child of louise's Python process"
    for agent in agents:
        os.kill(agent, signal.SIGKILL)
    nvim.wait("return require('louise.permission').current == nil")
    nvim.wait_status("error")
    assert not (work_dir(nvim) / "hello.py").exists()


def test_a_coloured_terminal_renders_and_its_exit_code_reaches_the_agent(nvim: Driver) -> None:
    script = work_dir(nvim) / "colour.sh"
    script.write_text("#!/bin/sh\nprintf '\\033[31mred alert\\033[0m\\n'\nexit 3\n")
    script.chmod(0o755)
    open_chat(nvim)
    nvim.prompt(f"/scenario execute cmd={script}")
    nvim.wait(WAITING)  # the demo agent asks before it runs anything
    nvim.permission_key("1")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    text = nvim.chat_text()
    assert "exited with 3" in text  # the exit code reached the agent
    tool = [line for line in nvim.chat_lines() if "colour.sh" in line and "execute:" in line]
    assert tool and tool[0].endswith("exit 3"), tool
    nvim.nvim.command("LouiseTerminal")
    nvim.wait("return vim.bo.buftype == 'terminal'")
    shown = "\n".join(nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))
    assert "red alert" in shown and "\x1b[31m" not in shown  # colours rendered, not raw
    assert nvim.wait("local c = require('louise.chat'); local term = require('louise.terminal');"
                     " return term.markers(term.latest[c.last]).exit") == "[exit 3]"


def _cmdline(pid: int) -> bytes:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _children_of(pid: int) -> list[str]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(stat.parent.name)
    return out


def test_a_write_and_a_command_the_agent_did_not_ask_for_are_asked_for_first(
        nvim: Driver) -> None:
    script = Path(__file__).resolve().parents[1] / "fakes" / "script_agent.py"
    notes = work_dir(nvim) / "notes.txt"
    notes.write_text("old line\n")
    marker = work_dir(nvim) / "ran"
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {script = {"
             " command = select(1, ...), args = {(select(2, ...))}}}})",
             sys.executable, str(script))
    nvim.nvim.command("LouiseChat script")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    steps = [{"request": "fs/write_text_file", "params": {"path": str(notes),
                                                          "content": "new line\n"}},
             {"request": "terminal/create", "params": {"command": "touch",
                                                       "args": [str(marker)]}}]
    nvim.prompt(json.dumps(steps), key)
    nvim.wait(WAITING)
    lines = float_lines(nvim)
    assert "edit: Write notes.txt (the agent did not ask)" in lines, lines
    assert any(line.strip() == "-old line" for line in lines), lines  # the write's diff
    assert any(line.strip() == "+new line" for line in lines), lines
    nvim.permission_key("3")  # reject
    nvim.wait("local p = require('louise.permission'); return p.current ~= nil and"
              " vim.tbl_contains(vim.api.nvim_buf_get_lines(p.buf, 0, -1, false),"
              " 'execute: Run `touch " + str(marker) + "` (the agent did not ask)')")
    nvim.permission_key("3")
    turn_done(nvim, key)
    assert notes.read_text() == "old line\n" and not marker.exists()
    assert nvim.chat_text(key).count('"code": -32001') == 2  # the agent was told, twice


def test_a_big_diff_with_many_changes_opens_as_one_unified_diff(nvim: Driver) -> None:
    """Issue 14 item 4: Neovim's diff mode costs about lines x changes to set up (half a
    second for 30,000 lines with 4,000 changes), so such a file is shown as one unified
    diff (vim.diff); a small one stays side by side."""
    big = work_dir(nvim) / "big.py"
    old = [f"value_{n} = {n}" for n in range(30_000)]
    big.write_text("\n".join(old) + "\n")
    new = [f"changed_{n} = {n}" if n % 7 == 3 else line for n, line in enumerate(old)]
    small = work_dir(nvim) / "small.py"
    small.write_text("a\nb\n")
    # The engine sends whole files (the edit put onto the text as it is now).
    nvim.lua("local p = require('louise.permission'); p.current = {id = 1, options ="
             " {{id = 'allow', name = 'Allow'}}, diffs = {"
             " {path = select(1, ...), old = select(4, ...), new = select(2, ...), mode = 'diff'},"
             " {path = select(3, ...), old = 'a\\nb\\n', new = 'a\\nc\\n', mode = 'diff'}}};"
             " p.diff()", str(big), "\n".join(new) + "\n", str(small), "\n".join(old) + "\n")
    nvim.wait("return vim.api.nvim_buf_get_name(0):find('louise-diff://', 1, true) ~= nil")
    assert nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 1
    assert nvim.lua("return vim.wo.diff") is False
    assert "4286 changes in 30000 lines" in nvim.lua(
        "local w = vim.api.nvim_get_current_win(); return " + WINBAR)
    lines = nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
    assert "-value_3 = 3" in lines and "+changed_3 = 3" in lines
    assert "+changed_29998 = 29998" in lines, "the whole file, not a clipped preview"
    nvim.nvim.input("]f")
    nvim.wait("return vim.wo.diff == true")
    assert nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 2
