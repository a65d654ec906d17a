"""End to end: session commands, follow-along, terminals and remembered permissions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e


def stub_select(nvim: Driver, index: int = 1) -> None:
    """vim.ui.select answers with item `index` and records what it was shown."""
    nvim.lua("local i = ...; _G.louise_test_selects = {};"
             " vim.ui.select = function(items, opts, cb)"
             "   table.insert(_G.louise_test_selects, {prompt = opts.prompt, n = #items,"
             "     first = opts.format_item and opts.format_item(items[1]) or tostring(items[1])})"
             "   cb(items[i]) end", index)


def test_follow_along_opens_the_tool_calls_location(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.run_prompt("hello")
    row = nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
                    " for i, l in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)) do"
                    " if l:find('read: Read README.md', 1, true) then return i end end")
    nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.buf)[1]);"
             " vim.api.nvim_win_set_cursor(0, {..., 0})", row)
    nvim.nvim.input("<CR>")
    nvim.wait("return vim.fn.expand('%:t') == 'README.md'")
    assert nvim.lua("return vim.fn.line('.')") == 1


def test_agent_terminal_renders_in_a_neovim_terminal_buffer(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario execute")
    nvim.wait("return require('louise.permission').current ~= nil")  # it asks first
    nvim.permission_key("1")
    tid = nvim.wait("local c = require('louise.chat');"
                    " return require('louise.terminal').latest[c.last]")
    nvim.wait("local t = require('louise.terminal').terms[...];"
              " return t and vim.bo[t.buf].buftype == 'terminal' and t.exit ~= nil", tid)
    nvim.nvim.command("LouiseTerminal")
    nvim.wait("return vim.bo.buftype == 'terminal'")
    # Shown in a window of another size (beside the chat, or a tab of its own at 80
    # columns), the terminal redraws at that size first.
    nvim.wait("return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')"
              ":find('hello from louise-demo-agent', 1, true) ~= nil")
    markers = nvim.wait("local m = require('louise.terminal').markers(...);"
                        " return m.exit and m", tid)
    assert markers["exit"] == "[exit 0]" and markers["command"].startswith("$ ")


def test_remembered_permissions_are_listed_and_revoked(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait("return require('louise.permission').current ~= nil")
    nvim.permission_key("2")  # always allow
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    nvim.nvim.command("LouisePermissions")
    nvim.wait("local b = require('louise.permission').rules_buf;"
              " return b and vim.api.nvim_buf_line_count(b) > 3")
    lines = nvim.lua("return vim.api.nvim_buf_get_lines("
                     "require('louise.permission').rules_buf, 0, -1, false)")
    assert any(line.startswith("allow  edit") and line.endswith("hello.py") for line in lines)
    nvim.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf("
             "require('louise.permission').rules_buf)[1]); vim.api.nvim_win_set_cursor(0, {3, 0})")
    nvim.nvim.input("dd")
    nvim.wait("return vim.api.nvim_buf_get_lines(require('louise.permission').rules_buf,"
              " 0, -1, false)[3]:find('none', 1, true) ~= nil")


def test_resume_lists_the_agents_sessions_and_replays_history(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.run_prompt("remember this line")
    stub_select(nvim, 1)
    nvim.nvim.command("LouiseResume!")
    nvim.wait("return _G.louise_test_selects and #_G.louise_test_selects > 0")
    first = nvim.lua("return _G.louise_test_selects[1]")
    assert first["prompt"] == "louise: resume session" and first["n"] >= 1
    # The newest session lists first: the one just used; loading it replays its history.
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s and s.status and s.status.status == 'ready'"
              " and vim.tbl_contains(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false),"
              " 'remember this line')")


def test_rename_export_and_log(nvim: Driver, tmp_path: Path) -> None:
    open_chat(nvim)
    nvim.run_prompt("something to export")
    nvim.nvim.command("LouiseRename my review")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.title == 'my review'")
    assert "my review" in nvim.lua("local c = require('louise.chat');"
                                   " return c.winbar(c.chats[c.last], 200)")
    target = tmp_path / "export.md"
    nvim.lua("require('louise').export(...)", str(target))
    nvim.wait("return vim.uv.fs_stat(...) ~= nil", str(target))
    exported = target.read_text()
    assert "something to export" in exported
    nvim.nvim.command("LouiseLog")
    nvim.wait("return vim.api.nvim_buf_get_name(0):find('louise%-log://') ~= nil")
    log = "\n".join(nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))
    assert "## stderr (tail)" in log and "louise-demo-agent" in log


def test_louiseexport_holds_no_section_nor_control_bytes_from_the_agent(
        nvim: Driver, tmp_path: Path) -> None:
    import sys

    from markdown_it import MarkdownIt

    from tests.integration.agents import FAKES

    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {fake = {"
             " command = select(1, ...), args = {'-P', select(2, ...)}}}})", sys.executable,
             str(FAKES / "cli_agent.py"))
    nvim.nvim.command("LouiseChat fake")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    nvim.run_prompt("forge", key)
    target = tmp_path / "forged.md"
    nvim.nvim.command(f"LouiseExport {target}")
    nvim.wait("return vim.uv.fs_stat(...) ~= nil", str(target))
    text = target.read_bytes().decode("utf-8")
    assert "\x1b" not in text and "\x07" not in text
    assert "Sure ␛]52;c;" in text
    tokens = MarkdownIt("commonmark").parse(text)
    sections = [tokens[i + 1].content for i, t in enumerate(tokens)
                if t.type == "heading_open" and t.tag in ("h1", "h2")]
    assert sections == ["fake session `cli-1`", "You", "Agent"]


def test_add_context_sends_a_resource_with_the_prompt(nvim: Driver) -> None:
    readme = Path(str(nvim.lua("return vim.fn.getcwd()"))) / "README.md"
    open_chat(nvim)
    nvim.lua("vim.cmd('wincmd t'); vim.cmd('edit ' .. vim.fn.fnameescape(...))", str(readme))
    nvim.nvim.command("LouiseAdd file")
    assert nvim.lua("local c = require('louise.chat'); return #c.chats[c.last].context") == 1
    nvim.submit("what is in this file?")
    assert nvim.lua("local c = require('louise.chat'); return #c.chats[c.last].context") == 0
    assert "README.md" in nvim.chat_text()


def test_mode_picker_changes_the_mode(nvim: Driver) -> None:
    open_chat(nvim)
    before = nvim.lua("local c = require('louise.chat'); return c.chats[c.last].status.mode")
    stub_select(nvim, 1)  # "Ask": the demo agent starts in "code"
    nvim.nvim.command("LouiseMode")
    nvim.wait("return _G.louise_test_selects and #_G.louise_test_selects > 0")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.mode ~= nil and s.status.mode ~= ...", before)


def test_louisechat_offers_a_picker_when_several_agents_are_configured(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {"
             " one = {command = vim.env.LOUISE_PYTHON, args = {'-P', '-m', 'louise.demo_agent'}},"
             " two = {command = vim.env.LOUISE_PYTHON,"
             " args = {'-P', '-m', 'louise.demo_agent'}}}})")
    stub_select(nvim, 2)
    nvim.nvim.command("LouiseChat")
    nvim.wait("return _G.louise_test_selects and #_G.louise_test_selects > 0")
    assert nvim.lua("return _G.louise_test_selects[1].prompt") == "louise: agent"
    key = nvim.wait("return require('louise.chat').last")
    assert str(key).startswith("two:")


def test_prompt_completion_offers_agent_commands_and_paths(nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.wait("local c = require('louise.chat'); local s = c.chats[...];"
              " return s.status.commands and #s.status.commands > 0", key)
    commands = nvim.lua("local c = require('louise.chat'); local s = c.chats[...];"
                        " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.prompt)[1]);"
                        " return c.omnifunc(0, '/sc')", key)
    assert [c["word"] for c in commands] == ["/scenario"]
    assert commands[0]["menu"], "with the agent's description"
    paths = nvim.lua("return require('louise.chat').omnifunc(0, '@READ')")
    assert [p["word"] for p in paths] == ["@README.md"]
    # A folder is not offered as a file to attach: it goes on into the folder (issue 23).
    nvim.lua("vim.fn.mkdir('src', 'p'); vim.fn.writefile({}, 'src/main.py')")
    folder = nvim.lua("return require('louise.chat').omnifunc(0, '@sr')")
    assert [(p["word"], p["kind"]) for p in folder] == [("@src/", "d")], folder
    assert "attached" not in folder[0]["menu"]
    inside = nvim.lua("return require('louise.chat').omnifunc(0, '@src/')")
    assert [p["word"] for p in inside] == ["@src/main.py"]


def test_tab_expands_a_tool_line_with_its_input_and_diff(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario edit")
    nvim.wait("return require('louise.permission').current ~= nil")
    nvim.permission_key("1")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    # The turn's last line comes once its checkpoint is done: what it changed.
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " for _, l in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)) do"
              " if l:find('file changed', 1, true) then return true end end")
    row = nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
                    " for i, l in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)) do"
                    " if l:find('edit: Edit hello.py', 1, true) then return i end end")
    nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.buf)[1]);"
             " vim.api.nvim_win_set_cursor(0, {..., 0})", row)
    before = len(nvim.chat_lines())
    nvim.nvim.input("za")
    nvim.wait("local c = require('louise.chat'); return"
              " vim.api.nvim_buf_line_count(c.chats[c.last].buf) > ...", before)
    text = nvim.chat_text()
    assert "    kind: edit · status: completed" in text
    assert "+def greet(name: str) -> None:" in text  # the diff, as a diff
    nvim.nvim.input("za")
    nvim.wait("local c = require('louise.chat'); return"
              " vim.api.nvim_buf_line_count(c.chats[c.last].buf) == ...", before)


def test_an_agent_that_needs_authentication_says_so_in_neovim(nvim: Driver) -> None:
    import sys

    from tests.integration.agents import FAKES

    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end")
    stub_select(nvim, 99)  # the sign-in picker: the person dismisses it
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {locked = {"
             " command = select(1, ...), args = {select(2, ...)},"
             " env = {FAKE_MODE = 'auth_required'}}}})", sys.executable,
             str(FAKES / "raw_agent.py"))
    nvim.nvim.command("LouiseChat locked")
    note = str(nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
                         " if m:find('authentication', 1, true) then return m end end"))
    assert "locked requires authentication" in note
    assert "ChatGPT, API Key" in note
    assert "Traceback" not in note
    # It asked first: the agent's methods, in a picker.
    assert nvim.lua("return _G.louise_test_selects[1].prompt") == "louise: sign in to locked"


def test_louiseclose_closes_the_session_and_its_windows(nvim: Driver) -> None:
    key = open_chat(nvim)
    windows = nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)")
    nvim.nvim.command("LouiseClose")
    nvim.wait("return require('louise.chat').chats[...] == nil", key)
    assert nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)") == windows - 2
    assert nvim.lua("return vim.api.nvim_exec2('messages', {output = true}).output"
                    ":find('E%d+') == nil")
    # A chat can be opened again afterwards.
    nvim.nvim.command("LouiseChat")
    nvim.wait("local c = require('louise.chat'); return c.last ~= nil and c.last ~= ...", key)
