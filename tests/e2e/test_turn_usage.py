"""A turn's token usage on its end line and in the export, and `ctx N% stale` after a
model change, in a real Neovim with the demo agent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e
# The share of a quota window the turn used follows when the limits came in before its end.
END_LINE = re.compile(r"^Σ [\d,]+ tokens: [\d,]+ in · [\d,]+ out( · .+)?$")


def winbar(nvim: Driver) -> str:
    """The chat's winbar as it reads on screen."""
    return str(nvim.lua("local c = require('louise.chat');"
                        " return vim.api.nvim_eval_statusline(c.winbar(c.chats[c.last], 300),"
                        " {use_winbar = true, maxwidth = 300}).str"))


def test_the_turns_end_line_shows_its_tokens_and_the_export_keeps_them(
        nvim: Driver, tmp_path: Path) -> None:
    open_chat(nvim)
    nvim.run_prompt("hello")
    # The turn's end line can come in the frame after the turn's end: wait for it.
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " for _, l in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)) do"
              " if l:find('^Σ ') then return true end end")
    lines = nvim.chat_lines()
    ends = [line for line in lines if END_LINE.match(line)]
    assert len(ends) == 1, lines[-8:]
    assert lines.index(ends[0]) > lines.index("## Hello from the demo agent")
    target = tmp_path / "export.md"
    nvim.lua("require('louise').export(...)", str(target))
    nvim.wait("return vim.uv.fs_stat(...) ~= nil", str(target))
    # The export writes a "<" as "\<" (Markdown would read "<…" as HTML): "<1% of the 7d
    # window" when the limits came in before the turn's end.
    assert f"*{ends[0][2:]}*" in target.read_text().replace("\\<", "<")


def test_the_context_figure_is_stale_after_a_model_change_until_the_next_usage(
        nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.run_prompt("hello")
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.context ~= nil")
    assert re.search(r"ctx \d+%", winbar(nvim)) and "stale" not in winbar(nvim)
    nvim.lua("require('louise.engine').send('set_option',"
             " {key = ..., option = 'model', value = 'demo-smart'})", key)
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.context_stale == true")
    assert re.search(r"ctx \d+% stale", winbar(nvim)), winbar(nvim)
    nvim.run_prompt("again")  # its usage_update is the new model's figure
    nvim.wait("local c = require('louise.chat'); local s = c.chats[c.last];"
              " return s.status.context_stale == false")
    assert "stale" not in winbar(nvim)
