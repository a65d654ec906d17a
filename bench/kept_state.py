"""What of louise's state directory a benchmark carries from one run to the next, as a
person's state directory keeps it between their starts (like their bytecode): the code
cache (louise/storage/code_cache.py) and the validated-configuration cache
(louise/config/cached.py). `--empty-state` in the benchmarks carries neither: a first
chat ever."""

from __future__ import annotations

import shutil
from pathlib import Path

KEPT = ("code-cache", "config-cache.json")


def carry_in(kept: Path | None, state: Path) -> None:
    """Put what `kept` holds into a run's state directory (louise's own, created)."""
    if kept is None:
        return
    for name in KEPT:
        source = kept / name
        if source.is_dir():
            shutil.copytree(source, state / name, dirs_exist_ok=True)
        elif source.is_file():
            state.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.copy2(source, state / name)
            (state / name).chmod(0o600)


def carry_out(state: Path, kept: Path | None) -> None:
    """Keep what a run left in its state directory for the next run."""
    if kept is None:
        return
    kept.mkdir(parents=True, exist_ok=True)
    for name in KEPT:
        source = state / name
        if source.is_dir():
            shutil.copytree(source, kept / name, dirs_exist_ok=True)
        elif source.is_file():
            shutil.copy2(source, kept / name)
