"""`louise proxy` at wire speed (issue 25, item 1): the same fast agent read directly, through
the proxy, and through the least a Python forwarder can do, interleaved, in one run.

    .venv/bin/python bench/proxy.py [--reps 5] [--bursts 5] [--chunks 10000] [--rate 2000]
                                    [--seconds 5] [--source DIR] [--before DIR]
                                    [--variant NAME=DIR ...] [--json FILE]

The agent is bench/fast_agent.py (stdlib, no event loop; `line60` chunks whose text starts
with the agent's CLOCK_MONOTONIC in µs at the write). The client is this process: plain
blocking reads of 1 MiB from a pipe grown as large as the system allows (the same in every
mode), every message decoded (`json.loads`, what any ACP client does at least; a real
one does more) and the stamps found with one regular expression per read, so the client
costs the same either way and the difference is the forwarder's. `--no-decode` leaves the
decoding out: then a direct burst is the pipe's bandwidth alone.

Modes: `direct` (the client reads the agent), `floor` (bench/floor_forwarder.py: os.read
and os.write in a loop, the reference for what any Python forwarder costs), `floor_c`
(bench/floor_forwarder.c, the same loop in C, built when a C compiler is there: what the
kernel alone costs a message on this machine), `proxy`
(`louise proxy`, from this checkout or `--source DIR`), and with `--before DIR` `before`
(the proxy from another checkout, e.g. `git archive main`), and each `--variant NAME=DIR`
a mode NAME (the proxy from DIR: a design tried beside the others in the same run). Per
repetition every mode's
process pair is started and warmed up (200 chunks), then:

- burst, `--bursts` rounds: each round one burst of `--chunks` messages a mode, back to
  back in a rotating order (a load change hits every mode alike); a burst's time = the
  agent's write start (the stamp every chunk of a burst carries) -> the last chunk read by
  the client; a mode's ratio = its burst / the direct burst of the same round, the rep's
  ratio the median of its rounds;
- paced, one mode after the other (rotating): `--rate` messages a second for `--seconds`;
  a message's latency = its stamp -> read by the client; the added latency = the mode's
  minus direct's, percentile by percentile, in the same rep;
- CPU per forwarded message: the forwarder process's CPU (every thread's
  `/proc/PID/task/*/schedstat`, ns) from the prompt to its answer, over the messages.

Figures: median (min–max) over the reps. Load average is printed before and after.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "bench" / "fast_agent.py"
F_SETPIPE_SZ = 1031
STAMP = re.compile(rb'"text": "(?:## )?(\d{5})=(\d{13}) ')
READ_BYTES = 1 << 20


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu_ns(pid: int) -> int:
    """CPU time of every live thread of `pid` (scheduler statistics: ns, not ticks)."""
    total = 0
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
    return total


def grow_pipe(fd: int) -> None:
    with contextlib.suppress(OSError, ValueError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, int(Path("/proc/sys/fs/pipe-max-size").read_text()))


@dataclass
class Stream:
    """One stream as the client saw it."""

    latencies_us: list[float] = field(default_factory=list)  # per message: stamp -> read
    first_stamp_us: int = 0
    last_read_us: float = 0.0
    proxy_cpu_ns: int = 0
    count: int = 0


class Client:
    """An ACP client reduced to what the benchmark needs, over blocking pipes."""

    def __init__(self, argv: list[str], env: dict[str, str], proxy: bool,
                 decode: bool, cwd: str | None = None) -> None:
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env=env, bufsize=0, cwd=cwd)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.out = self.process.stdout.fileno()
        grow_pipe(self.out)
        self.proxy = proxy
        self.decode = decode
        self.pending = b""
        self.next_id = 0

    def send(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                           "params": params}) + "\n"
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode())
        return self.next_id

    def answer(self, ident: int) -> dict[str, Any]:
        while True:
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == ident and "method" not in message:
                    return dict(message)
            data = os.read(self.out, READ_BYTES)
            if not data:
                raise RuntimeError("the agent (or proxy) closed its output")
            self.pending += data

    def stream(self, session: str, chunks: int, rate: float) -> Stream:
        ident = self.send("session/prompt", {"sessionId": session, "prompt": [
            {"type": "text", "text": f"stream chunks={chunks} shape=line60 rate={rate:g}"}]})
        marker = f'"id": {ident}, "result"'.encode()
        result = Stream()
        cpu_before = cpu_ns(self.process.pid) if self.proxy else 0
        tail = b""
        done = False
        while not done:
            data = os.read(self.out, READ_BYTES)
            now_us = time.monotonic_ns() / 1000
            if not data:
                raise RuntimeError("the agent (or proxy) closed its output")
            cut = data.rfind(b"\n")
            if cut < 0:
                tail += data
                continue
            complete = tail + data[:cut + 1]
            tail = data[cut + 1:]
            if self.decode:
                for line in complete.split(b"\n"):
                    if line:
                        json.loads(line)
            for match in STAMP.finditer(complete):
                stamp = int(match.group(2))
                if not result.first_stamp_us:
                    result.first_stamp_us = stamp
                result.latencies_us.append(now_us - stamp)
            result.last_read_us = now_us
            done = marker in complete
        if self.proxy:
            result.proxy_cpu_ns = cpu_ns(self.process.pid) - cpu_before
        result.count = len(result.latencies_us)
        if result.count != chunks:
            raise RuntimeError(f"{result.count} of {chunks} messages arrived")
        return result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


MODES = ("direct", "floor", "floor_c", "proxy", "before")


def c_floor() -> Path | None:
    """bench/floor_forwarder.c built into a temporary directory, or None without a C
    compiler (the row is then left out, and said so)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    build_dir = tempfile.mkdtemp(prefix="louise-bench-")
    atexit.register(shutil.rmtree, build_dir, True)
    target = Path(build_dir) / "floor_forwarder_c"
    built = subprocess.run([compiler, "-O2", "-pthread", "-o", str(target),
                            str(ROOT / "bench" / "floor_forwarder.c")], capture_output=True)
    return target if built.returncode == 0 else None


