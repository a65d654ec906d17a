"""The classic path: louise loaded by Neovim's Python remote-plugin host."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pynvim
import pytest

from tests.e2e.conftest import ROOT, Driver, nvim_binary

pytestmark = pytest.mark.e2e


def test_rplugin_host_runs_a_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / f"xdg-{name.lower()}"))
    monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
    monkeypatch.setenv("LOUISE_PYTHON", sys.executable)
    monkeypatch.setenv("LOUISE_DEMO_STATE_DIR", str(tmp_path / "demo-agent"))
    init = str(ROOT / "tests" / "e2e" / "rplugin_init.lua")
    argv = [nvim_binary(), "--embed", "--headless", "-u", init, "-i", "NONE"]
    # 1. Generate the manifest into the isolated XDG_DATA_HOME, as a person would.
    first = pynvim.attach("child", argv=argv)
    first.command("UpdateRemotePlugins")
    with contextlib.suppress(Exception):
        first.command("qa!")
    manifest = tmp_path / "xdg-data" / "nvim" / "rplugin.vim"
    assert "louise_rplugin.py" in manifest.read_text()
    # 2. A fresh Neovim uses it.
    session = pynvim.attach("child", argv=argv)
    try:
        session.command(f"cd {tmp_path}")
        nvim = Driver(session)
        session.command("LouiseChat")
        nvim.wait("return require('louise.chat').last", timeout=60)
        nvim.wait_status("ready", timeout=60)
        assert nvim.lua("return require('louise.engine').chan") > 0
        nvim.run_prompt("hello through the host")
        assert "You wrote: *hello through the host*" in nvim.chat_text()
    finally:
        with contextlib.suppress(Exception):
            session.command("qa!")
