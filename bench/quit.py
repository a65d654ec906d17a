"""How long `:qa!` takes once a chat has run a turn: a headless Neovim with louise and the
demo agent, against the same Neovim with no plugin (the baseline). Neovim sends its jobs
SIGTERM on exit and SIGKILLs them 2 s later; louise should be gone long before.

    .venv/bin/python bench/quit.py [-n 7]
    .venv/bin/python bench/quit.py --registry [-n 7]

Prints each run (milliseconds from `:qa!` to Neovim's exit, and how the engine process
ended: by itself, or killed), the medians, and the load average.

`--registry` measures the registry's own exit budget instead (what
tests/integration/test_shutdown.py checks happens, without timing it): how long
`SessionRegistry.aclose(deadline)` takes against a 0.5 s budget after a turn with an agent
that lingers after its stdin closes and ignores SIGTERM, alone and with another process
holding the limits cache's lock; each run says how far past the deadline it returned.

`--leave [--code DIR]` measures leaving the registry's `async with` with no deadline given
(as the CLI does) while this process holds the limits cache's lock and a cache write is
pending: seconds from the child's "leaving" to its process's end (the child is
tests/integration/test_shutdown.py's LEAVING, run on this checkout or DIR's louise, e.g.
a `git archive main` copy as "before").
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import pynvim

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from louise.config.loading import load_config_mapping  # noqa: E402
from louise.registry import SessionRegistry  # noqa: E402
from louise.storage import durable  # noqa: E402
from louise.storage.limits_cache import LimitsCache  # noqa: E402
from tests.e2e.conftest import Driver, nvim_binary  # noqa: E402 (after the path is set)
from tests.e2e.test_quit import WRAPPER  # noqa: E402 (reports how the engine ended)
from tests.integration.agents import FAKES  # noqa: E402

# The registry's exit budget measured by --registry, and what a shutdown may take past it
# (the figure test_shutdown.py asserted before it checked behaviour only).
REGISTRY_BUDGET = 0.5
PAST_BUDGET_BOUND = 10.0


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        env[f"XDG_{name}_HOME"] = str(root / f"xdg-{name.lower()}")
    env["LOUISE_PLUGIN_ROOT"] = str(ROOT)
    wrapper = root / "python"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    env["LOUISE_PYTHON"] = str(wrapper)
    env["LOUISE_TEST_REAL_PYTHON"] = sys.executable
    env["LOUISE_TEST_EXIT_FILE"] = str(root / "engine-exits")
    env["LOUISE_STATE_DIR"] = str(root / "louise-state")
    env["LOUISE_DEMO_STATE_DIR"] = str(root / "demo-agent")
    return env


def _attach(socket: str) -> pynvim.Nvim:
    deadline = time.monotonic() + 30
    while True:
        try:
            return pynvim.attach("socket", path=socket)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def one_quit(root: Path, *, plugin: bool) -> tuple[float, str]:
    """Seconds from `:qa!` to Neovim's exit, and how the engine process ended."""
    root.mkdir(parents=True)
    socket = str(root / "nvim.sock")
    init = ROOT / "tests" / "e2e" / "minimal_init.lua" if plugin else "NONE"
    proc = subprocess.Popen([nvim_binary(), "--headless", "--listen", socket, "-u", str(init),
                             "-i", "NONE"], cwd=root, env=_env(root), stdin=subprocess.DEVNULL)
    try:
        session = _attach(socket)
        engine_pid = 0
        if plugin:
            nvim = Driver(session)
            session.command("LouiseChat")
            nvim.wait("return require('louise.chat').last")
            nvim.wait_status("ready")
            nvim.run_prompt("hello")
            engine_pid = int(nvim.lua("return require('louise.engine').pid"))
        start = time.perf_counter()
        with contextlib.suppress(Exception):  # Neovim exits while answering
            session.command("qa!")
        proc.wait(timeout=30)
        seconds = time.perf_counter() - start
        return seconds, _engine_end(root) if engine_pid else "-"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _engine_end(root: Path) -> str:
    """How the engine process ended, as its wrapper reported (none: SIGKILLed with it)."""
    deadline = time.monotonic() + 5
    exits = root / "engine-exits"
    while not exits.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    status = exits.read_text().split()[:1] if exits.exists() else []
    if not status:
        return "killed (no status)"
    return "exited 0" if status == ["0"] else f"status {status[0]}"


async def _registry_close(root: Path, hold_lock: bool) -> float:
    config = load_config_mapping({"agents": {"script": {
        "command": sys.executable, "args": [str(FAKES / "script_agent.py")],
        "env": {"FAKE_LINGER": "1"}}}})
    cache = LimitsCache(root / "limits.json")
    held, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        with durable.locked(cache.path):
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold_the_lock)
    try:
        async with SessionRegistry(config, limits_cache=cache,
                                   transcripts_dir=root / "transcripts",
                                   grace_seconds=30.0) as reg:
            session = await reg.new_session("script", str(root))
            await reg.prompt(session.session_id, "hello")
            if hold_lock:
                holder.start()
                await anyio.to_thread.run_sync(held.wait, 30)
            began = anyio.current_time()
            await reg.aclose(deadline=began + REGISTRY_BUDGET)
            return anyio.current_time() - began
    finally:
        release.set()
        if holder.is_alive():
            holder.join(30)


