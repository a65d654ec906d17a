"""End to end: `@path` mentions go to the agent as files (embedded here: the demo agent
takes embedded context), images from a file or the clipboard, all as removable chips."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


def reply(nvim: Driver) -> str:
    return nvim.chat_text().split("▌ demo")[-1]


def test_a_mentioned_file_is_attached(nvim: Driver) -> None:
    open_chat(nvim)
    cwd = nvim.lua("return vim.fn.getcwd()")
    nvim.submit("/scenario attachments look at @README.md, not @nothing-here.txt")
    text = reply(nvim)
    assert f"- embedded file://{cwd}/README.md (16 bytes)" in text
    assert "nothing-here" not in text  # not a file: stays plain text
    assert "\n@README.md" in nvim.chat_text()  # shown in the prompt as mentioned


def test_an_image_from_a_file_and_one_from_the_clipboard(nvim: Driver, tmp_path: Path) -> None:
    open_chat(nvim)
    (tmp_path / "shot.png").write_bytes(PNG)
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "xclip"  # the clipboard holds an image
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'shot.png'}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    nvim.lua("vim.env.PATH = ... .. ':' .. vim.env.PATH", str(tools))
    nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
             " vim.api.nvim_set_current_win(vim.fn.win_findbuf(s.prompt)[1])")
    nvim.nvim.command(f"LouiseAdd image {tmp_path / 'shot.png'}")
    nvim.nvim.command("LouiseAdd image")
    chips = nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
                     " local out = {}; for _, chip in ipairs(s.context) do"
                     " table.insert(out, {chip.kind, chip.clipboard == true}) end; return out")
    assert chips == [["image", False], ["image", True]]
    bar = nvim.lua("local c = require('louise.chat'); local s = c.chats[c.last];"
                   " return vim.wo[vim.fn.win_findbuf(s.prompt)[1]].winbar")
    assert "[1 image shot.png]" in bar
    nvim.submit("/scenario attachments")
    assert reply(nvim).count(f"- image image/png ({len(PNG)} bytes)") == 2


def test_chips_are_removable_and_an_image_needs_an_agent_that_takes_it(
        nvim: Driver, tmp_path: Path) -> None:
    open_chat(nvim)
    (tmp_path / "shot.png").write_bytes(PNG)
    nvim.nvim.command(f"LouiseAdd image {tmp_path / 'shot.png'}")
    nvim.nvim.command("LouiseDrop 1")
    nvim.submit("/scenario attachments")
    assert "This prompt has no attachments." in reply(nvim)
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end;"
             " local c = require('louise.chat'); c.chats[c.last].status.image = false")
    nvim.nvim.command(f"LouiseAdd image {tmp_path / 'shot.png'}")
    assert nvim.lua("return _G.louise_test_notes") == [
        "louise: demo does not take images: nothing added"]
