"""Loading the plugin is cheap and starts no Python."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import pynvim
import pytest

from tests.e2e.conftest import ROOT, Driver, nvim_binary

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


def _start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str) -> tuple[Any, Path]:
    """A headless Neovim whose init.lua calls `require('louise').setup(<setup>)`."""
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / name))
    monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
    monkeypatch.setenv("LOUISE_PYTHON", sys.executable)
    monkeypatch.setenv("LOUISE_DEMO_STATE_DIR", str(tmp_path / "demo-agent"))
    work = tmp_path / "work"
    work.mkdir()
    init = tmp_path / "init.lua"
    init.write_text("vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)\n"
                    "vim.opt.swapfile = false\n"
                    "vim.cmd('runtime plugin/louise.lua')\n"
                    f"_G.setup_result = {{ require('louise').setup({setup}) }}\n"
                    # What was running when Neovim entered: nothing may start before.
                    "vim.api.nvim_create_autocmd('VimEnter', { callback = function()\n"
                    "  _G.chan_at_enter = require('louise.engine').chan or false end })\n")
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-u",
                                        str(init), "-i", "NONE"])
    nvim.command(f"cd {work}")
    return nvim, work


def _past_the_idle_start(nvim: Any) -> None:
    """Wait until a timer set now, several idle-start delays long, has fired: a start
    louise had scheduled after VimEnter would have happened before it."""
    nvim.exec_lua("vim.g.louise_test_waited = false; vim.defer_fn(function()"
                  " vim.g.louise_test_waited = true end,"
                  " require('louise').IDLE_START_DELAY_MS * 5)")
    wait(lambda: nvim.exec_lua("return vim.g.louise_test_waited"), "the timer")


def wait(check: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.03)
    raise AssertionError(f"timed out waiting for {what}")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text().split()
            found.extend(int(child) for child in text)
    return found


def test_start_engine_idle_starts_the_python_process_and_no_agent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """setup{ start_engine = 'idle' }: louise's Python process starts after VimEnter with
    no command, no agent starts with it, and the first chat then works."""
    nvim, _ = _start(tmp_path, monkeypatch, "{ python = vim.env.LOUISE_PYTHON, "
                                            "start_engine = 'idle' }")
    try:
        assert nvim.exec_lua("return _G.setup_result[1]") is True
        assert nvim.exec_lua("return _G.chan_at_enter") is False  # not during startup
        pid = wait(lambda: nvim.exec_lua("local e = require('louise.engine');"
                                         " return e.ready and e.pid or false"),
                   "the engine to be ready")
        assert pid in nvim.exec_lua("return vim.api.nvim_get_proc_children(vim.fn.getpid())")
        assert "louise.nvim" in Path(f"/proc/{pid}/cmdline").read_text()
        assert _children(pid) == []  # no agent
        nvim.command("LouiseChat")
        driver = Driver(nvim)
        driver.wait_status("ready", timeout=60)
        assert nvim.exec_lua("return require('louise.engine').pid") == pid  # the same one
        driver.run_prompt("hello")
        assert "Hello from the demo agent" in driver.chat_text()
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")


def test_without_start_engine_idle_nothing_starts_until_a_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvim, _ = _start(tmp_path, monkeypatch, "{ python = vim.env.LOUISE_PYTHON }")
    try:
        _past_the_idle_start(nvim)
        assert nvim.exec_lua("return require('louise.engine').chan") is None
        assert nvim.exec_lua("return #vim.api.nvim_get_proc_children(vim.fn.getpid())") == 0
        nvim.command("LouiseChat")
        Driver(nvim).wait_status("ready", timeout=60)
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")


def test_louise_chat_starts_the_python_process_before_it_builds_the_placeholder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25 item 2: on first use the process is spawned first, so its start runs
    beside the placeholder's Lua, not after it."""
    nvim, _ = _start(tmp_path, monkeypatch, "{ python = vim.env.LOUISE_PYTHON }")
    try:
        nvim.exec_lua("local jobstart = vim.fn.jobstart\n"
                      "vim.fn.jobstart = function(...)\n"
                      "  _G.placeholder_at_spawn = package.loaded['louise.chat.starting'] ~= nil"
                      "    and next(package.loaded['louise.chat.starting'].by_id) ~= nil\n"
                      "  return jobstart(...)\n"
                      "end")
        nvim.command("LouiseChat")
        assert nvim.exec_lua("return _G.placeholder_at_spawn") is False
        Driver(nvim).wait_status("ready", timeout=60)
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")


def test_louise_chat_without_a_python_says_so_and_opens_no_placeholder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvim, _ = _start(tmp_path, monkeypatch,
                     f"{{ python = {str(tmp_path / 'no-such-python')!r} }}")
    try:
        nvim.exec_lua("_G.said = {}; require('louise.notice').notify = function(m)"
                      " table.insert(_G.said, m) end")
        nvim.command("LouiseChat")
        said = nvim.exec_lua("return _G.said")
        assert len(said) == 1 and "could not start" in said[0], said
        assert nvim.exec_lua("return next(require('louise.chat.starting').by_id)") is None
        assert nvim.exec_lua("return #vim.api.nvim_list_wins()") == 1
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")


def test_start_engine_is_checked_like_the_other_options(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad value is reported with its field path and the default (first use) stands."""
    nvim, _ = _start(tmp_path, monkeypatch, "{ python = vim.env.LOUISE_PYTHON, "
                                            "start_engine = 'early' }")
    try:
        assert nvim.exec_lua("return _G.setup_result[1]") is False
        problems = nvim.exec_lua("return _G.setup_result[2]")
        assert [p["path"] for p in problems] == ["start_engine"]
        assert "'idle'" in problems[0]["hint"] or '"idle"' in problems[0]["text"]
        assert nvim.exec_lua("return require('louise').options.start_engine") == "first_use"
        _past_the_idle_start(nvim)
        assert nvim.exec_lua("return #vim.api.nvim_get_proc_children(vim.fn.getpid())") == 0
    finally:
        with contextlib.suppress(Exception):
            nvim.command("qa!")


def test_the_engine_process_loads_no_openssl_through_a_first_chat(nvim: Driver) -> None:
    """Issue 25 items 2 and 5: louise never speaks TLS, and its Neovim process never loads
    `ssl` (~7 ms and ~3.4 MiB of its start): not at its imports, not when its loop starts
    and its own channel to Neovim connects (asyncio asks each socket whether it is an
    SSLSocket), not through a chat with the demo agent and a turn (louise/storage/
    first_use.py). Neither OpenSSL's `_ssl` nor hashlib's `_hashlib` is mapped."""
    nvim.nvim.command("LouiseChat")
    nvim.wait_status("ready", timeout=60)
    nvim.run_prompt("hello")
    assert "Hello from the demo agent" in nvim.chat_text()
    pid = int(nvim.lua("return require('louise.engine').pid"))
    mapped = {line.split()[-1].rsplit("/", 1)[-1]
              for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
              if "/" in line}
    assert any(name.startswith("_asyncio.") for name in mapped)  # the loop's own extension
    assert sorted(name for name in mapped if name.startswith("_ssl.")) == []
    # nor hashlib's OpenSSL (`_hashlib`, libcrypto): pydantic's `secrets` is deferred
    assert sorted(name for name in mapped if name.startswith(("_hashlib.", "libcrypto"))) == []
    # nor importlib.metadata for pydantic's plugins, none being installed (`csv` comes
    # with it, and its `_csv` extension is a file of its own)
    assert sorted(name for name in mapped if name.startswith("_csv.")) == []
