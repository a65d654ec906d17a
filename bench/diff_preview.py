"""Diff previews (issue 14, item 4): what computing a tool call's preview costs on the
engine loop, for files of 400, 10,000 and 30,000 lines with every 7th line changed, and
the same with one line changed in the middle.

    .venv/bin/python bench/diff_preview.py [--reps 5]

Prints the median and max ms of `diff_lines` (chat tool details and the permission
float's preview) and of `tool_meta` (what a shown chat computes per tool call update).
Target: <= 20 ms for any diff.

Then the whole-file diff tab (`d` in the permission float, lua/louise/permission.lua):
side by side in Neovim's diff mode, or one unified diff from vim.diff past
MAX_SIDE_BY_SIDE_COST (lines x changes: diff mode alone took 574 ms for 30,000 lines
with 4,286 changes), the file on disk against the proposed text, timed in a real Neovim
with a UI attached from the key to the tab drawn (`redraw` included).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from louise.nvim.tool_text import diff_lines

TARGET_MS = 20.0


def case(lines: int, every: int) -> list[dict[str, str]]:
    old = [f"    value_{i} = compute({i})  # a line of code" for i in range(lines)]
    new = [("    changed = True  # " + line) if i % every == every // 2 else line
           for i, line in enumerate(old)]
    return [{"type": "diff", "path": "/ws/big.py", "oldText": "\n".join(old),
             "newText": "\n".join(new)}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    worst = 0.0
    print(f"{'file lines':>10} {'changed':>14} {'median ms':>10} {'max ms':>8} {'lines out':>9}")
    for lines in (400, 10_000, 30_000):
        for every, label in ((7, "every 7th"), (lines, "one, mid-file")):
            content = case(lines, every)
            times = []
            out: list[str] = []
            for _ in range(args.reps):
                start = time.perf_counter()
                out = diff_lines(content, "/ws")
                times.append((time.perf_counter() - start) * 1000)
            worst = max(worst, statistics.median(times))
            print(f"{lines:>10,} {label:>14} {statistics.median(times):>10.1f} "
                  f"{max(times):>8.1f} {len(out):>9}")
    print(f"worst median {worst:.1f} ms (target <= {TARGET_MS:g} ms: "
          f"{'PASS' if worst <= TARGET_MS else 'MISS'})")
    diff_tab(args.reps)
    return 0


TAB = """
local path, new = ...
local p = require('louise.permission')
p.current = { id = 1, options = { { id = 'allow', name = 'Allow' } },
              diffs = { { path = path, old = 'x', new = new, mode = 'diff' } } }
local start = vim.uv.hrtime()
p.diff()
vim.cmd('redraw')
local ms = (vim.uv.hrtime() - start) / 1e6
local filler = vim.fn.diff_filler(1)  -- touch the diff so it is computed
vim.cmd('tabclose')
return ms
"""


def diff_tab(reps: int) -> None:
    import os
    import tempfile

    from bench.stream import nvim_binary
    from bench.uiclient import UIClient

    root = Path(__file__).resolve().parent.parent
    print("diff tab (whole files, UI attached):")
    print(f"{'file lines':>10} {'changed':>14} {'median ms':>10} {'max ms':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CONFIG_HOME=tmp, XDG_DATA_HOME=tmp, XDG_STATE_HOME=tmp,
                   XDG_CACHE_HOME=tmp)
        ui = UIClient([nvim_binary(), "--embed", "-u", "NONE", "-i", "NONE", "--cmd",
                       f"set rtp^={root}"], env=env, cwd=tmp)
        try:
            for lines in (400, 10_000, 30_000):
                for every, label in ((7, "every 7th"), (lines, "one, mid-file")):
                    content = case(lines, every)[0]
                    path = Path(tmp, "big.py")
                    path.write_text(content["oldText"] + "\n")
                    times = [ui.lua(TAB, str(path), content["newText"] + "\n")
                             for _ in range(reps)]
                    print(f"{lines:>10,} {label:>14} {statistics.median(times):>10.1f} "
                          f"{max(times):>8.1f}")
        finally:
            ui.close()


if __name__ == "__main__":
    raise SystemExit(main())
