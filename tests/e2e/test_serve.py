"""End to end: two real headless Neovims with `setup{ host = 'auto' }` on one session
host (started by the first of them): both see the stream; a permission request answered
from the second is answered for the first, which says so; a turn goes on when its Neovim
quits, and a new Neovim that opens the session sees it once."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

from tests.e2e.conftest import ROOT, Driver, load_chat, nvim_binary, wait_chat_line
from tests.integration.cli_helpers import Running
from tests.integration.serve_clients import host_pids

pytestmark = pytest.mark.e2e

WAIT = 60.0


class Place:
    """One machine's worth of louise: a state directory (short: the socket's address is
    bounded), a workspace, and the Neovims and the host started there."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.state = Path(tempfile.mkdtemp(prefix="lse2e", dir="/tmp"))
        for name in ("CONFIG", "DATA", "STATE", "CACHE"):
            monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / f"xdg-{name.lower()}"))
        monkeypatch.setenv("LOUISE_STATE_DIR", str(self.state))
        monkeypatch.setenv("LOUISE_CONFIG", str(tmp_path / "no-config.toml"))
        monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
        monkeypatch.setenv("LOUISE_PYTHON", sys.executable)
        monkeypatch.setenv("LOUISE_DEMO_STATE_DIR", str(tmp_path / "demo-agent"))
        self.work = tmp_path / "work"
        self.work.mkdir()
        (self.work / "README.md").write_text("# e2e workspace\n")
        self.socket = self.state / "host" / "host.sock"
        self.sessions: list[Any] = []
        self.processes: list[subprocess.Popen[bytes]] = []

    def neovim(self) -> Driver:
        argv = [nvim_binary(), "--embed", "--headless", "-u",
                str(ROOT / "tests" / "e2e" / "minimal_init.lua"), "-i", "NONE"]
        session = pynvim.attach("child", argv=argv)
        self.sessions.append(session)
        session.command(f"cd {self.work}")
        driver = Driver(session)
        driver.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, host = 'auto'})")
        return driver

    def hosts(self) -> list[int]:
        return host_pids(self.socket)

    def close(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        for session in self.sessions:
            with contextlib.suppress(Exception):
                session.command("qa!")
        for pid in self.hosts():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    where = Place(tmp_path, monkeypatch)
    try:
        yield where
    finally:
        where.close()


def open_chat(nvim: Driver) -> str:
    nvim.nvim.command("LouiseChat demo")
    key = nvim.wait("return require('louise.chat').last", timeout=WAIT)
    nvim.wait_status("ready", timeout=WAIT)
    return str(key)




def test_two_neovims_share_the_stream_and_the_second_answers_the_permission(
        place: Place) -> None:
    first = place.neovim()
    key = open_chat(first)
    assert len(place.hosts()) == 1  # the first Neovim started the host
    second = place.neovim()
    load_chat(second, key, place.work)
    # And a terminal's `louise chat --attach` on the same session.
    cli = Running("chat", "--agent", "demo", "--attach", key.partition(":")[2], "--cwd",
                  str(place.work), env=dict(os.environ))
    place.processes.append(cli.process)
    first.run_prompt("before the edit", timeout=WAIT)
    cli.wait_for("You wrote: *before the edit*", timeout=WAIT)  # the CLI is attached
    first.prompt("/scenario edit")
    # Both are asked; the second answers.
    for nvim in (first, second):
        nvim.wait("return require('louise.permission').current ~= nil", timeout=WAIT)
    second.permission_key("1")
    wait_chat_line(first, key, "answered in another window: allowed once — by Neovim (pid ")
    first.wait("return require('louise.permission').current == nil", timeout=WAIT)
    for nvim in (first, second):
        wait_chat_line(nvim, key, "Edit hello.py")
    first.wait_status("ready", timeout=WAIT)
    assert (place.work / "hello.py").exists()  # allowed from the second, written once
    assert "/scenario edit" in second.chat_text(key)  # the first's prompt, at the second
    cli.wait_for("answered in another window: allowed once — by Neovim (pid ", stderr=True,
                 timeout=WAIT)
    cli.interrupt()  # detach
    _code, out, err = cli.finish(timeout=WAIT)
    assert out.count("You wrote: *before the edit*") == 1
    assert "> /scenario edit" in err  # the same stream, the first's prompt included
    assert "answered in another window: allowed once — by Neovim (pid " in err


def test_a_turn_goes_on_when_its_neovim_quits_and_a_new_one_sees_it_once(
        place: Place) -> None:
    first = place.neovim()
    key = open_chat(first)
    first.prompt("/scenario slow delay_ms=40 chunks=120")
    wait_chat_line(first, key, "tick 3 …")
    with contextlib.suppress(Exception):  # Neovim exits while answering
        first.nvim.command("qa!")
    place.sessions.remove(first.nvim)
    [host] = place.hosts()  # the host stays
    later = place.neovim()
    load_chat(later, key, place.work)
    wait_chat_line(later, key, "tick 119 …")  # the turn finished without its Neovim
    text = later.chat_text(key)
    assert text.count("tick 3 …") == 1, text  # what happened meanwhile, once
    assert text.count("/scenario slow") == 1
    assert place.hosts() == [host]


def test_a_question_asked_after_its_neovim_quit_is_shown_with_its_age_to_the_next(
        place: Place) -> None:
    first = place.neovim()
    key = open_chat(first)
    first.prompt("/scenario edit")
    first.wait("return require('louise.permission').current ~= nil", timeout=WAIT)
    with contextlib.suppress(Exception):  # Neovim exits while answering
        first.nvim.command("qa!")
    place.sessions.remove(first.nvim)
    later = place.neovim()
    load_chat(later, key, place.work)
    later.wait("return require('louise.permission').current ~= nil", timeout=WAIT)
    header = later.lua("return vim.api.nvim_buf_get_lines("
                       "vim.api.nvim_win_get_buf(require('louise.permission').win), 0, 1,"
                       " false)[1]")
    assert "while no window was attached" in header, header
    later.permission_key("1")
    wait_chat_line(later, key, "Edit hello.py")
    later.wait("return require('louise.permission').current == nil", timeout=WAIT)
    # Allowed from the later Neovim: the edit lands.
    later.wait("return vim.uv.fs_stat(select(1, ...)) ~= nil", str(place.work / "hello.py"),
               timeout=WAIT)
