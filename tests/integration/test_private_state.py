"""Everything louise writes under its state directory is private (0700 directories, 0600
files), and what an older louise left world-readable is fixed on start."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from louise.storage import durable


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def louise(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "louise.cli", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def world_readable_state(state: Path) -> list[Path]:
    """A state directory as an older louise left it: 0755 directories, 0644 files."""
    old = os.umask(0o022)
    try:
        files = [state / "limits.json", state / "permissions.json",
                 state / "permissions.json.lock", state / "transcripts" / "demo--old.jsonl",
                 state / "demo-agent" / "demo-1.json", state / "logs" / "louise.log"]
        for file in files:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text("{}\n" if file.suffix == ".json" else "")
            file.chmod(0o644)
        for directory in {state, *(f.parent for f in files)}:
            directory.chmod(0o755)
    finally:
        os.umask(old)
    return files


def test_louise_fixes_an_old_state_directory_on_start() -> None:
    state = Path(os.environ["LOUISE_STATE_DIR"])
    files = world_readable_state(state)
    elsewhere = state / "notes.txt"  # not louise's: left alone
    elsewhere.write_text("mine")
    elsewhere.chmod(0o644)
    result = louise("permissions")
    assert result.returncode == 0, result.stderr
    assert {str(f.relative_to(state)): oct(mode(f)) for f in files} == {
        str(f.relative_to(state)): oct(0o600) for f in files}
    for directory in (state, state / "transcripts", state / "demo-agent", state / "logs"):
        assert mode(directory) == 0o700, directory
    assert mode(elsewhere) == 0o644


def test_a_chat_writes_only_private_files(tmp_path: Path) -> None:
    state = Path(os.environ["LOUISE_STATE_DIR"])
    old = os.umask(0o022)  # the usual umask: a plain create would be world-readable
    try:
        result = louise("chat", "--cwd", str(tmp_path), "a secret prompt")
    finally:
        os.umask(old)
    assert result.returncode == 0, result.stderr
    directories = [p for p in [state, *state.rglob("*")] if p.is_dir()]
    assert {str(d): oct(mode(d)) for d in directories} == {
        str(d): oct(0o700) for d in directories}
    # The demo agent's session (with the prompt) and the limits cache; the transcript
    # file is the registry's, unreachable for others inside its 0700 directory.
    written = [state / "limits.json", *(state / "demo-agent").glob("*.json")]
    assert len(written) >= 2
    assert {str(f): oct(mode(f)) for f in written} == {str(f): oct(0o600) for f in written}


def test_open_private_append_creates_and_tightens(tmp_path: Path) -> None:
    target = tmp_path / "transcripts" / "s.jsonl"
    with durable.open_private_append(target) as handle:
        handle.write("one\n")
    assert mode(target) == 0o600 and mode(target.parent) == 0o700
    target.chmod(0o644)
    with durable.open_private_append(target) as handle:
        handle.write("two\n")
    assert target.read_text() == "one\ntwo\n"
    assert mode(target) == 0o600
    # A symlink planted in its place is refused, not followed.
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "transcripts" / "link.jsonl"
    link.symlink_to(victim)
    try:
        durable.open_private_append(link)
    except OSError:
        pass
    else:
        raise AssertionError("a symlink was followed")
    assert victim.read_text() == "keep"


def test_make_private_never_follows_a_symlink_nor_loosens(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("x")
    victim.chmod(0o644)
    (tmp_path / "link").symlink_to(victim)
    assert durable.make_private(tmp_path / "link", directory=False) is False
    assert mode(victim) == 0o644
    victim.chmod(0o400)
    assert durable.make_private(victim, directory=False) is False
    assert mode(victim) == 0o400
