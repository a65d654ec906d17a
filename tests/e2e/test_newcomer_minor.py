"""Issue 16, a newcomer's first hour, the minor items: completion sources, context chips,
views beside the chat, a broken layout restored, :LouiseChat's choices, names that stay,
a crash in one line, send on enter, the diff tab's labels, the Python side restarting.
End to end in a real headless Neovim with the real demo agent (the other items:
test_newcomer.py, whose helpers these tests use).
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat
from tests.e2e.test_newcomer import CHAT_WIN, WAITING, capture_notes, notes

pytestmark = pytest.mark.e2e


# --------------------------------------------------------------------------- minor items


def test_completion_sources_for_nvim_cmp_and_blink_offer_described_commands(
    nvim: Driver,
) -> None:
    key = open_chat(nvim)
    nvim.wait("local s = require('louise.chat').chats[...];"
              " return type(s.status.command_info) == 'table' and #s.status.command_info > 0",
              key)
    nvim.lua("local s = require('louise.chat').chats[...];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.prompt)[1]);"
             " vim.api.nvim_buf_set_lines(s.prompt, 0, -1, false, {'please /sc'});"
             " vim.wo.virtualedit = 'onemore'; vim.api.nvim_win_set_cursor(0, {1, 10})", key)
    cmp_items = nvim.lua("local out; local src = require('louise.cmp').new();"
                         " assert(src:is_available());"
                         " src:complete({}, function(r) out = r end); return out")
    blink_items = nvim.lua("local out; local src = require('louise.blink').new();"
                           " assert(src:enabled());"
                           " src:get_completions({}, function(r) out = r end); return out")
    for result in (cmp_items, blink_items):
        items = result["items"]
        assert [i["label"] for i in items] == ["/scenario"], items
        assert items[0]["documentation"], "described"
        edit = items[0]["textEdit"]
        assert edit["newText"] == "/scenario"
        assert edit["range"]["start"] == {"line": 0, "character": 7}  # replaces "/sc"
        assert edit["range"]["end"] == {"line": 0, "character": 10}


def test_context_chips_refuse_nothing_and_can_be_dropped(nvim: Driver) -> None:
    capture_notes(nvim)
    open_chat(nvim)
    readme = str(nvim.lua("return vim.fn.getcwd()")) + "/README.md"
    nvim.lua("vim.cmd('wincmd t'); vim.cmd('edit ' .. vim.fn.fnameescape(...))", readme)
    nvim.nvim.command("LouiseAdd selection")  # no selection was ever made here
    nvim.nvim.command("LouiseAdd diagnostics")  # there are none
    nvim.nvim.command("enew")
    nvim.nvim.command("LouiseAdd buffer")  # [No Name], empty
    said = "\n".join(notes(nvim))
    assert "no selection" in said and "no diagnostics" in said and "empty" in said, said
    assert nvim.lua("local c = require('louise.chat');"
                    " return #(c.chats[c.last].context or {})") == 0
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'scratch text'})")
    nvim.nvim.command("LouiseAdd buffer")
    nvim.lua("vim.cmd('edit ' .. vim.fn.fnameescape(...))", readme)
    for _ in range(6):
        nvim.nvim.command("LouiseAdd file")
    pwin = nvim.lua("local c = require('louise.chat');"
                    " return vim.fn.win_findbuf(c.chats[c.last].prompt)[1]")
    bar = str(nvim.lua("return vim.wo[...].winbar", pwin))
    assert "[1 buffer [No Name]]" in bar
    assert "+" in bar, "chips that do not fit are counted"
    width = nvim.lua("local w = ...; return vim.api.nvim_eval_statusline(vim.wo[w].winbar,"
                     " {winid = w, use_winbar = true}).width", pwin)
    assert width <= nvim.lua("return vim.api.nvim_win_get_width(...)", pwin)
    nvim.nvim.command("LouiseDrop 1")
    assert nvim.lua("local c = require('louise.chat'); return #c.chats[c.last].context") == 6
    nvim.nvim.command("LouiseDrop!")
    assert nvim.lua("local c = require('louise.chat'); return #c.chats[c.last].context") == 0


def tab_layout(nvim: Driver) -> list[tuple[str, int, int]]:
    """(buffer name, width, height) of every ordinary window of the tab."""
    return [tuple(w) for w in nvim.lua(
        "local out = {} for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
        " if vim.api.nvim_win_get_config(w).relative == '' then table.insert(out,"
        " {vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)),"
        " vim.api.nvim_win_get_width(w), vim.api.nvim_win_get_height(w)}) end end return out")]


def test_files_logs_and_exports_open_beside_the_chat_and_q_closes_them(nvim: Driver) -> None:
    nvim.nvim.command("set columns=160 lines=45")
    open_chat(nvim)
    nvim.run_prompt("hello")
    chat_width = nvim.lua("return vim.api.nvim_win_get_width(...)", nvim.lua(CHAT_WIN))
    nvim.nvim.command("LouiseLog")
    nvim.wait("return vim.api.nvim_buf_get_name(0):find('louise%-log://') ~= nil")
    log_win = nvim.lua("return vim.api.nvim_get_current_win()")
    assert nvim.lua("return vim.api.nvim_win_get_width(0)") < 160, "not a full-width split"
    assert nvim.lua("return vim.api.nvim_win_get_width(...)", nvim.lua(CHAT_WIN)) == chat_width
    nvim.nvim.input("q")
    nvim.wait("return not vim.api.nvim_win_is_valid(...)", log_win)
    tabs = nvim.lua("return #vim.api.nvim_list_tabpages()")
    nvim.nvim.command("LouiseExport")
    nvim.wait("return vim.api.nvim_buf_get_name(0):find('louise%-export://') ~= nil")
    assert nvim.lua("return #vim.api.nvim_list_tabpages()") == tabs + 1
    nvim.nvim.input("q")
    nvim.wait("return #vim.api.nvim_list_tabpages() == ...", tabs)


def test_louisechat_restores_a_broken_layout(nvim: Driver) -> None:
    nvim.nvim.command("set columns=160 lines=45")
    key = open_chat(nvim)
    nvim.lua("local s = require('louise.chat').chats[...];"
             " vim.api.nvim_win_close(vim.fn.win_findbuf(s.prompt)[1], true)", key)
    nvim.nvim.command("LouiseChat")
    nvim.wait("local s = require('louise.chat').chats[...];"
              " return #vim.fn.win_findbuf(s.prompt) == 1", key)
    nvim.lua("local s = require('louise.chat').chats[...];"
             " vim.api.nvim_win_close(vim.fn.win_findbuf(s.buf)[1], true)", key)
    nvim.nvim.command("wincmd t")
    nvim.nvim.command("LouiseChat")
    nvim.wait("local s = require('louise.chat').chats[...];"
              " return #vim.fn.win_findbuf(s.buf) == 1", key)
    # The transcript sits above its prompt, 80 columns wide, the prompt 6 lines high.
    layout = nvim.lua("local s = require('louise.chat').chats[...];"
                      " local w, p = vim.fn.win_findbuf(s.buf)[1], vim.fn.win_findbuf(s.prompt)[1];"
                      " return {vim.api.nvim_win_get_position(w), vim.api.nvim_win_get_position(p),"
                      " vim.api.nvim_win_get_width(w), vim.api.nvim_win_get_height(p)}", key)
    (trow, tcol), (prow, pcol), width, height = layout
    assert tcol == pcol and trow < prow and width == 80 and height == 6, layout
    # A terminal made narrow and wide again: the chat gets its width back.
    nvim.nvim.command("set columns=70")
    nvim.nvim.command("set columns=160")
    nvim.wait("local s = require('louise.chat').chats[...];"
              " return vim.api.nvim_win_get_width(vim.fn.win_findbuf(s.buf)[1]) == 80", key)


def test_louisechat_reopens_the_open_session_after_louiseclose(nvim: Driver) -> None:
    first = open_chat(nvim)
    nvim.nvim.command("LouiseNew")
    second = str(nvim.wait("local c = require('louise.chat'); return c.last ~= ... and c.last",
                           first))
    nvim.wait_status("ready", second)
    nvim.nvim.command("LouiseClose")
    nvim.wait("return require('louise.chat').chats[...] == nil", second)
    nvim.nvim.command("LouiseChat")
    nvim.wait("local c = require('louise.chat'); return c.last == ... and"
              " #vim.fn.win_findbuf(c.chats[...].buf) == 1", first)
    assert sorted(nvim.lua("return vim.tbl_keys(require('louise.chat').chats)")) == [first]


def test_louisechat_uses_a_named_default_agent_without_a_picker(nvim: Driver) -> None:
    nvim.lua("_G.louise_test_selects = {}; vim.ui.select = function(items, opts, cb)"
             " table.insert(_G.louise_test_selects, opts.prompt) end")
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, default_agent = 'two',"
             " agents = {"
             " one = {command = vim.env.LOUISE_PYTHON, args = {'-m', 'louise.demo_agent'}},"
             " two = {command = vim.env.LOUISE_PYTHON, args = {'-m', 'louise.demo_agent'}}}})")
    nvim.nvim.command("LouiseChat")
    key = str(nvim.wait("return require('louise.chat').last"))
    assert key.startswith("two:")
    assert not nvim.lua("return _G.louise_test_selects")


def test_renamed_and_resumed_sessions_show_their_names(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.run_prompt("a session to find again")
    nvim.nvim.command("LouiseRename my review")
    nvim.wait("local c = require('louise.chat');"
              " return c.chats[c.last].status.title == 'my review'")
    nvim.lua("_G.louise_test_selects = {}; vim.ui.select = function(items, opts, cb)"
             " for _, item in ipairs(items) do table.insert(_G.louise_test_selects,"
             " opts.format_item(item)) end end")
    nvim.nvim.command("LouiseSwitch")
    nvim.wait("return #_G.louise_test_selects > 0")
    assert any("my review" in line for line in nvim.lua("return _G.louise_test_selects"))
    # Resumed from the agent's list: the chat carries the name the list gave it.
    nvim.lua("vim.ui.select = function(items, opts, cb) cb(items[1]) end")
    nvim.nvim.command("LouiseResume!")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status and type(s.status.title) == 'string' and s.status.title ~= ''"
              " and vim.tbl_contains(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false),"
              " 'a session to find again')")


def test_starting_an_agent_says_so_and_a_crash_is_one_line(nvim: Driver) -> None:
    capture_notes(nvim)
    open_chat(nvim)
    # The chat itself says it is starting (issue 23 item 3), not a notice that would hide
    # the demo's welcome hint.
    assert not any("… starting demo" in n for n in notes(nvim)), notes(nvim)
    nvim.prompt("/scenario fail crash")
    nvim.wait_status("error")
    crash = str(nvim.wait("for _, n in ipairs(_G.louise_test_notes) do"
                          " if n.msg:find('demo exited', 1, true) then return n.msg end end"))
    assert "\n" not in crash and ":LouiseLog" in crash, crash
    assert "crashing on purpose" in nvim.chat_text()  # the tail is in the transcript


def test_send_on_enter_and_insert_ctrl_c(nvim: Driver) -> None:
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, send_on_enter = true})")
    key = open_chat(nvim)
    nvim.lua("local s = require('louise.chat').chats[...];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.prompt)[1])", key)
    nvim.nvim.input("ifirst line<C-j>second line<CR>")
    nvim.wait("local s = require('louise.chat').chats[...];"
              " local l = vim.api.nvim_buf_get_lines(s.buf, 0, -1, false);"
              " return vim.tbl_contains(l, 'first line') and vim.tbl_contains(l, 'second line')",
              key)
    nvim.wait_status("ready", key)
    assert nvim.lua("return vim.api.nvim_get_mode().mode") == "i", "still typing"
    nvim.nvim.input("/scenario slow delay_ms=300<CR>")
    nvim.wait_status("prompting", key)
    # In Insert mode. Neovim takes a CTRL-C that comes while it is busy (a frame being
    # drawn, on a loaded machine) as an interrupt, not as the key: press it again, as a
    # person would, until the turn is cancelled.
    for _ in range(5):
        nvim.nvim.input("<C-c>")
        try:
            nvim.wait_status("ready", key, timeout=10)
            break
        except AssertionError:
            continue
    nvim.wait_status("ready", key)
    assert "⊘ cancelled" in nvim.chat_text(key)
    assert "<CR> send" in str(nvim.lua("local s = require('louise.chat').chats[...];"
                                       " return vim.wo[vim.fn.win_findbuf(s.prompt)[1]].winbar",
                                       key))


def test_the_diff_tab_labels_both_sides(nvim: Driver) -> None:
    nvim.lua("vim.o.columns = 300")  # every winbar whole
    open_chat(nvim)
    nvim.prompt("/scenario multi_edit")
    nvim.wait(WAITING)
    nvim.permission_key("d")
    nvim.wait("return vim.wo.diff == true")
    bars = []
    for _ in range(3):
        bars.append(nvim.lua("local out = {} for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0))"
                             " do table.insert(out, vim.api.nvim_eval_statusline(vim.wo[w].winbar,"
                             " {winid = w, use_winbar = true}).str) end return out"))
        nvim.nvim.input("]f")
        nvim.wait("return vim.wo.diff == true")
    left = [b[0] for b in bars]
    assert all("current" in bar for bar in left), left
    assert any("CHANGES.md" in bar and "does not exist yet" in bar for bar in left), left
    nvim.nvim.input("3")


def test_a_rerendered_transcript_is_the_live_one(nvim: Driver) -> None:
    key = open_chat(nvim)
    readme = str(nvim.lua("return vim.fn.getcwd()")) + "/README.md"
    nvim.lua("vim.cmd('wincmd t'); vim.cmd('edit ' .. vim.fn.fnameescape(...))", readme)
    nvim.nvim.command("LouiseAdd file")
    nvim.submit("hello with context")
    nvim.run_prompt("/scenario plan delay_ms=0")
    nvim.run_prompt("and once more")
    live = nvim.chat_lines(key)
    assert sum(1 for line in live if line == "▌ demo") == 3, "one heading per reply"
    # Shown again whole (as after switching sessions or a failed frame).
    nvim.lua("require('louise.engine').send('attach', {key = ...})", key)
    nvim.lua("require('louise.render').pong = nil; require('louise.engine').send('ping', {})")
    nvim.wait("return require('louise.render').pong ~= nil")
    again = nvim.chat_lines(key)
    assert again == live, "\n".join(f"{a!r:60} {b!r}" for a, b in zip(live, again, strict=False))


def test_after_the_python_side_restarts_chats_keep_their_names_and_the_notice_is_short(
    nvim: Driver,
) -> None:
    import os
    import signal

    capture_notes(nvim)
    key = open_chat(nvim)
    nvim.nvim.command("LouiseRename keep this name")
    nvim.wait("local c = require('louise.chat');"
              " return c.chats[c.last].status.title == 'keep this name'")
    old_pid = int(nvim.lua("return require('louise.engine').pid"))
    os.kill(old_pid, signal.SIGTERM)
    try:
        nvim.wait("local pid = require('louise.engine').pid; return pid ~= nil and pid ~= ...",
                  old_pid, timeout=60)
    except AssertionError as exc:  # say which step did not come: the exit, the restart
        engine = nvim.lua("local e = require('louise.engine')"
                          " return {starts = e.starts, last_exit = e.last_exit, pid = e.pid}")
        raise AssertionError(f"{exc}; engine {engine}; notices {notes(nvim)}") from None
    nvim.wait("local s = require('louise.chat').chats[...];"
              " return s.status.status == 'ready' and s.status.title == 'keep this name'",
              key, timeout=60)
    notice = [n for n in notes(nvim) if "Python side" in n]
    assert notice and all("\n" not in n and ":LouiseLog" in n for n in notice), notice
    assert not any("status 0" in n for n in notice), notice