def registry_quit(root: Path, *, hold_lock: bool) -> float:
    """Seconds `aclose` took against its REGISTRY_BUDGET with the lingering agent."""
    root.mkdir(parents=True)
    os.environ["LOUISE_STATE_DIR"] = str(root / "louise-state")
    return anyio.run(_registry_close, root, hold_lock)


def registry_main(n: int) -> None:
    # What a cut-short shutdown warns (the cache, the last records) is expected here.
    logging.getLogger("louise").setLevel(logging.ERROR)
    alone: list[float] = []
    locked: list[float] = []
    with tempfile.TemporaryDirectory(prefix="louise-aclose-") as scratch:
        for run in range(n):  # interleaved, so both see the same load
            alone.append(registry_quit(Path(scratch) / f"alone-{run}", hold_lock=False))
            locked.append(registry_quit(Path(scratch) / f"locked-{run}", hold_lock=True))
            print(f"run {run + 1}: aclose {alone[-1] * 1000:7.1f} ms, with the cache lock "
                  f"held {locked[-1] * 1000:7.1f} ms (budget {REGISTRY_BUDGET * 1000:.0f} ms)",
                  flush=True)
    for name, runs in (("lingering agent", alone), ("and the cache lock held", locked)):
        worst = max(runs) - REGISTRY_BUDGET
        verdict = "ok" if worst < PAST_BUDGET_BOUND else "OVER"
        print(f"{name}: median {statistics.median(runs) * 1000:.1f} ms, at most "
              f"{worst * 1000:+.1f} ms past the deadline ({verdict}: bound "
              f"{PAST_BUDGET_BOUND:.0f} s)")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores)")


def one_leave(root: Path, code: Path) -> float:
    """Seconds from the registry's "leaving" to its process's end, the lock held here."""
    from tests.integration.test_shutdown import LEAVING

    root.mkdir(parents=True)
    script = root / "leaving.py"
    script.write_text(LEAVING)
    child = subprocess.Popen(
        [sys.executable, str(script), str(root)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=code,
        env={**os.environ, "PYTHONPATH": str(code),
             "LOUISE_STATE_DIR": str(root / "louise-state")})
    assert child.stdin is not None and child.stdout is not None
    try:
        if child.stdout.readline() != "turned\n":
            raise SystemExit("the child registry did not run its turn")
        with durable.locked(root / "limits.json"):
            child.stdin.write("go\n")
            child.stdin.flush()
            if child.stdout.readline() != "leaving\n":
                raise SystemExit("the child registry did not run its second turn")
            began = time.monotonic()
            child.wait(120)
            return time.monotonic() - began
    finally:
        child.kill()
        child.wait()


def leave_main(n: int, code: Path) -> None:
    runs: list[float] = []
    with tempfile.TemporaryDirectory(prefix="louise-leave-") as scratch:
        for run in range(n):
            runs.append(one_leave(Path(scratch) / f"leave-{run}", code))
            print(f"run {run + 1}: leaving to process end {runs[-1] * 1000:8.1f} ms "
                  f"(code: {code.name})", flush=True)
    print(f"median {statistics.median(runs) * 1000:.1f} ms; load average: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=7)
    parser.add_argument("--registry", action="store_true",
                        help="measure SessionRegistry.aclose against its exit budget instead")
    parser.add_argument("--leave", action="store_true",
                        help="measure leaving the registry with the cache lock held elsewhere")
    parser.add_argument("--code", type=Path, default=ROOT,
                        help="with --leave: the checkout whose louise runs (default: this)")
    args = parser.parse_args()
    if args.leave:
        leave_main(args.n, args.code.resolve())
        return
    if args.registry:
        registry_main(args.n)
        return
    louise: list[float] = []
    bare: list[float] = []
    with tempfile.TemporaryDirectory(prefix="louise-quit-") as scratch:
        for run in range(args.n):
            seconds, how = one_quit(Path(scratch) / f"louise-{run}", plugin=True)
            louise.append(seconds)
            base, _ = one_quit(Path(scratch) / f"bare-{run}", plugin=False)
            bare.append(base)
            print(f"run {run + 1}: louise {seconds * 1000:7.1f} ms (engine {how}), "
                  f"no plugin {base * 1000:6.1f} ms", flush=True)
    print(f"median :qa! after a turn: louise {statistics.median(louise) * 1000:.1f} ms, "
          f"no plugin {statistics.median(bare) * 1000:.1f} ms")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
