"""The limits cache across real processes: concurrent writers lose nothing, readers always see
a whole file, bad files read as empty with a warning, and liveness survives pid reuse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from louise.limits import ERROR_NO_LIVE_SESSION, LimitsState, accepted, parse_snapshot
from louise.storage.limits_cache import LimitsCache
from louise.storage.limits_cache_bounds import MAX_AGENTS
from louise.storage.limits_liveness import (
    Holder,
    current_holder,
    holder_is_live,
    process_start_token,
)

WORKERS = 4
UPDATES = (MAX_AGENTS - 1) // WORKERS  # every Agent fits in the file, and "shared" too
NOW = 4_000_000_000

# Each update records a distinct Agent (so a lost read-modify-write would show as a missing
# Agent) and the shared Agent (so "newest wins" is exercised under contention).
WORKER = """
import sys
from louise.limits import accepted, parse_snapshot
from louise.storage.limits_cache import LimitsCache

path, worker, updates = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cache = LimitsCache(path, lock_timeout=120)
cache.add_holder("shared")
for i in range(updates):
    snapshot = parse_snapshot({
        "defaultBucketId": "b",
        "buckets": [{"id": "b", "label": f"w{worker}-{i}", "windows": [
            {"usedPercent": i % 101, "windowDurationMins": 300, "resetsAt": 4000007200}]}],
    })
    cache.record_state(f"w{worker}-{i:03d}", accepted(f"w{worker}-{i:03d}", snapshot, 4e9 + i))
    cache.record_state("shared", accepted("shared", snapshot, 4e9 + i * 4 + worker))
