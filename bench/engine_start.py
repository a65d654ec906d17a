"""The engine process's own start (issue 25 item 2), without Neovim's noise: `python -m
louise.nvim` driven on its stdio by a stand-in Neovim that answers its start's requests
(setup{}'s options, no server socket) until the process says it is ready (`on_ready`),
then closes the channel; no agent (LOUISE_EARLY_AGENT empty). Per run: ms to `on_ready`
and the process's CPU ms (to its exit); with `--callgrind`, its instructions instead
(valgrind; one run per side is enough: the count barely moves).

    .venv/bin/python bench/engine_start.py [N] [--before=DIR] [--callgrind]

DIR: `git archive` of the commit to compare with, bytecode compiled; the sides
alternate run by run. Each side has its own state directory, warmed first (the code and
configuration caches kept as a person's are).
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgpack

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import spread  # noqa: E402

OPTS = {"agents": {"fast": {"command": "/bin/true"}}, "default_agent": "fast",
        "permissions": {"rules": [{"kind": ["read", "search"], "decision": "allow"}]},
        "alerts": True}
# pynvim's handshake (the louise before this branch attached through it)
API_INFO = [1, {"types": {"Buffer": {"id": 0, "prefix": "nvim_buf_"},
                          "Window": {"id": 1, "prefix": "nvim_win_"},
                          "Tabpage": {"id": 2, "prefix": "nvim_tabpage_"}},
                "functions": [], "version": {"major": 0, "minor": 11, "api_level": 13}}]


def text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def start_once(root: Path, state: str, callgrind: str | None = None) -> tuple[float, float]:
    """(ms to on_ready, CPU ms) or, with `callgrind`, (ms, instructions)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(root), LOUISE_STATE_DIR=state, LOUISE_EARLY_AGENT="",
               LOUISE_CONFIG=str(Path(state) / "no-config.toml"))
    argv = [sys.executable, "-P", "-m", "louise.nvim"]
    if callgrind:
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind}", *argv]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                            stderr=subprocess.PIPE if callgrind else subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    unpacker = msgpack.Unpacker(raw=False)
    ready: float | None = None
    while ready is None:
        data = os.read(proc.stdout.fileno(), 65536)
        if not data:
            raise RuntimeError("the engine process ended before it was ready")
        unpacker.feed(data)
        for message in unpacker:
            if message[0] == 0:  # a request
                method, args = text(message[2]), [text(a) for a in message[3]]
                if method == "nvim_get_api_info":
                    result: Any = API_INFO
                elif "engine_opts()" in str(args[:1]):
                    result = [OPTS, None] if str(args[0]).startswith("return {") else OPTS
                else:
                    result = None
                proc.stdin.write(msgpack.packb([1, message[1], None, result]))
                proc.stdin.flush()
            elif message[0] == 2 and "on_ready" in str(text(message[2][0])):
                ready = (time.monotonic() - started) * 1000
    proc.stdin.close()
    err = proc.stderr.read() if proc.stderr is not None else b""
    proc.wait()
    if callgrind:
        found = re.search(rb"Collected : (\d+)", err)
        return ready, float(found.group(1)) if found else float("nan")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime) * 1000
    return ready, cpu


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs = int(args[0]) if args else 10
    before = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--before=")),
                  None)
    callgrind = "--callgrind" in sys.argv[1:]
    sides = [("after", ROOT)] + ([("before", Path(before).resolve())] if before else [])
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    results: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for name, root in sides:  # warm: bytecode, code cache, configuration cache
            for _ in range(2):
                start_once(root, f"{tmp}/{name}")
        for i in range(runs):
            for name, root in sides if i % 2 == 0 else sides[::-1]:
                out = f"{tmp}/callgrind.{name}.{i}" if callgrind else None
                results[name].append(start_once(root, f"{tmp}/{name}", out))
    print(f"`python -m louise.nvim` to on_ready (a stand-in Neovim, no agent), {runs} runs:")
    for name, values in results.items():
        second = "instructions (M)" if callgrind else "CPU ms to exit"
        seconds = [v[1] / 1e6 for v in values] if callgrind else [v[1] for v in values]
        print(f"  {name:<6} ms to on_ready {spread([v[0] for v in values])}; "
              f"{second} {spread(seconds)}")
    if before and not callgrind:
        ratio = statistics.median(v[1] for v in results["after"]) / statistics.median(
            v[1] for v in results["before"])
        print(f"  CPU after/before {ratio:.3f}")
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
