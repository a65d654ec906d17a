"""What checkpoints cost (issue 27): on a generated 10,000-file / 200 MB workspace, the
time and disk of the first checkpoint and of each later one, a turn's wall time for its
two checkpoints, and the first-token delay of a prompt with and without checkpoints, in
one run. Targets: no first-token delay; at most 200 ms of wall time per turn after the
first checkpoint.

    .venv/bin/python bench/checkpoints.py [--files 10000] [--mb 200] [--turns 10]
                                          [--prompts 10]

The first-token delay is measured with the demo agent through the real registry: from
`registry.prompt()` to the agent's first reply chunk, for prompts sent while no checkpoint
work is under way ("warm"), and for the first prompt right after a session opens in a
workspace never checkpointed ("cold": its first checkpoint, the costly one, is under way
while the prompt runs).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def generate(root: Path, files: int, total_bytes: int) -> tuple[int, int]:
    """A source-like tree: `files` text files of unique content, `total_bytes` in all."""
    rng = random.Random(27)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2, 10)))
             for _ in range(4000)]
    pool = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + "\n"
            for _ in range(20_000)]
    blob = "".join(pool)
    size = total_bytes // files
    written = 0
    for index in range(files):
        folder = root / f"pkg{index // 100:03d}" / f"mod{(index // 10) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        start = rng.randrange(0, len(blob) - size)
        text = f"# file {index}\n" + blob[start:start + size - 16]
        (folder / f"f{index}.py").write_text(text)
        written += len(text)
    (root / ".gitignore").write_text("build/\n")
    return files + 1, written


def disk(path: Path) -> int:
    from louise.checkpoints.workspace_files import tree_bytes

    return tree_bytes(path)


def mib(value: float) -> str:
    return f"{value / 1048576:,.1f} MiB"


def ms(value: float) -> str:
    return f"{value * 1000:,.0f} ms"


def checkpoint_costs(work: Path, state: Path, turns: int, files: int) -> dict[str, Any]:
    from louise.checkpoints.git import find_git
    from louise.checkpoints.workspace import WorkspaceStore
    from louise.config.checkpoints import CheckpointsConfig

    store = WorkspaceStore(state / "checkpoints", work, CheckpointsConfig(), find_git())
    started = time.perf_counter()
    store.warm()
    first = time.perf_counter() - started
    first_disk = disk(store.dir)
    befores, afters, totals, growth = [], [], [], []
    rng = random.Random(1)
    for number in range(turns):
        size = disk(store.dir)
        t0 = time.perf_counter()
        record = store.begin("bench:1", "bench", f"turn {number}")
        t1 = time.perf_counter()
        for _ in range(3):  # the agent edits three files and adds one
            index = rng.randrange(files)
            path = work / f"pkg{index // 100:03d}" / f"mod{(index // 10) % 10}" / f"f{index}.py"
            lines = path.read_text().splitlines(keepends=True)
            lines[len(lines) // 2] = f"changed in turn {number}\n"
            path.write_text("".join(lines))
        (work / f"new{number}.py").write_text(f"print({number})\n")
        t2 = time.perf_counter()
        store.end(record, "end_turn")
        t3 = time.perf_counter()
        befores.append(t1 - t0)
        afters.append(t3 - t2)
        totals.append((t1 - t0) + (t3 - t2))
        growth.append(disk(store.dir) - size)
    idle = time.perf_counter()
    record = store.begin("bench:1", "bench", "nothing")
    store.end(record, "end_turn")
    unchanged = time.perf_counter() - idle
    return {"first": first, "first_disk": first_disk, "before": befores, "after": afters,
            "turn": totals, "growth": growth, "unchanged": unchanged,
            "store_disk": disk(store.dir)}


async def first_tokens(work: Path, prompts: int, checkpoints: bool,
                       cold: bool) -> list[float]:
    """Seconds from prompt() to the agent's first reply chunk."""
    from louise.checkpoints.service import Checkpoints
    from louise.config.checkpoints import CheckpointsConfig
    from louise.config.loading import load_config_mapping
    from louise.registry import SessionRegistry
    from louise.session import MessageChunk

    config = load_config_mapping({})
    service = Checkpoints(CheckpointsConfig()) if checkpoints else None
    out: list[float] = []
    first_chunk = anyio.Event()

    def listen(event: Any) -> None:
        if isinstance(event, MessageChunk) and event.role == "agent":
            first_chunk.set()

    async with SessionRegistry(config, checkpoints=service, transcripts_dir=None,
                               limits_cache=None, permission_memory=None) as registry:
        registry.subscribe(listen)
        session = await registry.new_session("demo", str(work))
        if service is not None and not cold:
            await service.idle()  # the workspace's first checkpoint is done
        for _ in range(1 if cold else prompts):
            first_chunk = anyio.Event()
            started = time.perf_counter()
            async with anyio.create_task_group() as tg:
                tg.start_soon(registry.prompt, session.session_id,
                              "/scenario stream chunks=3 size=10 delay_ms=0")
                await first_chunk.wait()
                out.append(time.perf_counter() - started)
            if service is not None:
                await service.idle()
    return out


def spread(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
    return (f"median {ms(statistics.median(values))}, p90 {ms(p90)}, "
            f"max {ms(values[-1])} (n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=10)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="louise-bench-checkpoints-"))
    os.environ["LOUISE_STATE_DIR"] = str(base / "state")
    os.environ["LOUISE_CONFIG"] = str(base / "none.toml")
    try:
        print(f"cpus {os.cpu_count()}, load average {load()} at the start")
        work = base / "work"
        started = time.perf_counter()
        count, written = generate(work, args.files, args.mb * 1024 * 1024)
        print(f"workspace: {count:,} files, {mib(written)} "
              f"(generated in {time.perf_counter() - started:.1f} s)")

        costs = checkpoint_costs(work, base / "bench-state", args.turns, args.files)
        print("\ncheckpoint cost (WorkspaceStore, git):")
        print(f"  first checkpoint (copies the workspace): {costs['first']:.1f} s, "
              f"{mib(costs['first_disk'])} on disk")
        print(f"  before a turn: {spread(costs['before'])}")
        print(f"  after a turn (3 files edited, 1 added; with its summary): "
              f"{spread(costs['after'])}")
        print(f"  wall time per turn, both checkpoints: {spread(costs['turn'])}  "
              "[target: <= 200 ms]")
        print(f"  a turn that changed nothing: {ms(costs['unchanged'])}")
        print(f"  disk per turn: median {mib(statistics.median(costs['growth']))}; "
              f"store after {args.turns + 1} turns: {mib(costs['store_disk'])}")

        print("\nfirst-token delay (demo agent, prompt() to the first reply chunk):")
        without = anyio.run(first_tokens, work, args.prompts, False, False)
        print(f"  without checkpoints: {spread(without)}")
        warm_work = base / "warm"
        shutil.copytree(work, warm_work)
        warm = anyio.run(first_tokens, warm_work, args.prompts, True, False)
        print(f"  with checkpoints:    {spread(warm)}  [target: no delay]")
        cold_work = base / "cold"
        shutil.copytree(work, cold_work)
        cold = anyio.run(first_tokens, cold_work, 1, True, True)
        print(f"  with checkpoints, first prompt while the first checkpoint is under "
              f"way: {ms(cold[0])}")
        delta = statistics.median(warm) - statistics.median(without)
        print(f"  median difference (with - without): {delta * 1000:+,.0f} ms")
        print(f"\nload average {load()} at the end")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
