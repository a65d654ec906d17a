"""Many sessions (issue 14, item 6): a frame with 19 status changes among 20 chats.

    .venv/bin/python bench/many_sessions.py [--reps 20]

A real Neovim with a UI attached (120x40) and louise on the runtimepath; 20 chats opened
by the frame applier (`require('louise.render').apply`, one shown, 19 in the background,
as the engine opens them), each with a finished turn. Then, alternately, a frame turning
19 of them to `prompting` and one turning them back to `ready` (every one changes the
background list in every winbar), timed inside Neovim: the applier's call plus the
redraw it causes. Target: <= 4 ms per frame.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stream import nvim_binary
from bench.uiclient import UIClient

ROOT = Path(__file__).resolve().parent.parent
CHATS = 20

FRAME = """
local batch = ...
local start = vim.uv.hrtime()
local report = require('louise.render').apply(batch)
local applied = vim.uv.hrtime()
vim.cmd('redraw')
local drawn = vim.uv.hrtime()
return { (applied - start) / 1e6, (drawn - start) / 1e6, report or vim.NIL }
"""


def status(n: int, state: str, turn: int) -> dict[str, object]:
    return {"status": state, "agent": "demo", "title": f"chat {n}", "mode": "default",
            "model": "demo-model", "context": 12, "context_stale": False, "cost": None,
            "error": None, "commands": ["scenario"], "command_info": [], "turn": turn,
            "cwd": "/ws", "turns_done": turn if state == "ready" else turn - 1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    keys = [f"demo:s{n}" for n in range(CHATS)]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CONFIG_HOME=tmp, XDG_DATA_HOME=tmp, XDG_STATE_HOME=tmp,
                   XDG_CACHE_HOME=tmp)
        ui = UIClient([nvim_binary(), "--embed", "-u", "NONE", "-i", "NONE", "--cmd",
                       f"set rtp^={ROOT}", "--cmd", "runtime plugin/louise.lua"],
                      env=env, cwd=tmp)
        try:
            ui.lua("require('louise').setup({})")
            opened = [{"key": key, "agent": "demo", "focus": n == 0}
                      for n, key in enumerate(keys)]
            chats = {key: [["block", f"b{n}", "agent", ["## demo", "a reply"]]]
                     for n, key in enumerate(keys)}
            ui.lua(FRAME, {"open": opened, "chats": chats,
                           "status": {key: status(n, "ready", 1) for n, key in enumerate(keys)}})
            applied, drawn = [], []
            for rep in range(args.reps):
                state = "prompting" if rep % 2 == 0 else "ready"
                turn = 2 + rep // 2
                batch = {"status": {key: status(n, state, turn)
                                    for n, key in enumerate(keys[1:], start=1)}}
                apply_ms, total_ms, report = ui.lua(FRAME, batch)
                if report:
                    raise AssertionError(f"the applier failed: {report}")
                applied.append(apply_ms)
                drawn.append(total_ms)
        finally:
            ui.close()
    print(f"bench/many_sessions.py --reps {args.reps}: {CHATS} chats, frames of "
          f"{CHATS - 1} status changes; load {load}")
    print(f"  render.apply           median {statistics.median(applied):6.2f} ms"
          f"  max {max(applied):6.2f} ms")
    print(f"  apply + redraw         median {statistics.median(drawn):6.2f} ms"
          f"  max {max(drawn):6.2f} ms   (target <= 4 ms: "
          f"{'PASS' if statistics.median(drawn) <= 4 else 'MISS'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
