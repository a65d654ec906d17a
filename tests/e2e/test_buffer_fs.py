"""Agents read and write through Neovim's buffers; unsaved edits are never lost."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e


def work_dir(nvim: Driver) -> Path:
    return Path(str(nvim.lua("return vim.fn.getcwd()")))


def edit_file(nvim: Driver, path: Path) -> int:
    """Open a file in a normal window (not the chat), as a person would."""
    nvim.lua("vim.cmd('topleft split ' .. vim.fn.fnameescape(...))", str(path))
    return int(nvim.lua("return vim.fn.bufnr(...)", str(path)))


def test_reads_see_unsaved_edits(nvim: Driver) -> None:
    readme = work_dir(nvim) / "README.md"
    buf = edit_file(nvim, readme)
    nvim.lua("vim.api.nvim_buf_set_lines(..., 0, -1, false, {'# unsaved heading', 'draft'})", buf)
    open_chat(nvim)
    nvim.run_prompt("/scenario read path=README.md")
    text = nvim.chat_text()
    assert "# unsaved heading" in text and "draft" in text
    assert "e2e workspace" not in text  # the disk's content was not used
    assert readme.read_text() == "# e2e workspace\n"


def test_write_to_a_clean_loaded_buffer_is_one_undo_step_and_saved(nvim: Driver) -> None:
    hello = work_dir(nvim) / "hello.py"
    hello.write_text('def greet():\n    print("Hello, world!")\n')
    buf = edit_file(nvim, hello)
    open_chat(nvim)
    nvim.prompt("/scenario edit blind=1")  # over the file as it is
    nvim.wait("return require('louise.permission').current ~= nil")
    nvim.permission_key("1")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    lines = nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf)
    assert lines[0] == "def greet(name: str) -> None:"
    assert hello.read_text().startswith("def greet(name: str) -> None:")
    assert nvim.lua("return vim.bo[...].modified", buf) is False
    nvim.lua("vim.api.nvim_buf_call(..., function() vim.cmd('silent undo') end)", buf)
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf) == [
        "def greet():", '    print("Hello, world!")']


@pytest.mark.parametrize("choice", ["refuse", "buffer", "overwrite"])
def test_write_to_a_buffer_with_unsaved_edits_asks_the_person(nvim: Driver, choice: str) -> None:
    hello = work_dir(nvim) / "hello.py"
    original = 'def greet():\n    print("Hello, world!")\n'
    hello.write_text(original)
    buf = edit_file(nvim, hello)
    nvim.lua("vim.api.nvim_buf_set_lines(..., 0, 1, false, {'# my unsaved work'})", buf)
    nvim.lua("local pick = ...; vim.ui.select = function(items, _, cb)"
             " for _, item in ipairs(items) do if item.id == pick then return cb(item) end end"
             " end", choice)
    open_chat(nvim)
    nvim.prompt("/scenario edit blind=1")  # over the file as it is
    nvim.wait("return require('louise.permission').current ~= nil")
    nvim.permission_key("1")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    lines = nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf)
    modified = nvim.lua("return vim.bo[...].modified", buf)
    if choice == "refuse":
        assert lines[0] == "# my unsaved work" and modified is True
        assert hello.read_text() == original
        assert "unsaved edits" in nvim.chat_text()
    elif choice == "buffer":
        assert lines[0] == "def greet(name: str) -> None:" and modified is True
        assert hello.read_text() == original  # not saved
    else:
        assert lines[0] == "def greet(name: str) -> None:" and modified is False
        assert hello.read_text().startswith("def greet(name: str) -> None:")


def test_unloaded_files_are_written_on_disk(nvim: Driver) -> None:
    open_chat(nvim)
    nvim.prompt("/scenario multi_edit")
    nvim.wait("return require('louise.permission').current ~= nil")
    nvim.permission_key("1")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    changes = work_dir(nvim) / "docs" / "CHANGES.md"
    assert changes.exists(), "a new file in a new directory is created"


# --------------------------------------------------------------------------- changed on disk


def changed_on_disk(path: Path, text: str) -> None:
    """Someone else writes the file after Neovim read it (a later mtime, as a second
    writer would leave it)."""
    path.write_text(text)
    later = path.stat().st_mtime + 5
    os.utime(path, (later, later))


@pytest.mark.parametrize("choice", ["refuse", "buffer", "overwrite"])
def test_a_write_to_a_buffer_whose_file_changed_on_disk_is_a_conflict_the_person_resolves(
        nvim: Driver, choice: str) -> None:
    hello = work_dir(nvim) / "hello.py"
    hello.write_text('def greet():\n    print("Hello, world!")\n')
    buf = edit_file(nvim, hello)
    changed_on_disk(hello, "# rewritten by another tool\n")
    nvim.lua("local pick = ...; _G.louise_test_prompts = {}; vim.ui.select = function(items,"
             " opts, cb) table.insert(_G.louise_test_prompts, opts.prompt)"
             " for _, item in ipairs(items) do if item.id == pick then return cb(item) end end"
             " end", choice)
    open_chat(nvim)
    nvim.prompt("/scenario edit blind=1")  # over the file as it is
    nvim.wait("return require('louise.permission').current ~= nil")
    nvim.permission_key("1")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    (prompt,) = nvim.lua("return _G.louise_test_prompts")
    assert "hello.py, which changed on disk since it was read" in prompt
    lines = nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf)
    modified = nvim.lua("return vim.bo[...].modified", buf)
    if choice == "refuse":
        assert hello.read_text() == "# rewritten by another tool\n"
        assert "changed on disk" in nvim.chat_text()  # the agent is told why
        # The buffer had no edits of its own: once the tool call is done it follows the
        # file, as :checktime would.
        nvim.wait("return vim.api.nvim_buf_get_lines(..., 0, 1, false)[1] =="
                  " '# rewritten by another tool' and not vim.bo[...].modified", buf)
    elif choice == "buffer":
        assert hello.read_text() == "# rewritten by another tool\n"
        assert lines[0] == "def greet(name: str) -> None:" and modified is True
    else:
        assert hello.read_text().startswith("def greet(name: str) -> None:")
        assert lines[0] == "def greet(name: str) -> None:" and modified is False


def test_unsaved_edits_over_a_file_changed_on_disk_say_both_and_overwrite_never_blocks(
        nvim: Driver) -> None:
    hello = work_dir(nvim) / "hello.py"
    hello.write_text('def greet():\n    print("Hello, world!")\n')
    buf = edit_file(nvim, hello)
    nvim.lua("vim.api.nvim_buf_set_lines(..., 0, 1, false, {'# my unsaved work'})", buf)
    changed_on_disk(hello, "# rewritten by another tool\n")
    nvim.lua("_G.louise_test_prompts = {}; vim.ui.select = function(items, opts, cb)"
             " table.insert(_G.louise_test_prompts, opts.prompt)"
             " for _, item in ipairs(items) do if item.id == 'overwrite' then"
             " return cb(item) end end end")
    open_chat(nvim)
    nvim.prompt("/scenario edit blind=1")  # over the file as it is
    nvim.wait("return require('louise.permission').current ~= nil")
    nvim.permission_key("1")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    (prompt,) = nvim.lua("return _G.louise_test_prompts")
    assert "unsaved edits and changed on disk too" in prompt
    assert hello.read_text().startswith("def greet(name: str) -> None:")
    assert nvim.lua("return vim.bo[...].modified", buf) is False


def test_a_file_touched_on_disk_with_the_same_text_is_written_without_a_question(
        nvim: Driver) -> None:
    hello = work_dir(nvim) / "hello.py"
    original = 'def greet():\n    print("Hello, world!")\n'
    hello.write_text(original)
    edit_file(nvim, hello)
    changed_on_disk(hello, original)  # same text, a later mtime: Vim would still ask
    nvim.lua("_G.louise_test_asked = false; vim.ui.select = function(items, opts, cb)"
             " _G.louise_test_asked = true; cb(nil) end")
    open_chat(nvim)
    nvim.prompt("/scenario edit blind=1")  # over the file as it is
    nvim.wait("return require('louise.permission').current ~= nil")
    nvim.permission_key("1")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.turns_done == s.status.turn")
    assert nvim.lua("return _G.louise_test_asked") is False
    assert hello.read_text().startswith("def greet(name: str) -> None:")


# --------------------------------------------------------------------------- line endings

SCRIPT = Path(__file__).resolve().parents[1] / "fakes" / "script_agent.py"


def script_chat(nvim: Driver) -> str:
    """A chat with the scripted fake agent; a rule allows its writes (the gate asks none)."""
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {script = {"
             " command = select(1, ...), args = {(select(2, ...))}}},"
             " permissions = {rules = {{kind = 'edit', decision = 'allow'}}}})",
             sys.executable, str(SCRIPT))
    nvim.nvim.command("LouiseChat script")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    return key


def answers(nvim: Driver, key: str) -> list[Any]:
    return [json.loads(line.split(" ", 2)[2]) for line in nvim.chat_lines(key)
            if line.startswith("ANSWER ")]


def test_a_dos_buffer_reads_as_the_disk_does_and_writes_crlf_once(nvim: Driver) -> None:
    work = work_dir(nvim)
    loaded, on_disk = work / "loaded.txt", work / "on_disk.txt"
    for path in (loaded, on_disk):
        path.write_bytes(b"one\r\ntwo\r\n")
    buf = edit_file(nvim, loaded)
    assert nvim.lua("return vim.bo[...].fileformat", buf) == "dos"
    key = script_chat(nvim)
    read = [{"request": "fs/read_text_file", "params": {"path": str(p)}}
            for p in (loaded, on_disk)]
    nvim.run_prompt(json.dumps(read), key)
    through_buffer, from_disk = answers(nvim, key)
    assert from_disk == {"content": "one\r\ntwo\r\n"}
    assert through_buffer == from_disk  # one rule for both paths
    write = [{"request": "fs/write_text_file",
              "params": {"path": str(p), "content": "uno\r\ndos\r\n"}} for p in (loaded, on_disk)]
    nvim.run_prompt(json.dumps(write), key)
    assert loaded.read_bytes() == on_disk.read_bytes() == b"uno\r\ndos\r\n"
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf) == ["uno", "dos"]
    assert nvim.lua("return vim.bo[...].modified", buf) is False


def test_lf_text_written_into_a_dos_buffer_lands_as_it_would_on_disk(nvim: Driver) -> None:
    work = work_dir(nvim)
    loaded, on_disk = work / "loaded.txt", work / "on_disk.txt"
    for path in (loaded, on_disk):
        path.write_bytes(b"one\r\ntwo\r\n")
    buf = edit_file(nvim, loaded)
    key = script_chat(nvim)
    write = [{"request": "fs/write_text_file",
              "params": {"path": str(p), "content": "lf\nmixed\r\nend"}} for p in (loaded, on_disk)]
    nvim.run_prompt(json.dumps(write), key)
    assert on_disk.read_bytes() == b"lf\nmixed\r\nend"
    assert loaded.read_bytes() == on_disk.read_bytes()
    read = [{"request": "fs/read_text_file", "params": {"path": str(loaded)}}]
    nvim.run_prompt(json.dumps(read), key)
    assert answers(nvim, key)[-1] == {"content": "lf\nmixed\r\nend"}
    assert nvim.lua("return vim.bo[...].fileformat", buf) == "unix"


# --------------------------------------------------------------------------- files agents wrote
# Real agents write files themselves; the engine then asks fs.reload to bring the buffers
# of the files a tool call named up to date (tests/real_agents has the whole path).


def reload(nvim: Driver, path: Path) -> None:
    nvim.lua("require('louise.fs').reload({[select(1, ...)] = 'claude'})", str(path))


def stub_select(nvim: Driver) -> None:
    """vim.ui.select records each question; `_G.louise_test_choose(id)` answers it."""
    nvim.lua("_G.louise_test_asked = {}; vim.ui.select = function(items, opts, choose)"
             " table.insert(_G.louise_test_asked, {prompt = opts.prompt,"
             " ids = vim.tbl_map(function(i) return i.id end, items)});"
             " _G.louise_test_choose = function(id) for _, item in ipairs(items) do"
             " if item.id == id then return choose(item) end end; choose(nil) end end")


def test_a_clean_buffer_follows_the_file_keeping_cursor_and_undo(nvim: Driver) -> None:
    notes = work_dir(nvim) / "notes.txt"
    notes.write_text("one\ntwo\nthree\nfour\n")
    buf = edit_file(nvim, notes)
    nvim.lua("vim.api.nvim_win_set_cursor(0, {3, 1})")
    changed_on_disk(notes, "one\ntwo\nTHREE by the agent\nfour\n")
    reload(nvim, notes)
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf) == [
        "one", "two", "THREE by the agent", "four"]
    assert nvim.lua("return vim.api.nvim_win_get_cursor(0)") == [3, 1]
    assert nvim.lua("return vim.bo[...].modified", buf) is False
    nvim.lua("vim.cmd('silent undo')")
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf)[2] == "three"


def test_a_clean_buffer_of_an_unchanged_file_is_left_alone(nvim: Driver) -> None:
    notes = work_dir(nvim) / "notes.txt"
    notes.write_text("same\n")
    buf = edit_file(nvim, notes)
    tick = nvim.lua("return vim.api.nvim_buf_get_changedtick(...)", buf)
    reload(nvim, notes)
    assert nvim.lua("return vim.api.nvim_buf_get_changedtick(...)", buf) == tick


@pytest.mark.parametrize("choice", ["mine", "agent", "diff", None])
def test_unsaved_edits_over_a_file_an_agent_changed_ask_the_person(
        nvim: Driver, choice: str | None) -> None:
    notes = work_dir(nvim) / "notes.txt"
    notes.write_text("one\ntwo\n")
    buf = edit_file(nvim, notes)
    nvim.lua("vim.api.nvim_buf_set_lines(..., 0, 1, false, {'ONE mine'})", buf)
    changed_on_disk(notes, "one\ntwo by the agent\n")
    stub_select(nvim)
    reload(nvim, notes)
    asked = nvim.wait("return #_G.louise_test_asked > 0 and _G.louise_test_asked")
    assert [a["ids"] for a in asked] == [["mine", "agent", "diff"]]
    assert "claude changed notes.txt on disk" in asked[0]["prompt"], asked
    lines = "return vim.api.nvim_buf_get_lines(..., 0, -1, false)"
    assert nvim.lua(lines, buf) == ["ONE mine", "two"], "nothing changes before the answer"
    nvim.lua("_G.louise_test_choose(...)", choice)
    if choice == "agent":
        assert nvim.lua(lines, buf) == ["one", "two by the agent"]
        assert nvim.lua("return vim.bo[...].modified", buf) is False
        nvim.lua("vim.api.nvim_buf_call(..., function() vim.cmd('silent undo') end)", buf)
        assert nvim.lua(lines, buf) == ["ONE mine", "two"], "your edits are one undo away"
    elif choice == "diff":
        shown = nvim.lua("local out = {}; for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0))"
                         " do local b = vim.api.nvim_win_get_buf(w); out[#out + 1] ="
                         " {vim.wo[w].diff, vim.api.nvim_buf_get_lines(b, 0, -1, false)} end;"
                         " return out")
        assert [True, ["ONE mine", "two"]] in shown and \
            [True, ["one", "two by the agent"]] in shown, shown
        assert nvim.lua("return vim.bo[...].modified", buf) is True
    else:  # kept, or dismissed: never overwritten
        assert nvim.lua(lines, buf) == ["ONE mine", "two"]
        assert nvim.lua("return vim.bo[...].modified", buf) is True
    # Asked once per change: checking again asks nothing more.
    reload(nvim, notes)
    nvim.lua("vim.wait(50)")
    assert len(nvim.lua("return _G.louise_test_asked")) == 1
    assert notes.read_text() == "one\ntwo by the agent\n", "the file itself is never touched"


def test_a_read_from_a_buffer_behind_its_file_returns_the_buffer_and_says_so(
        nvim: Driver) -> None:
    readme = work_dir(nvim) / "README.md"
    buf = edit_file(nvim, readme)
    changed_on_disk(readme, "# changed by another tool\n")
    open_chat(nvim)
    nvim.run_prompt("/scenario read path=README.md")
    text = nvim.chat_text()
    assert "e2e workspace" in text and "changed by another tool" not in text, text
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf) == [
        "# e2e workspace"]
    nvim.nvim.command("LouiseLog")
    log = nvim.wait("for _, b in ipairs(vim.api.nvim_list_bufs()) do"
                    " if vim.api.nvim_buf_get_name(b):find('louise%-log://') then"
                    " return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n')"
                    " end end")
    assert "fs/read_text_file" in log and "README.md: answered from the buffer" in log, log
    assert "the file changed on disk since its buffer read it" in log, log
