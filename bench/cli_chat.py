"""CPU of `louise chat` for one streamed turn (issue 25, item 5: <= 0.6 s for 1,500
chunks), the louise process alone (its own threads, not the agent or git), with
bench/fast_agent.py as the agent, stdout a pipe the bench drains:

- paced: 1,500 `line60` chunks at 300/s (5 s, as bench/stream.py's paced run);
- burst: 1,500 chunks written at once.

    .venv/bin/python bench/cli_chat.py [--reps 5] [--before DIR]

`--empty-state`: every run with an empty state directory (a first chat ever); else each
side's code and configuration caches are carried from run to run, as a person's state
directory keeps them (bench/kept_state.py), after one uncounted run per side.
`--before DIR` also runs the louise source in DIR (a checkout of another commit, run with
this venv: PYTHONPATH=DIR), alternating run by run with this checkout, so both see the
same machine load. Prints min/median/max of each and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Runs `louise chat` in-process and writes the process's own CPU (every thread of it,
# none of its children) to the file named by $LOUISE_BENCH_CPU.
PROBE = """
import os, resource, sys
from louise.cli.main import main
try:
    code = main()
finally:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["LOUISE_BENCH_CPU"], "w") as f:
        f.write(str(usage.ru_utime + usage.ru_stime))
sys.exit(code)
"""


def once(tmp: Path, source: Path | None, prompt: str, index: int,
         kept: Path | None = None) -> float:
    """One `louise chat` turn; the louise process's CPU seconds. `kept`: what a person's
    state directory keeps from run to run (bench/kept_state.py), None: an empty one."""
    from bench.kept_state import carry_in, carry_out
    work = tmp / f"work-{index}"
    work.mkdir()
    cpu_file = tmp / f"cpu-{index}"
    env = dict(os.environ, LOUISE_CONFIG=str(tmp / "config.toml"),
               LOUISE_STATE_DIR=str(tmp / f"state-{index}"), LOUISE_BENCH_CPU=str(cpu_file),
               XDG_STATE_HOME=str(tmp / f"xdg-{index}"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    carry_in(kept, tmp / f"state-{index}")
    done = subprocess.run([sys.executable, "-P", "-c", PROBE, "chat", "--agent", "fast",
                           prompt], cwd=work, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=300,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"louise chat failed ({done.returncode}):\n"
                         f"{done.stderr.decode(errors='replace')[-2000:]}")
    carry_out(tmp / f"state-{index}", kept)
    lines = done.stdout.count(b"\n")
    if lines < 1500:
        raise SystemExit(f"only {lines} lines of the reply came out")
    return float(cpu_file.read_text())


def spread(values: list[float]) -> str:
    return (f"median {statistics.median(values):.3f} s (min {min(values):.3f}, "
            f"max {max(values):.3f})")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--before", help="a checkout of the louise source to compare with")
    parser.add_argument("--empty-state", action="store_true",
                        help="every run with an empty state directory (a first chat ever)")
    args = parser.parse_args()
    sources: dict[str, Path | None] = {"this checkout": None}
    if args.before:
        sources["before"] = Path(args.before).resolve()
    prompts = {"paced 1,500 at 300/s": "stream chunks=1500 shape=line60 rate=300",
               "burst 1,500": "stream chunks=1500 shape=line60 rate=0"}
    print(f"louise chat, CPU of the louise process, {args.reps} runs each, in turn; "
          f"load average {load()}")
    results: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        agent = json.dumps(str(ROOT / "bench" / "fast_agent.py"))
        (tmp / "config.toml").write_text(
            f'[agents.fast]\ncommand = {json.dumps(sys.executable)}\nargs = [{agent}]\n')
        kept = {who: None if args.empty_state else tmp / f"kept-{i}"
                for i, who in enumerate(sources)}
        index = 0
        for who, source in sources.items():  # not counted: bytecode and the state's caches
            index += 1
            once(tmp, source, prompts["burst 1,500"], index, kept[who])
        for _ in range(args.reps):
            for label, prompt in prompts.items():
                for who, source in sources.items():
                    index += 1
                    results.setdefault((label, who), []).append(
                        once(tmp, source, prompt, index, kept[who]))
    for (label, who), values in results.items():
        print(f"  {label:<22} {who:<14} {spread(values)}")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
