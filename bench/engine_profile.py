"""Where the engine's CPU goes while an agent streams (issue 25, item 3): a stand-in for
louise's interpreter that runs `python -m louise.nvim` with the engine thread observed,
and anything else (the fake agent) as it is.

    BENCH_LOUISE_PYTHON=bench/engine_profile.sh BENCH_PROFILE=DIR[:MODE] \
        .venv/bin/python bench/stream.py --clients louise --scenarios paced --reps 1

`bench/engine_profile.sh` runs this file with the interpreter it was started from
(`BENCH_REAL_PYTHON`, bench/stream.py sets it). MODE:
- `profile` (default): cProfile of the engine thread, from its start to its end, into
  `DIR/engine-PID.prof` (read it with `python -m pstats`);
- `count`: counts of the engine loop's own work, every 0.5 s with the process's CPU,
  into `DIR/engine-PID.jsonl`: rounds of the loop (`_run_once`), callbacks run, tasks and
  futures created, timers scheduled (`call_at`) and cancelled, selector waits and the
  events they returned, pipe reads, frames posted; `bench/engine_profile.py --read FILE`
  prints them per frame over the steady part of the last stream;
- `segments`: as `count`, with the engine thread's CPU (µs, `thread_time_ns`) inside each
  step of a streamed chunk's way (the slot's callback, the pull, parse, merge, handlers,
  the batch, the frame sent, the last answer read, the selector) and per callback.
Nothing here is imported by louise; the hook lives in bench/ only.
"""

from __future__ import annotations

import collections
import json
import os
import runpy
import sys
import threading
from pathlib import Path
from typing import Any


def _counting(counts: collections.Counter[str]) -> None:
    """Wrap what the engine's asyncio loop does per round with counters (engine thread
    only: pynvim's loop on the main thread is left out)."""
    import asyncio
    import asyncio.base_events as base_events
    import selectors

    engine = threading.local()

    def on_engine() -> bool:
        return getattr(engine, "on", False)

    def wrap(owner: Any, name: str, key: str) -> None:
        original = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            if on_engine():
                counts[key] += 1
            return original(*args, **kwargs)

        setattr(owner, name, counted)

    wrap(base_events.BaseEventLoop, "_run_once", "loop rounds")
    wrap(base_events.BaseEventLoop, "call_at", "timers scheduled (call_at)")
    wrap(base_events.BaseEventLoop, "call_soon", "call_soon")
    wrap(base_events.BaseEventLoop, "create_future", "futures created (loop.create_future)")
    wrap(base_events.BaseEventLoop, "create_task", "tasks created")
    wrap(asyncio.TimerHandle, "cancel", "timers cancelled")
    wrap(asyncio.Handle, "_run", "callbacks run")

    original_select = selectors.EpollSelector.select

    def select(self: Any, timeout: float | None = None) -> Any:
        ready = original_select(self, timeout)
        if on_engine():
            counts["selector waits"] += 1
            counts["selector events"] += len(ready)
            if timeout == 0:
                counts["selector polls (timeout 0)"] += 1
        return ready

    selectors.EpollSelector.select = select  # type: ignore[method-assign]

    original_read = os.read

    def read(fd: int, size: int) -> bytes:
        if on_engine():
            counts["os.read"] += 1
        return original_read(fd, size)

    os.read = read

    original_run = threading.Thread.run

    def run(self: threading.Thread) -> None:
        if self.name == "louise-engine":
            engine.on = True
        original_run(self)

    threading.Thread.run = run  # type: ignore[method-assign]

    from louise.nvim.channel import NvimChannel

    wrap(NvimChannel, "post", "frames posted (NvimChannel.post)")
    wrap(NvimChannel, "post_nowait", "frames posted (NvimChannel.post_nowait)")
    from louise.nvim.frames import FrameLoop
    original_step = FrameLoop._slot_step

    def step(self: Any) -> Any:
        leave = original_step(self)
        counts[f"slots ending {leave}"] += 1
        return leave

    FrameLoop._slot_step = step  # type: ignore[method-assign]


