"""How long `:qa!` takes once a chat has run a turn: a headless Neovim with louise and the
demo agent, against the same Neovim with no plugin (the baseline). Neovim sends its jobs
SIGTERM on exit and SIGKILLs them 2 s later; louise should be gone long before.

    .venv/bin/python bench/quit.py [-n 7]

Prints each run (milliseconds from `:qa!` to Neovim's exit, and how the engine process
ended: by itself, or killed), the medians, and the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pynvim

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import Driver, nvim_binary  # noqa: E402 (after the path is set)
from tests.e2e.test_quit import WRAPPER  # noqa: E402 (reports how the engine ended)


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        env[f"XDG_{name}_HOME"] = str(root / f"xdg-{name.lower()}")
    env["LOUISE_PLUGIN_ROOT"] = str(ROOT)
    wrapper = root / "python"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    env["LOUISE_PYTHON"] = str(wrapper)
    env["LOUISE_TEST_REAL_PYTHON"] = sys.executable
    env["LOUISE_TEST_EXIT_FILE"] = str(root / "engine-exits")
    env["LOUISE_STATE_DIR"] = str(root / "louise-state")
    env["LOUISE_DEMO_STATE_DIR"] = str(root / "demo-agent")
    return env


def _attach(socket: str) -> pynvim.Nvim:
    deadline = time.monotonic() + 30
    while True:
        try:
            return pynvim.attach("socket", path=socket)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def one_quit(root: Path, *, plugin: bool) -> tuple[float, str]:
    """Seconds from `:qa!` to Neovim's exit, and how the engine process ended."""
    root.mkdir(parents=True)
    socket = str(root / "nvim.sock")
    init = ROOT / "tests" / "e2e" / "minimal_init.lua" if plugin else "NONE"
    proc = subprocess.Popen([nvim_binary(), "--headless", "--listen", socket, "-u", str(init),
                             "-i", "NONE"], cwd=root, env=_env(root), stdin=subprocess.DEVNULL)
    try:
        session = _attach(socket)
        engine_pid = 0
        if plugin:
            nvim = Driver(session)
            session.command("LouiseChat")
            nvim.wait("return require('louise.chat').last")
            nvim.wait_status("ready")
            nvim.run_prompt("hello")
            engine_pid = int(nvim.lua("return require('louise.engine').pid"))
        start = time.perf_counter()
        with contextlib.suppress(Exception):  # Neovim exits while answering
            session.command("qa!")
        proc.wait(timeout=30)
        seconds = time.perf_counter() - start
        return seconds, _engine_end(root) if engine_pid else "-"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _engine_end(root: Path) -> str:
    """How the engine process ended, as its wrapper reported (none: SIGKILLed with it)."""
    deadline = time.monotonic() + 5
    exits = root / "engine-exits"
    while not exits.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    status = exits.read_text().split()[:1] if exits.exists() else []
    if not status:
        return "killed (no status)"
    return "exited 0" if status == ["0"] else f"status {status[0]}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=7)
    args = parser.parse_args()
    louise: list[float] = []
    bare: list[float] = []
    with tempfile.TemporaryDirectory(prefix="louise-quit-") as scratch:
        for run in range(args.n):
            seconds, how = one_quit(Path(scratch) / f"louise-{run}", plugin=True)
            louise.append(seconds)
            base, _ = one_quit(Path(scratch) / f"bare-{run}", plugin=False)
            bare.append(base)
            print(f"run {run + 1}: louise {seconds * 1000:7.1f} ms (engine {how}), "
                  f"no plugin {base * 1000:6.1f} ms", flush=True)
    print(f"median :qa! after a turn: louise {statistics.median(louise) * 1000:.1f} ms, "
          f"no plugin {statistics.median(bare) * 1000:.1f} ms")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
