"""The engine's start in CPU (issue 25, item 2): louise's Python process inside a headless
Neovim, its CPU (user + system, from /proc) and RSS when it says it is ready
(`start_engine = 'idle'`, the README's setup{} with bench/fast_agent.py), and again once a
first chat is ready. CPU is what the start costs on a shared machine whatever the load;
the wall-clock figures (bench/startup.py) move with the other processes.

    .venv/bin/python bench/engine_cpu.py [N] [--before DIR]

`--before DIR` runs the louise source in DIR too (PYTHONPATH=DIR for the engine, with this
venv), alternating with this checkout, the order swapped every round; round 0 compiles
the bytecode and fills each side's code cache (louise/storage/code_cache.py) and is not
counted. Figures: median (min-max); CPU in steps of the kernel's clock tick (10 ms here).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import spread  # noqa: E402
from bench.kept_state import carry_in, carry_out  # noqa: E402

INIT = r"""
vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)
vim.opt.swapfile = false
vim.cmd('runtime plugin/louise.lua')
require('louise').setup {
  python = vim.env.LOUISE_PYTHON,
  agents = { fast = { command = vim.env.LOUISE_PYTHON,
                      args = { vim.env.LOUISE_PLUGIN_ROOT .. '/bench/fast_agent.py' } } },
  default_agent = 'fast',
  permissions = { rules = { { kind = { 'read', 'search' }, decision = 'allow' } } },
  start_engine = 'idle',
}
"""
TICK = os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICK  # utime + stime


def once(tmp: Path, source: Path, this: bool, pyc: Path, kept: Path | None) -> list[float]:
    """CPU and RSS at ready, then with a chat ready, of one fresh Neovim's engine."""
    from bench.engine_rss import embedded_nvim, rss_mib, wait

    for name in ("config", "data", "state", "cache", "work"):
        (tmp / name).mkdir(parents=True)
    (tmp / "init.lua").write_text(INIT)
    state = tmp / "state" / "louise"
    carry_in(kept, state)  # the code and configuration caches (bench/kept_state.py)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env.update(LOUISE_PLUGIN_ROOT=str(source), LOUISE_PYTHON=sys.executable,
               PYTHONPYCACHEPREFIX=str(pyc),
               **{f"XDG_{k.upper()}_HOME": str(tmp / k)
                  for k in ("config", "data", "state", "cache")})
    if not this:
        env["PYTHONPATH"] = str(source)
    nvim = embedded_nvim(tmp / "init.lua", env)
    try:
        nvim.command(f"cd {tmp / 'work'}")
        pid = int(wait(nvim, "local E = require('louise.engine'); return E.ready and E.pid",
                       timeout=60))
        time.sleep(0.3)  # its start is over
        figures = [cpu_ms(pid), rss_mib(pid)]
        nvim.command("LouiseChat")
        wait(nvim, "local c = require('louise.chat'); local s = c.last and c.chats[c.last];"
                   " return s and s.status and s.status.status == 'ready'", timeout=60)
        time.sleep(0.3)
        figures += [cpu_ms(pid), rss_mib(pid)]
    finally:
        nvim.close()
    carry_out(state, kept)
    return figures




def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", type=int, nargs="?", default=10)
    parser.add_argument("--before", help="a checkout of the louise source to compare with")
    parser.add_argument("--empty-state", action="store_true",
                        help="every run with an empty state directory (a first chat ever)")
    args = parser.parse_args()
    sides = [("this checkout", ROOT)]
    if args.before:
        sides.append(("before", Path(args.before).resolve()))
    print(f"louise's engine at ready and with a chat ready, {args.runs} rounds; load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    results: dict[str, list[list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.runs + 1):
            for name, source in sides if round_ % 2 == 0 else sides[::-1]:
                side = Path(tmp, name.replace(" ", "-"))
                figures = once(side / str(round_), source, source == ROOT, side / "pyc",
                               None if args.empty_state else side / "kept-state")
                if round_:
                    results.setdefault(name, []).append(figures)
    for name, rows in results.items():
        at_ready, rss_ready, at_chat, rss_chat = (
            list(column) for column in zip(*rows, strict=True))
        print(f"  {name}: CPU at ready {spread(at_ready)} ms, RSS {spread(rss_ready)} MiB;"
              f" with a chat ready: CPU {spread(at_chat)} ms, RSS {spread(rss_chat)} MiB")
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