print("done", flush=True)
"""


# 3,200 read-modify-writes of a growing file by four processes: ~20 s of CPU, several
# minutes when the test groups and other work share two cores (it overran the default
# 120 s there).
@pytest.mark.timeout(600)
def test_concurrent_writers_lose_no_update_and_readers_see_whole_files(tmp_path: Path) -> None:
    path = tmp_path / "limits.json"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), str(n), str(UPDATES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(WORKERS)
    ]
    reads = 0
    cache = LimitsCache(path)
    try:
        while any(worker.poll() is None for worker in workers):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            document = json.loads(data)  # raises if a reader ever saw a partial file
            assert document["version"] == 1
            view = cache.load()
            assert view.warnings == (), view.warnings
            reads += 1
            # Poll, not spin: a spinning reader took a core from the four writers (and from
            # every test beside this one) on a 2-core machine, ~25 % of the test's CPU; this
            # still reads the whole file some 600 times while they write.
            time.sleep(0.005)
    finally:
        outputs = [worker.communicate(timeout=300) for worker in workers]
    for worker, (out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
        assert out.strip() == "done"
    assert reads > 0

    view = cache.load()
    assert view.warnings == ()
    expected = {f"w{n}-{i:03d}" for n in range(WORKERS) for i in range(UPDATES)}
    assert set(view.states) - {"shared"} == expected
    for n in range(WORKERS):
        last = view.states[f"w{n}-{UPDATES - 1:03d}"]
        assert last.updated_at == 4e9 + UPDATES - 1
    shared = view.states["shared"]
    assert shared.updated_at == 4e9 + (UPDATES - 1) * 4 + (WORKERS - 1)
    assert shared.snapshot is not None
    assert shared.snapshot.buckets[0].label == f"w{WORKERS - 1}-{UPDATES - 1}"
    # Every worker has exited: none of their holder records is live any more.
    assert not view.is_live("shared")
    assert view.inspect("shared", NOW).status == "stale"


# --------------------------------------------------------------------------- bad files


GOOD = accepted("codex", parse_snapshot({"buckets": []}), NOW)


def bad_file_cases(path: Path) -> dict[str, bytes]:
    good = path.read_bytes()
    return {
        "empty": b"",
        "whitespace": b"  \n",
        "truncated": good[: len(good) // 2],
        "one byte short": good.rstrip()[:-1],
        "binary": b"\xff\xfe\x00garbage",
        "not json": b"limits: yes\n",
        "a list": b"[]",
        "no version": b'{"agents": {}}',
        "other version": b'{"version": 2, "agents": {}}',
        "string version": b'{"version": "1", "agents": {}}',
        "agents not an object": b'{"version": 1, "agents": []}',
        "deep nesting": b"[" * 100_000,
    }


def test_bad_files_read_as_empty_with_one_warning_and_are_repaired(tmp_path: Path) -> None:
    path = tmp_path / "limits.json"
    cache = LimitsCache(path)
    cache.record_state("codex", GOOD)
    for name, content in bad_file_cases(path).items():
        path.write_bytes(content)
        view = cache.load()
        assert view.states == {}, name
        assert view.holders == {}, name
        assert view.file_status not in ("ok", "missing"), name
        assert len(view.warnings) == 1, name
        warning = view.warnings[0]
        assert str(path) in warning and "\n" not in warning, name
        assert "delete" in warning, name
        assert cache.inspect("codex", NOW) == LimitsState("codex", "not_observed"), name
        # The next write replaces the bad file with a good one.
        assert cache.record_state("codex", GOOD) == GOOD, name
        assert cache.load().states == {"codex": GOOD}, name


def test_missing_file_reads_as_empty_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "limits.json"
    view = LimitsCache(path).load()
    assert (view.states, view.file_status) == ({}, "missing")
    assert len(view.warnings) == 1 and str(path) in view.warnings[0]
    assert not path.parent.exists()  # reading creates nothing


def test_unreadable_path_reads_as_empty_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "limits.json"
    path.mkdir()  # a directory where the file should be
    view = LimitsCache(path).load()
    assert view.file_status == "unreadable"
    assert len(view.warnings) == 1 and str(path) in view.warnings[0]


# --------------------------------------------------------------------------- liveness


def test_this_process_is_live_with_its_own_start_token() -> None:
    me = current_holder()
    assert me.pid == os.getpid()
    assert me.start is not None
    assert holder_is_live(me)


def test_a_reused_pid_with_another_start_time_is_not_live() -> None:
    assert not holder_is_live(Holder(os.getpid(), "linux:other-boot:1"))
    assert not holder_is_live(Holder(os.getpid(), ""))


def test_nonsense_pids_are_not_live() -> None:
    assert not holder_is_live(Holder(0, None))
    assert not holder_is_live(Holder(-1, "x"))
    assert process_start_token(0) is None


def test_a_dead_process_is_not_live(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        token = process_start_token(child.pid)
        assert token is not None
        holder = Holder(child.pid, token)
        assert holder_is_live(holder)
        assert holder_is_live(Holder(child.pid, None))  # pid-only fallback
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    assert not holder_is_live(holder)
    assert not holder_is_live(Holder(child.pid, None))

    # Recorded by that process before it died: the state reads as stale.
    cache = LimitsCache(tmp_path / "limits.json")
    cache.record_state("codex", GOOD)
    document = json.loads(cache.path.read_text())
    document["agents"]["codex"]["holders"] = [{"pid": holder.pid, "start": holder.start}]
    cache.path.write_text(json.dumps(document))
    assert cache.inspect("codex", NOW) == LimitsState(
        "codex", "stale", GOOD.snapshot, GOOD.updated_at, ERROR_NO_LIVE_SESSION
    )
    # ... and adding a dead holder records nothing.
    cache.add_holder("gemini", holder)
    assert "gemini" not in cache.load().agents


def test_a_zombie_is_not_live() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    token = None
    try:
        # Until it is reaped the exited child stays a zombie.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        token = process_start_token(child.pid)
    finally:
        child.wait()
    assert token is None


@pytest.mark.parametrize("name", ["a) b", "x)", ")( z"])
def test_start_token_survives_odd_process_names(tmp_path: Path, name: str) -> None:
    # The command name field of /proc/<pid>/stat is the executable's name and may contain
    # spaces and parentheses: run Python through a symlink with such a name.
    executable = tmp_path / name
    executable.symlink_to(os.path.realpath(sys.executable))
    child = subprocess.Popen([str(executable), "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        stat = Path(f"/proc/{child.pid}/stat").read_text()
        assert f"({name})" in stat
        # Field 22 (start time), counted after the name's *closing* parenthesis.
        start_ticks = stat.rsplit(")", 1)[1].split()[19]
        token = process_start_token(child.pid)
        assert token is not None
        assert token.endswith(f":{start_ticks}")
        assert token == process_start_token(child.pid)
        assert holder_is_live(Holder(child.pid, token))
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    assert not holder_is_live(Holder(child.pid, token))