def _segments(counts: collections.Counter[str]) -> None:
    """CPU of the engine thread inside each step of a streamed chunk's way, in µs, summed
    (`thread_time_ns`: a system call each, ~1 µs, counted in the step it ends)."""
    import asyncio
    import inspect
    import time

    from louise.acp.handlers import Dispatcher
    from louise.acp.rpc_state import RpcState
    from louise.nvim.channel import NvimChannel
    from louise.nvim.frames import FrameLoop

    clock = time.thread_time_ns
    engine = threading.local()
    depth = [0]

    def timed(owner: Any, name: str, key: str) -> None:
        original = getattr(owner, name)
        if inspect.iscoroutinefunction(original):
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                # Only the steps that finish without suspending are counted whole.
                start = clock()
                try:
                    return await original(*args, **kwargs)
                finally:
                    if getattr(engine, "on", False):
                        counts[key] += (clock() - start) // 1000
                        counts[key + " (calls)"] += 1
            setattr(owner, name, wrapper)
        else:
            def plain(*args: Any, **kwargs: Any) -> Any:
                start = clock()
                try:
                    return original(*args, **kwargs)
                finally:
                    if getattr(engine, "on", False):
                        counts[key] += (clock() - start) // 1000
                        counts[key + " (calls)"] += 1
            setattr(owner, name, plain)

    from louise.acp.jsonrpc import JsonRpcPeer
    timed(FrameLoop, "_on_slot", "µs: a slot's callback, all in (FrameLoop._on_slot)")
    timed(JsonRpcPeer, "_pull", "µs: pulled read, all in (JsonRpcPeer._pull)")
    timed(Dispatcher, "notify_now", "µs: handlers (Dispatcher.notify_now)")
    timed(NvimChannel, "post_nowait", "µs: frame sent (NvimChannel.post_nowait)")
    timed(NvimChannel, "answer_nowait", "µs: last answer read (NvimChannel.answer_nowait)")
    timed(RpcState, "receive_data", "µs: parse (RpcState.receive_data)")
    timed(Dispatcher, "coalesce", "µs: merge chunks (Dispatcher.coalesce)")
    timed(Dispatcher, "handle_notification", "µs: handlers (Dispatcher.handle_notification)")
    timed(FrameLoop, "take", "µs: the frame's batch (FrameLoop.take)")
    timed(NvimChannel, "post", "µs: frame sent (NvimChannel.post)")
    timed(FrameLoop, "settle", "µs: last answer read (FrameLoop.settle)")
    import selectors
    timed(selectors.EpollSelector, "select", "µs: selector (epoll and its Python)")
    del depth
    import asyncio.base_events as base_events
    timed(base_events.BaseEventLoop, "_run_once", "µs: loop rounds (_run_once, all in)")
    handle_run = asyncio.Handle._run

    def run_handle(handle: Any) -> None:
        if not getattr(engine, "on", False):
            handle_run(handle)
            return
        callback = handle._callback
        owner = getattr(callback, "__self__", None)
        if isinstance(owner, asyncio.Task):
            coro = owner.get_coro()
            name = "task " + getattr(coro, "__qualname__", "?")
        else:
            name = "callback " + getattr(callback, "__qualname__", repr(callback))[:60]
        start = clock()
        handle_run(handle)
        counts["µs: " + name] += (clock() - start) // 1000
        counts["µs: " + name + " (calls)"] += 1

    asyncio.Handle._run = run_handle  # type: ignore[method-assign]

    original_run = threading.Thread.run

    def run(self: threading.Thread) -> None:
        if self.name == "louise-engine":
            engine.on = True

            def total() -> None:
                counts["µs: engine thread total"] = clock() // 1000
            engine.total = total
            wrap_total = selectors.EpollSelector.select

            def select(sel: Any, timeout: float | None = None) -> Any:
                total()
                return wrap_total(sel, timeout)

            selectors.EpollSelector.select = select  # type: ignore[method-assign]
        original_run(self)

    threading.Thread.run = run  # type: ignore[method-assign]
    from louise.nvim.channel import NvimChannel as Channel

    post = Channel.post

    async def counted_post(self: Any, *args: Any) -> Any:
        counts["frames posted (NvimChannel.post)"] += 1
        return await post(self, *args)

    Channel.post = counted_post  # type: ignore[method-assign]
    post_nowait = Channel.post_nowait

    def counted_post_nowait(self: Any, *args: Any) -> Any:
        counts["frames posted (NvimChannel.post_nowait)"] += 1
        return post_nowait(self, *args)

    Channel.post_nowait = counted_post_nowait  # type: ignore[method-assign]


