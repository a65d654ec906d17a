"""Wall time of `louise chat --agent AGENT hello` against a real agent and the offline mock
model (tests/real_agents): how long a script waits for one turn, exit included.

    .venv/bin/python bench/cli_exit.py [--agent codex] [-n 5] [--before DIR]

`--before DIR` also times the louise source in DIR (a checkout of another commit, run
with this venv: PYTHONPATH=DIR), alternating run by run with this checkout, so both see
the same machine load. Prints each run and the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.real_agents.harness import (  # noqa: E402 (after the path is set)
    MockModel,
    agent_environment,
    louise_bin,
    louise_config,
)
from tests.real_agents.install import install_all  # noqa: E402


def timed(env: dict[str, str], cwd: Path, agent: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([louise_bin(), "chat", "--agent", agent, "hello"], cwd=cwd,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=600, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"louise chat failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent", default="codex")
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--before", help="a checkout of the louise source to compare with")
    args = parser.parse_args()
    installed = install_all()
    with tempfile.TemporaryDirectory(prefix="louise-bench-") as scratch:
        root = Path(scratch)
        mock = MockModel(root / "mock")
        mock.start()
        try:
            install = installed.agents[args.agent]
            agent_env = agent_environment(args.agent, root / "home", mock, install)
            config = root / "config.toml"
            config.write_text(louise_config({args.agent: (install, agent_env)}, None))
            work = root / "work"
            work.mkdir()
            base = dict(os.environ, LOUISE_CONFIG=str(config),
                        LOUISE_STATE_DIR=str(root / "state"))
            variants = {"this checkout": base}
            if args.before:
                variants = {"before": dict(base, PYTHONPATH=str(Path(args.before).resolve())),
                            **variants}
            times: dict[str, list[float]] = {name: [] for name in variants}
            for run in range(args.n):
                for name, env in variants.items():
                    seconds = timed(env, work, args.agent)
                    times[name].append(seconds)
                    print(f"run {run + 1} {name}: {seconds:.2f} s", flush=True)
            for name, values in times.items():
                print(f"{name}: median {statistics.median(values):.2f} s over {len(values)}"
                      f" ({', '.join(f'{v:.2f}' for v in values)})")
        finally:
            mock.stop()


if __name__ == "__main__":
    main()
