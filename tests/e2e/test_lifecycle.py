"""When Neovim goes away, louise's Python process and its agents go too (no orphans)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pynvim
import pytest

from tests.e2e.conftest import ROOT, Driver, nvim_binary

pytestmark = pytest.mark.e2e


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def children_of(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.parametrize("how", ["quit", "sigkill"])
def test_no_orphans_when_neovim_goes_away(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          how: str) -> None:
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / name))
    monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
    monkeypatch.setenv("LOUISE_PYTHON", sys.executable)
    monkeypatch.setenv("LOUISE_DEMO_STATE_DIR", str(tmp_path / "demo-agent"))
    # A Neovim we can kill: listening on a socket, driven from this test.
    socket = str(tmp_path / "nvim.sock")
    proc = subprocess.Popen([nvim_binary(), "--headless", "--listen", socket, "-u",
                             str(ROOT / "tests" / "e2e" / "minimal_init.lua"), "-i", "NONE"],
                            cwd=tmp_path, stdin=subprocess.DEVNULL)
    try:
        # The socket file can exist a moment before Neovim accepts on it.
        deadline = time.monotonic() + 30
        while True:
            try:
                session = pynvim.attach("socket", path=socket)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        nvim = Driver(session)
        session.command("LouiseChat")
        nvim.wait("return require('louise.chat').last")
        nvim.wait_status("ready")
        nvim.prompt("/scenario slow delay_ms=100")  # an agent mid-turn
        nvim.wait_status("prompting")
        engine = int(nvim.lua("return require('louise.engine').pid"))
        agents = children_of(engine)
        assert agents, "the demo agent runs under louise's Python process"
        if how == "quit":
            with contextlib.suppress(Exception):  # Neovim exits while answering
                session.command("qa!")
        else:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(alive(p) for p in [engine, *agents]):
            time.sleep(0.1)
        assert not alive(engine), "louise's Python process outlived Neovim"
        assert not any(alive(p) for p in agents), "an agent outlived Neovim"
    finally:
        if proc.poll() is None:
            proc.kill()
