"""louise.storage.durable: atomic writes and the cross-process lock."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from louise.storage.durable import (
    LockAbandoned,
    atomic_write_bytes,
    atomic_write_json,
    dump_json,
    exclusive_lock,
    lock_path_for,
    locked,
)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_creates_parents_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "file.bin"
    atomic_write_bytes(target, b"one")
    assert target.read_bytes() == b"one"
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert leftovers(target.parent) == []


def test_atomic_write_is_private_by_default_and_honours_mode(tmp_path: Path) -> None:
    target = tmp_path / "file"
    atomic_write_bytes(target, b"x")
    assert target.stat().st_mode & 0o777 == 0o600
    atomic_write_bytes(target, b"x", mode=0o644)
    assert target.stat().st_mode & 0o777 == 0o644


def test_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "file"
    atomic_write_bytes(target, b"good")
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"good"
    assert leftovers(tmp_path) == []


def test_atomic_write_json_is_strict_sorted_and_newline_terminated(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    atomic_write_json(target, {"b": 1, "a": "é"})
    assert target.read_bytes() == '{"a": "é", "b": 1}\n'.encode()
    with pytest.raises(ValueError):
        atomic_write_json(target, {"x": math.nan})
    with pytest.raises(TypeError):
        atomic_write_json(target, {"x": object()})
    assert json.loads(target.read_text()) == {"a": "é", "b": 1}
    assert leftovers(tmp_path) == []
    assert dump_json([1], indent=2) == b"[\n  1\n]\n"


def test_lock_path_is_a_sidecar(tmp_path: Path) -> None:
    assert lock_path_for(tmp_path / "limits.json") == tmp_path / "limits.json.lock"


def test_lock_excludes_threads_of_one_process(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")

    def bump() -> None:
        for _ in range(100):
            with locked(counter):
                value = int(counter.read_text())
                atomic_write_bytes(counter, str(value + 1).encode())

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.read_text() == "400"


HOLDER = """
import sys
from louise.storage.durable import exclusive_lock
with exclusive_lock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_lock_excludes_other_processes_and_is_released(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(TimeoutError), exclusive_lock(lock, timeout=0.2):
            pass
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    with exclusive_lock(lock, timeout=30):
        pass
    assert lock.exists()  # lock files are never deleted


def test_lock_is_released_when_its_holder_dies(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "locked"
    child.kill()
    child.wait()
    with exclusive_lock(lock, timeout=30):
        pass


def test_lock_is_released_after_an_exception(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    with pytest.raises(RuntimeError), exclusive_lock(lock):
        raise RuntimeError("boom")
    with exclusive_lock(lock, timeout=0):
        pass


def test_a_wait_for_a_lock_gives_up_when_asked_and_a_free_lock_is_still_taken(
        tmp_path: Path) -> None:
    """`give_up` (a process leaving): a wait for a held lock stops, however long its
    timeout; a lock nobody holds is taken as usual."""
    lock = tmp_path / "x.lock"
    give_up = threading.Event()
    outcome: list[BaseException | None] = []

    def wait_for_it() -> None:
        try:
            with exclusive_lock(lock, timeout=600, give_up=give_up):
                outcome.append(None)
        except BaseException as exc:  # what the test checks
            outcome.append(exc)

    with exclusive_lock(lock):
        waiter = threading.Thread(target=wait_for_it)
        waiter.start()
        give_up.set()
        waiter.join(30)  # a hang guard: the wait stops at once when asked
        assert not waiter.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], LockAbandoned), outcome
    with exclusive_lock(lock, give_up=give_up):  # free: taken, given up or not
        pass
