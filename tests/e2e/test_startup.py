"""Loading the plugin is cheap and starts no Python."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pynvim
import pytest

from tests.e2e.conftest import ROOT, nvim_binary

pytestmark = pytest.mark.e2e


def test_loading_the_plugin_starts_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / name))
    monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
    init = tmp_path / "init.lua"
    init.write_text("vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)\n"
                    "vim.cmd('runtime plugin/louise.lua')\n")
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-u",
                                        str(init), "-i", "NONE"])
    try:
        assert nvim.exec_lua("return vim.g.loaded_louise") is True
        assert nvim.exec_lua("return vim.fn.exists(':LouiseChat')") == 2
        assert nvim.exec_lua("return package.loaded['louise.engine'] == nil")
        assert nvim.exec_lua("return package.loaded['louise.chat'] == nil")
        assert nvim.exec_lua("return #vim.api.nvim_get_proc_children(vim.fn.getpid())") == 0
        # The statusline component works before anything started, and starts nothing.
        assert nvim.exec_lua("return require('louise').statusline()") == ""
        assert nvim.exec_lua("return #vim.api.nvim_get_proc_children(vim.fn.getpid())") == 0
        # It asks the chat facade for the current chat; no chat module loads for that.
        loaded = nvim.exec_lua("local out = {} for name in pairs(package.loaded) do"
                               " if name:find('^louise%.chat%.') then table.insert(out, name)"
                               " end end return out")
        assert loaded == []
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")
