"""What one wake-up costs on this machine (issue 25, item 3): the CPU a process spends to
sleep until a timer and run again, with nothing else to do.

    .venv/bin/python bench/wake_cost.py [--reps 5] [--wakes 200] [--interval-ms 12]

A streaming chat costs louise at least one wake-up of its Python engine and one of Neovim
per frame (bench/stream.py counts them: ~1.2 and ~1.0), on top of the frame's own work;
the naive Lua client has one process only, woken once per chunk. This prints the floor
under those figures: the CPU (utime + stime of the thread, `time.thread_time`) of one
wake-up, as

- `epoll`: a bare `epoll.poll(timeout)` in a loop (the kernel's share: the timer, the
  switch away and back; what a libuv or asyncio loop pays at the least);
- `asyncio`: `await asyncio.sleep(interval)` on an asyncio loop (what the engine's loop
  pays: the kernel's share and the loop's own Python: its timer heap, a round of
  `_run_once`, the task's step), the engine's frame interval by default;

each median (min-max) over the repetitions, the load average before and after, and what
those wake-ups come to per 5 s at the engine's frame rate (one per frame interval).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import select
import statistics
import sys
import time
from pathlib import Path


def load() -> str:
    with contextlib.suppress(OSError):
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return "?"


def epoll_wakes(wakes: int, interval: float) -> float:
    """CPU µs per wake-up of a bare epoll wait with a timeout."""
    poller = select.epoll()
    try:
        start = time.thread_time_ns()
        for _ in range(wakes):
            poller.poll(interval)
        return (time.thread_time_ns() - start) / wakes / 1000
    finally:
        poller.close()


def asyncio_wakes(wakes: int, interval: float) -> float:
    """CPU µs per wake-up of a task sleeping on an asyncio loop."""

    async def sleeper() -> float:
        start = time.thread_time_ns()
        for _ in range(wakes):
            await asyncio.sleep(interval)
        return (time.thread_time_ns() - start) / wakes / 1000

    return asyncio.run(sleeper())


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--interval-ms", type=float, default=12.0)
    args = parser.parse_args()
    interval = args.interval_ms / 1000
    load_before = load()
    results: dict[str, list[float]] = {"epoll": [], "asyncio": []}
    for _ in range(args.reps):  # in turn, so both see the same load
        results["epoll"].append(epoll_wakes(args.wakes, interval))
        results["asyncio"].append(asyncio_wakes(args.wakes, interval))
    per_5s = 5.0 / interval
    print(f"bench/wake_cost.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"{args.reps} runs of {args.wakes} wake-ups every {args.interval_ms:g} ms; "
          f"load average {load_before} before, {load()} after")
    for name, values in results.items():
        cost = statistics.median(values)
        print(f"  {name:<8} CPU per wake-up, µs: {spread(values):<18} "
              f"one per {args.interval_ms:g} ms: {cost * per_5s / 1e6:.3f} s per 5 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
