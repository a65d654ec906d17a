"""End to end (issue 23, item 11): once a real agent is configured, the bundled demo agent
is not started, listed or offered unless it is named."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_sign_in import stub_selects

pytestmark = pytest.mark.e2e


def setup_real_agent(nvim: Driver, tmp_path: Path) -> None:
    """One configured agent, `work` (the demo agent's program under its own state
    directory, so its seeded sessions are `work`'s), and no default named."""
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end")
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {"
             " work = {command = select(1, ...), args = {'-P', '-m', 'louise.demo_agent'},"
             "   env = {LOUISE_DEMO_STATE_DIR = select(2, ...)}}}})",
             sys.executable, str(tmp_path / "work-state"))


def test_resume_everywhere_neither_starts_nor_lists_the_demo(nvim: Driver,
                                                              tmp_path: Path) -> None:
    setup_real_agent(nvim, tmp_path)
    stub_selects(nvim, [])  # look at the list, pick nothing
    nvim.nvim.command("LouiseResume!")
    nvim.wait("return _G.louise_test_selects and #_G.louise_test_selects == 1", timeout=90)
    items = nvim.lua("return _G.louise_test_selects[1].items")
    assert any(i.lstrip("▸ ").startswith("work · ") for i in items), items
    assert not [i for i in items if i.lstrip("▸ ").startswith("demo")], items
    # Named, the demo is still there.
    stub_selects(nvim, [])
    nvim.nvim.command("LouiseResume! demo")
    nvim.wait("return _G.louise_test_selects and #_G.louise_test_selects == 1", timeout=90)
    items = nvim.lua("return _G.louise_test_selects[1].items")
    assert any(i.lstrip("▸ ").startswith("demo · ") for i in items), items


def test_no_picker_or_completion_offers_the_demo(nvim: Driver, tmp_path: Path) -> None:
    setup_real_agent(nvim, tmp_path)
    assert nvim.lua("return vim.fn.getcompletion('LouiseChat ', 'cmdline')") == ["work"]
    assert nvim.lua("return vim.fn.getcompletion('LouiseResume ', 'cmdline')") == ["work"]
    stub_selects(nvim, [])
    # The only real agent opens without a picker that would offer the demo beside it.
    nvim.nvim.command("LouiseChat")
    key = str(nvim.wait("return require('louise.chat').last", timeout=60))
    assert key.startswith("work:")
    assert nvim.lua("return #_G.louise_test_selects") == 0