def _snapshots(counts: collections.Counter[str], path: Path) -> None:
    """The counts every SNAPSHOT_SECONDS with the process's CPU, one JSON line each: the
    steady part of a stream is read as the difference of two of them."""
    import time

    def write() -> None:
        with path.open("w") as f:
            while True:
                time.sleep(SNAPSHOT_SECONDS)
                f.write(json.dumps({"t": time.monotonic(), "cpu": time.process_time(),
                                    **counts}) + "\n")
                f.flush()

    threading.Thread(target=write, name="bench-snapshots", daemon=True).start()


SNAPSHOT_SECONDS = 0.5


def _profiling(out: Path) -> None:
    import cProfile
    import time

    original_run = threading.Thread.run

    def run(self: threading.Thread) -> None:
        if self.name != "louise-engine":
            original_run(self)
            return
        # CPU time of the thread, not the wall clock: a send that wakes Neovim may lose the
        # CPU to it, and that wait is not the engine's work.
        profiler = cProfile.Profile(time.thread_time)
        profiler.enable()
        try:
            original_run(self)
        finally:
            profiler.disable()
            profiler.dump_stats(out / f"engine-{os.getpid()}.prof")

    threading.Thread.run = run  # type: ignore[method-assign]


def read(path: Path) -> None:
    """Per frame over the busiest 3 s: snapshots whose frame count rose steadily."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    frames = ("frames posted (NvimChannel.post)", "frames posted (NvimChannel.post_nowait)")
    best = None
    for i in range(len(rows)):
        j = i + int(3 / SNAPSHOT_SECONDS)
        if j < len(rows):
            gained = sum(rows[j].get(f, 0) - rows[i].get(f, 0) for f in frames)
            if best is None or gained > best[0]:
                best = (gained, i, j)
    assert best is not None and best[0] > 0, "no frames"
    count, i, j = best
    a, b = rows[i], rows[j]
    seconds = b["t"] - a["t"]
    print(f"{count} frames in {seconds:.1f} s; CPU {1e6 * (b['cpu'] - a['cpu']) / count:.0f}"
          " µs per frame (the counting's own cost included)")
    for key in sorted(set(a) | set(b)):
        if key not in ("t", "cpu"):
            print(f"  {key:<40} {(b.get(key, 0) - a.get(key, 0)) / count:8.2f} per frame")


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--read"]:
        read(Path(args[1]))
        return
    if "-P" in args[:1]:  # louise's engine is started with `-P -m louise.nvim`
        args = args[1:]
    if args[:2] != ["-m", "louise.nvim"]:  # the agent, or anything else: as it is
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")
        return
    where, _, mode = os.environ["BENCH_PROFILE"].partition(":")
    out = Path(where)
    out.mkdir(parents=True, exist_ok=True)
    sys.argv = ["louise.nvim", *args[2:]]
    sys.path.pop(0)  # this file's directory; `-P`: no current directory either
    counts: collections.Counter[str] = collections.Counter()
    if mode in ("count", "segments"):
        (_counting if mode == "count" else _segments)(counts)
        _snapshots(counts, out / f"engine-{os.getpid()}.jsonl")
    else:
        _profiling(out)
    runpy.run_module("louise.nvim", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
