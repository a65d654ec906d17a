"""The session host's cost (issue 28): the same streams through `louise serve` (every
message via `louise attach` and the host) and in-process, interleaved in one run.

    .venv/bin/python bench/serve.py [--reps 3] [--chunks 1000] [--rate 200] [--json FILE]

A registry (as `louise chat` and the Neovim engine build it) drives the bundled demo
agent's `stream` scenario with stamped chunks: each starts with the agent's
CLOCK_MONOTONIC in µs at its write, this process's clock too, so a chunk's latency is
write -> the registry's event for it. Per mode and repetition:
- first token: prompt sent -> the first chunk's event, and that chunk's latency;
- paced: `--chunks` chunks at `--rate`/s: per-chunk latency (median, p99, max), chunks
  later than one 60 Hz frame (16.7 ms: a frame missed), and the CPU (utime + stime from
  /proc) of louise's processes over the stream, per 5 s of it: in-process, this process;
  through the host, this process + `louise attach` + the host (the agent apart in both).
The host is started once (by the first attach) and reused, as a person's would be.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402

from louise.config.loading import load_config_mapping  # noqa: E402
from louise.registry import SessionRegistry  # noqa: E402
from louise.session import MessageChunk  # noqa: E402

FRAME_MS = 1000 / 60
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _louise_pids(state: Path) -> list[int]:
    """This process, and through the host its `louise attach` and the host itself."""
    pids = [os.getpid()]
    socket = str(state / "host" / "host.sock").encode()
    for child in _children(os.getpid()):
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if b"attach" in cmdline:
            pids.append(child)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in words and socket in words:
                pids.append(int(entry.name))
    return pids


async def _measure(mode: str, state: Path, chunks: int, rate: int) -> dict[str, Any]:
    config = load_config_mapping({"host": {"mode": "auto" if mode == "host" else "off"}})
    arrivals: list[tuple[int, float]] = []  # (latency µs, arrival µs)

    def on_event(event: object) -> None:
        if isinstance(event, MessageChunk) and event.role == "agent" and "=" in event.text:
            now = time.monotonic_ns() // 1000
            for piece in event.text.split(" "):
                head, _, stamp = piece.partition("=")
                if head.isdigit() and stamp.isdigit():
                    arrivals.append((now - int(stamp), now))

    async with SessionRegistry(config, decider=None, limits_cache=None, permission_memory=None,
                               transcripts_dir=None, remembered=None) as registry:
        registry.subscribe(on_event)
        session = await registry.new_session("demo", str(state))
        await registry.prompt(session.session_id, "/scenario stream chunks=50 stamp=1")  # warm
        arrivals.clear()
        sent = time.monotonic_ns() // 1000
        await registry.prompt(session.session_id,
                              "/scenario stream chunks=1 size=40 delay_ms=0 stamp=1")
        first_latency, first_at = arrivals[0]
        first_token_ms = (first_at - sent) / 1000
        arrivals.clear()
        pids = _louise_pids(state) if mode == "host" else [os.getpid()]
        cpu_before = sum(_cpu_seconds(pid) for pid in pids)
        started = time.monotonic()
        delay = max(1, round(1000 / rate))
        await registry.prompt(session.session_id,
                              f"/scenario stream chunks={chunks} size=60 delay_ms={delay} "
                              "stamp=1")
        seconds = time.monotonic() - started
        cpu = sum(_cpu_seconds(pid) for pid in pids) - cpu_before
    latencies = sorted(latency / 1000 for latency, _ in arrivals)
    return {
        "mode": mode, "first_token_ms": round(first_token_ms, 2),
        "first_chunk_latency_ms": round(first_latency / 1000, 2),
        "chunks_seen": len(latencies),
        "median_ms": round(statistics.median(latencies), 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 3),
        "max_ms": round(latencies[-1], 3),
        "frames_missed": sum(1 for latency in latencies if latency > FRAME_MS),
        "cpu_per_5s": round(cpu * 5 / seconds, 3), "processes": len(pids),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="lsbench", dir="/tmp"))
    os.environ["LOUISE_STATE_DIR"] = str(state)
    os.environ["LOUISE_CONFIG"] = str(state / "none.toml")
    os.environ["LOUISE_DEMO_STATE_DIR"] = str(state / "demo")
    results: list[dict[str, Any]] = []
    try:
        for rep in range(args.reps):
            for mode in ("in-process", "host") if rep % 2 == 0 else ("host", "in-process"):
                result = anyio.run(_measure, mode, state, args.chunks, args.rate)
                result["rep"] = rep
                results.append(result)
                print(json.dumps(result), flush=True)
    finally:
        for pid in _louise_pids(state)[1:]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
    print(f"load: {os.getloadavg()}")
    for mode in ("in-process", "host"):
        mine = [r for r in results if r["mode"] == mode]
        print(mode, {key: statistics.median(r[key] for r in mine) for key in
                     ("first_token_ms", "first_chunk_latency_ms", "median_ms", "p99_ms",
                      "max_ms", "frames_missed", "cpu_per_5s")})
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
