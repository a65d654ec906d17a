"""Where the engine's start goes, in CPU (issue 25, item 2): a fresh process does what
`python -m louise.nvim` does before it talks to Neovim (its imports), then builds the
engine against a stand-in for Neovim (the README's setup{} with one agent: configuration,
registry, parts) and starts its loop, up to `ready`. CPU of the process (all threads),
RSS and the modules held at ready; optionally cProfile of the engine thread's build.

    .venv/bin/python bench/engine_build.py [N] [--before DIR]   # N fresh processes each
    .venv/bin/python bench/engine_build.py --profile OUT         # one run, the build profiled

`--before DIR`: the louise source in DIR too (PYTHONPATH=DIR, this venv), alternating, the
order swapped every round; round 0 (bytecode, code cache) is not counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import spread  # noqa: E402

OPTS = {"agents": {"fast": {"command": sys.executable, "args": ["fast_agent.py"]}},
        "default_agent": "fast",
        "permissions": {"rules": [{"kind": ["read", "search"], "decision": "allow"}]}}


def run_once(profile: str | None) -> dict[str, float]:
    """In this (fresh) process: the engine process's imports, then its start to ready."""
    t0 = time.process_time()
    try:
        from louise.nvim.process_start import load_engine
    except ImportError:  # a louise before process_start.py: __main__'s own steps
        from louise.nvim import collector

        collector.paused_for_imports()
        from louise.storage import code_cache

        code_cache.install("engine")
        import louise.nvim.app  # noqa: F401
    else:
        load_engine()
    t_imported = time.process_time()
    from louise.nvim.engine import Engine
    from louise.storage import code_cache

    class Neovim:
        async def exec_lua(self, code: str, *args: Any) -> Any:
            return None

        async def post_lua(self, code: str, *args: Any) -> Any:
            class Call:
                async def result(self) -> Any:
                    return None

            return Call()

    engine: Any = Engine(Neovim(), OPTS)  # type: ignore[arg-type]
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        main, ready = engine._main, engine.host.ready

        async def profiled_main() -> None:
            profiler.enable()
            await main()

        def profiled_ready() -> None:
            profiler.disable()
            ready()

        engine._main, engine.host.ready = profiled_main, profiled_ready
    engine.start()
    t_ready = time.process_time()
    code_cache.finish("engine")
    if profile is not None:
        profiler.dump_stats(profile)
    rss = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    figures = {"imports": 1000 * (t_imported - t0), "build to ready": 1000 * (t_ready - t_imported),
               "total": 1000 * (t_ready - t0), "RSS MiB": rss / 2**20,
               "modules": float(len(sys.modules))}
    engine.stop()
    return figures




def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--child"]:
        # louise from PYTHONPATH (this checkout or --before's), not the checkout whose
        # bench/ this is: the path put first above only finds bench.figures.
        sys.path.remove(str(ROOT))  # the first one, put there above
        print(json.dumps(run_once(args[1] if len(args) > 1 else None)))
        sys.stdout.flush()
        os._exit(0)  # the engine's daemon threads: no teardown to wait for
    profile = args[args.index("--profile") + 1] if "--profile" in args else None
    before = args[args.index("--before") + 1] if "--before" in args else None
    runs = int(args[0]) if args and args[0].isdigit() else (1 if profile else 10)
    sides = [("this checkout", str(ROOT))] + ([("before", before)] if before else [])
    print(f"the engine's start in CPU, {runs} fresh processes a side; load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(runs + 1):
            for name, source in sides if round_ % 2 == 0 else sides[::-1]:
                key = name.replace(" ", "-")
                env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
                env.update(PYTHONPATH=source, LOUISE_STATE_DIR=f"{tmp}/{key}-state",
                           LOUISE_CONFIG=f"{tmp}/no-config.toml")
                argv = [sys.executable, "-P", str(Path(__file__).resolve()), "--child"]
                if profile is not None and round_ == runs:
                    argv.append(profile)
                done = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True,
                                      timeout=120, check=True)
                if round_:
                    results.setdefault(name, []).append(json.loads(done.stdout.splitlines()[-1]))
    for name, rows in results.items():
        print(f"  {name}: " + "; ".join(f"{k} {spread([row[k] for row in rows])}"
                                        for k in rows[0]))
    if profile is not None:
        print(f"  the last run's build (engine thread) profiled into {profile}")
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
