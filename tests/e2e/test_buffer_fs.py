"""Agents read and write through Neovim's buffers; unsaved edits are never lost."""

from __future__ import annotations

from pathlib import Path

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
