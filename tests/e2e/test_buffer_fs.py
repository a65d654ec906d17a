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
    nvim.prompt("/scenario edit")
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
    nvim.prompt("/scenario edit")
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
    nvim.prompt("/scenario edit")
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
        assert lines[0] == "def greet():" and modified is False
        assert "changed on disk" in nvim.chat_text()  # the agent is told why
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
    nvim.prompt("/scenario edit")
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
    nvim.prompt("/scenario edit")
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