def start_client(mode: str, args: argparse.Namespace) -> Client:
    agent = [sys.executable, str(AGENT)]
    env = dict(os.environ)
    cwd = None
    variants = dict(args.variant)
    if mode in ("proxy", "before") or mode in variants:
        source = args.before if mode == "before" else variants.get(mode, args.source)
        cwd = str(Path(source).resolve()) if source else str(ROOT)
        # `-m` puts the working directory first on the path, before PYTHONPATH: both name
        # the checkout, or the one the benchmark is run from would be measured instead.
        env["PYTHONPATH"] = cwd
        argv = [sys.executable, "-m", "louise.cli", "proxy", "--", *agent]
    elif mode == "floor":
        argv = [sys.executable, str(ROOT / "bench" / "floor_forwarder.py"), "--", *agent]
    elif mode == "floor_c":
        argv = [str(args.c_floor), "--", *agent]
    else:
        argv = agent
    return Client(argv, env, mode != "direct", not args.no_decode, cwd)


def one_rep(modes: list[str], rep: int, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Every mode once: its bursts interleaved with the others', then its paced stream."""
    clients: dict[str, Client] = {}
    sessions: dict[str, str] = {}
    bursts: dict[str, list[Stream]] = {mode: [] for mode in modes}
    paced: dict[str, Stream] = {}
    try:
        for mode in modes:
            client = clients[mode] = start_client(mode, args)
            client.answer(client.send("initialize", {"protocolVersion": 1,
                                                     "clientCapabilities": {}}))
            session = client.answer(client.send("session/new", {"cwd": str(ROOT),
                                                                "mcpServers": []}))
            sessions[mode] = session["result"]["sessionId"]
            client.stream(sessions[mode], 200, 0)  # warm-up
        for round_ in range(args.bursts):
            shift = (rep + round_) % len(modes)
            for mode in modes[shift:] + modes[:shift]:
                bursts[mode].append(clients[mode].stream(sessions[mode], args.chunks, 0))
        shift = rep % len(modes)
        for mode in modes[shift:] + modes[:shift]:
            paced[mode] = clients[mode].stream(sessions[mode], int(args.rate * args.seconds),
                                               args.rate)
    finally:
        for client in clients.values():
            client.close()
    figures: dict[str, dict[str, float]] = {}
    direct = [burst_seconds(stream) for stream in bursts["direct"]]
    for mode in modes:
        times = [burst_seconds(stream) for stream in bursts[mode]]
        lat = paced[mode].latencies_us
        figures[mode] = {
            "burst_s": statistics.median(times),
            "burst_ratio": statistics.median(t / d for t, d in zip(times, direct, strict=True)),
            "burst_cpu_us_per_msg": statistics.median(
                stream.proxy_cpu_ns / 1000 / stream.count for stream in bursts[mode]),
            "paced_p50_ms": percentile(lat, 50) / 1000,
            "paced_p99_ms": percentile(lat, 99) / 1000,
            "paced_max_ms": max(lat) / 1000,
            "paced_cpu_us_per_msg": paced[mode].proxy_cpu_ns / 1000 / paced[mode].count,
            "paced_cpu_share": paced[mode].proxy_cpu_ns / 1e9 / args.seconds,
        }
    return figures


def burst_seconds(stream: Stream) -> float:
    return (stream.last_read_us - stream.first_stamp_us) / 1e6


def spread(values: list[float], digits: int = 3) -> str:
    return (f"{statistics.median(values):.{digits}f} "
            f"({min(values):.{digits}f}–{max(values):.{digits}f})")


def variant(text: str) -> tuple[str, str]:
    name, _, source = text.partition("=")
    if not name or not source or name in MODES:
        raise argparse.ArgumentTypeError(f"want NAME=DIR, NAME not one of {MODES}: {text!r}")
    return name, source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--bursts", type=int, default=5, help="burst rounds a rep")
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--source", default=None,
                        help="run the proxy from this checkout instead of this one")
    parser.add_argument("--before", default=None,
                        help="also run the proxy from this checkout, as `before`")
    parser.add_argument("--variant", action="append", default=[], type=variant,
                        metavar="NAME=DIR", help="also run the proxy from DIR, as NAME")
    parser.add_argument("--no-decode", action="store_true",
                        help="the client does not decode messages (the pipe alone)")
    parser.add_argument("--json", default=None, help="write every run's figures here")
    args = parser.parse_args()

    args.c_floor = c_floor()
    if args.c_floor is None:
        print("no C compiler: the floor_c row (bench/floor_forwarder.c) is left out")
    modes = [mode for mode in MODES if (mode != "before" or args.before)
             and (mode != "floor_c" or args.c_floor)]
    modes += [name for name, _ in args.variant if name not in modes]
    load_before = load()
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for rep in range(args.reps):
        figures = one_rep(modes, rep, args)
        for mode in modes:
            runs[mode].append(figures[mode])
            print(f"rep {rep + 1} {mode:6s} " + " ".join(
                f"{key}={value:.4g}" for key, value in figures[mode].items()), flush=True)
    load_after = load()

    def column(mode: str, key: str) -> list[float]:
        return [run[key] for run in runs[mode]]

    print()
    print(f"louise proxy vs direct, {args.reps} reps of {args.bursts} interleaved "
          f"{args.chunks:,}-message bursts, then {args.rate:g} msg/s for {args.seconds:g} s; "
          f"load average {load_before} before, {load_after} after. Median (min–max) "
          "over the reps.")
    print(f"  burst: direct {spread(column('direct', 'burst_s'))} s")
    for mode in modes[1:]:
        print(f"  burst: {mode} {spread(column(mode, 'burst_s'))} s, {mode}/direct "
              f"{spread(column(mode, 'burst_ratio'), 2)}")
    for mode in modes[1:]:
        print(f"  {mode} CPU per message: burst "
              f"{spread(column(mode, 'burst_cpu_us_per_msg'), 1)} µs, paced "
              f"{spread(column(mode, 'paced_cpu_us_per_msg'), 1)} µs "
              f"({spread(column(mode, 'paced_cpu_share'), 3)} of a core)")
    for key in ("paced_p50_ms", "paced_p99_ms", "paced_max_ms"):
        direct = column("direct", key)
        print(f"  paced {key[6:9]}: direct {spread(direct)} ms")
        for mode in modes[1:]:
            added = [p - d for p, d in zip(column(mode, key), direct, strict=True)]
            print(f"  paced {key[6:9]}: {mode} {spread(column(mode, key))} ms, added "
                  f"{spread(added)} ms")
    if args.json:
        Path(args.json).write_text(json.dumps({"load_before": load_before,
                                               "load_after": load_after, "runs": runs},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
