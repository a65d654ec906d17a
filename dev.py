#!/usr/bin/env python3
"""Set-up and entry points for a fresh machine that has only Python (>= 3.11).

    python3 dev.py run    # install into .venv (first time), then run louise for real
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
    subprocess.run(
        [str(_python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-e", f"{ROOT}[dev]"],
        check=True,
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
    louise = _bin("louise")
    return subprocess.run([str(louise), "demo", *argv[1:]], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
