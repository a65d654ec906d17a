"""A real Neovim with a UI attached, as a person sees it: 80×24 by default, `cmdheight=1`,
messages drawn on the screen (no `ext_messages`), so a message that does not fit raises
the real hit-enter prompt. The UI client (bench/uiclient.py) keeps the screen; every
flush is watched for the hit-enter prompt, which is counted each time it appears.

`Driver` works on it as on the headless fixture (`lua`, `wait`, `nvim.command`,
`nvim.input`); a request made while Neovim sits at a hit-enter prompt is not answered, so
a test that causes one fails on a timeout, with the count to say why."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.uiclient import UIClient
from tests.e2e.conftest import ROOT, Driver, nvim_binary

HIT_ENTER = "Press ENTER or type command to continue"


class UiNvim:
    """The part of pynvim's `Nvim` the Driver uses, over the UI client's connection."""

    def __init__(self, ui: UIClient) -> None:
        self.ui = ui

    def exec_lua(self, code: str, *args: Any) -> Any:
        return self.ui.lua(code, *args)

    def command(self, command: str) -> None:
        self.ui.request("nvim_command", command)

    def input(self, keys: str) -> None:
        self.ui.request("nvim_input", keys)


class Screen:
    """The UI and what was seen on it: hit-enter prompts (each appearance once)."""

    def __init__(self, ui: UIClient) -> None:
        self.ui = ui
        self.hit_enter = 0
        self.hit_enter_screens: list[str] = []
        self._showing = False
        ui.flush_hooks.append(self._flushed)

    def _flushed(self, _now: int, ui: UIClient) -> None:  # the UI's lock is held
        rows = ["".join(row) for row in ui.rows]
        showing = any(HIT_ENTER in row for row in rows[-4:])
        if showing and not self._showing:
            self.hit_enter += 1
            self.hit_enter_screens.append("\n".join(rows))
        self._showing = showing

    def text(self) -> str:
        return self.ui.screen_text()

    def wait_for(self, text: str, timeout: float = 10.0) -> str:
        """The screen once it shows `text` (Neovim redraws after it answered)."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.text()
            if text in shown:
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never showed {text!r}:\n{shown}")
            time.sleep(0.02)

    def mode(self) -> str:
        return str(self.ui.request("nvim_get_mode")["mode"])


@pytest.fixture(name="ui_nvim")
def ui_nvim_fixture(tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Driver, Screen]]:
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / f"xdg-{name.lower()}"))
    monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
    monkeypatch.setenv("LOUISE_PYTHON", sys.executable)
    monkeypatch.setenv("LOUISE_DEMO_STATE_DIR", str(tmp_path / "demo-agent"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("# e2e workspace\n")
    argv = [nvim_binary(), "--embed", "-u", str(ROOT / "tests" / "e2e" / "minimal_init.lua"),
            "-i", "NONE"]
    ui = UIClient(argv, env=dict(os.environ), cwd=str(work), width=80, height=24)
    screen = Screen(ui)
    try:
        yield Driver(UiNvim(ui)), screen  # type: ignore[arg-type]
    finally:
        ui.close()
