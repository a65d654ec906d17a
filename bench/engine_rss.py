"""Memory of louise's Python process inside Neovim (issue 25, item 5): its RSS idle (the
engine started, no chat), with one chat ready, and after each of N chats got a 5 MB reply
(bench/fast_agent.py, 60-byte chunks in one burst: `line60`, whose repeated body
compresses 20x, or `words`, which compresses like prose, ~3x); the growth per 5 MB session
against the reply's size, and beyond the first session (the first also leaves the
allocator's high-water mark of decoding a burst, reused by the next). Neovim holds each
reply too (its own process, not counted).

    .venv/bin/python bench/engine_rss.py [--sessions 4] [--shape words] [--reps 3]
                                         [--before DIR]

`--before DIR` runs the louise source in DIR too (a checkout of another commit, with this
venv: PYTHONPATH=DIR for the engine), one after the other, each in a fresh Neovim; with
`--reps N`, N rounds of both, interleaved, then each figure's median (min–max).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import spread  # noqa: E402
from bench.kept_state import carry_in, carry_out  # noqa: E402

CHUNKS = 83_334  # x 60 bytes: 5 MB
INIT = r"""
vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)
vim.opt.swapfile = false
vim.cmd('runtime plugin/louise.lua')
require('louise').setup {
  python = vim.env.LOUISE_PYTHON,
  agents = (function()
    local agents = {} -- one per chat: the fast agent has one session id
    for i = 1, tonumber(vim.env.LOUISE_BENCH_SESSIONS) do
      agents['fast' .. i] = { command = vim.env.LOUISE_PYTHON,
                             args = { vim.env.LOUISE_PLUGIN_ROOT .. '/bench/fast_agent.py' } }
    end
    return agents
  end)(),
  default_agent = 'fast1',
  checkpoints = { enabled = false },
  start_engine = 'idle',
}
"""


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def wait(nvim: Any, lua: str, *args: Any, timeout: float = 300.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = nvim.exec_lua(lua, *args)
        if value:
            return value
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for: {lua}")


def embedded_nvim(init: Path, env: dict[str, str]) -> Any:
    """A headless `nvim --embed` with `init` and exactly `env` (pynvim's child gets this
    process's environment, so it is swapped for the call)."""
    import pynvim

    from bench.startup import nvim_binary

    old_env = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-u",
                                            str(init), "-i", "NONE", "-n"])
    finally:
        os.environ.clear()
        os.environ.update(old_env)


def measure(tmp: Path, source: Path | None, sessions: int,
            kept: Path | None = None, shape: str = "line60") -> list[tuple[str, float]]:
    """`kept`: what a person's state directory keeps across runs (the engine's compiled
    dataclass methods, the validated configuration: bench/kept_state.py)."""
    init = tmp / "init.lua"
    init.write_text(INIT)
    env = dict(os.environ, LOUISE_PLUGIN_ROOT=str(ROOT), LOUISE_PYTHON=sys.executable,
               LOUISE_BENCH_SESSIONS=str(sessions),
               **{f"XDG_{k.upper()}_HOME": str(tmp / k)
                  for k in ("config", "data", "state", "cache")})
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    (tmp / "work").mkdir()
    state = tmp / "state" / "louise"
    carry_in(kept, state)
    nvim = embedded_nvim(init, env)
    figures: list[tuple[str, float]] = []
    try:
        nvim.command(f"cd {tmp / 'work'}")
        pid = int(wait(nvim, "local E = require('louise.engine'); return E.ready and E.pid"))
        time.sleep(1.0)  # idle: the engine's start is over
        figures.append(("idle, no chat", rss_mib(pid)))
        key = ""
        for i in range(sessions):
            nvim.command(f"LouiseNew fast{i + 1}" if i else "LouiseChat")
            key = wait(nvim, "local c = require('louise.chat');"
                             " local s = c.last and c.chats[c.last];"
                             " return c.last ~= ... and s and s.status"
                             " and s.status.status == 'ready' and c.last", key)
            if i == 0:
                figures.append(("one chat ready", rss_mib(pid)))
            nvim.exec_lua("require('louise.engine').send('prompt', {key = ..., text ="
                          f" 'stream chunks={CHUNKS} shape={shape} rate=0'}})", key)
            wait(nvim, "local c = require('louise.chat'); local s = c.chats[...];"
                       " return s.status and s.status.turns_done == 1", key)
            figures.append((f"after {i + 1} x 5 MB", rss_mib(pid)))
    finally:
        nvim.close()
    carry_out(state, kept)
    return figures




def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--shape", default="line60", choices=("line60", "words"))
    parser.add_argument("--reps", type=int, default=1, help="runs of each, interleaved")
    parser.add_argument("--before", help="a checkout of the louise source to compare with")
    parser.add_argument("--empty-state", action="store_true",
                        help="every run with an empty state directory (a first chat ever)")
    args = parser.parse_args()
    runs: dict[str, Path | None] = {"this checkout": None}
    if args.before:
        runs["before"] = Path(args.before).resolve()
    print(f"louise's engine RSS (MiB), {args.sessions} chats of one 5 MB reply each "
          f"({args.shape}); load "
          f"average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    kept_dir = tempfile.TemporaryDirectory(prefix="louise-kept-state-")
    kept: Path | None = None if args.empty_state else Path(kept_dir.name)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as name:
        measure(Path(name), None, 1, kept)  # a first start writes this checkout's caches
    if kept is not None and args.before:
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as name:
            measure(Path(name), runs["before"], 1, kept)  # and the other's
    reply = CHUNKS * 60 / 2**20
    summary: dict[str, dict[str, list[float]]] = {label: {} for label in runs}
    for _rep in range(args.reps):
        for label, source in runs.items():
            with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as name:
                figures = measure(Path(name), source, args.sessions, kept, args.shape)
            by_name = dict(figures)
            rows = {"idle": by_name["idle, no chat"], "one chat ready": by_name["one chat ready"],
                    "per 5 MB session": (figures[-1][1] - by_name["one chat ready"])
                    / args.sessions}
            if args.sessions > 1:
                rows["beyond the first"] = (figures[-1][1] - by_name["after 1 x 5 MB"]) \
                    / (args.sessions - 1)
            for what, value in rows.items():
                summary[label].setdefault(what, []).append(value)
            print(f"  {label}: " + ", ".join(f"{what} {mib:.1f}" for what, mib in figures))
    for label, rows in summary.items():
        print(f"{label}, median (min–max) of {args.reps}:")
        for what, values in rows.items():
            ratio = "" if what in ("idle", "one chat ready") else \
                f" = {statistics.median(values) / reply:.2f} x the reply"
            print(f"    {what}: {spread(values)} MiB{ratio}")
    kept_dir.cleanup()
    print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
