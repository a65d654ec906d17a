"""Checkpoints' limits and safeguards, over real stdio and real git: files tracked without
git, large and binary files noted not copied, a workspace repository that runs no code
and is not touched, old turns pruned, louise's own state left out, a change reported
before its snapshot flagged, an undo that never follows a link, what is too much shown
but never taken back, git's output bounded. Turns recorded, reviewed, taken back and
undone: test_checkpoints.py, whose helpers these tests use.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from louise.checkpoints.git import find_git
from louise.checkpoints.records import pick_turn
from louise.checkpoints.service import Checkpoints
from louise.checkpoints.workspace import WorkspaceStore
from louise.config.checkpoints import CheckpointsConfig
from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.session import Notice
from tests.integration.test_checkpoints import (
    SCRIPT,
    TWENTY,
    agent_edit,
    edited,
    fs_write,
    registry,
    self_write,
    shell,
    store_of,
    turn,
)
from tests.integration.test_registry import ScriptedDecider

pytestmark = pytest.mark.anyio


async def test_without_git_the_files_named_are_tracked_and_the_chat_says_what_is_not(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text(TWENTY)
    (work / "b.txt").write_text("b old\n")
    async with registry(tmp_path, git=None) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        await turn(reg, service, sid,
                   agent_edit(work / "a.txt", "line 2", "agent two",
                              edited(TWENTY, l2="agent two\n")),
                   fs_write(work / "b.txt", "b new\n"),
                   shell("echo untracked > c.txt"))
        notices = [e.text for e in reg.session(sid).entries if isinstance(e, Notice)]
        assert any("git is not installed" in text and "shell commands are not" in text
                   for text in notices), notices
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        assert [f.path for f in store.review(record)] == ["a.txt", "b.txt"]
        store.undo(record.seq)
        assert (work / "a.txt").read_text() == TWENTY
        assert (work / "b.txt").read_text() == "b old\n"
        assert (work / "c.txt").exists(), "not tracked, so not taken back"


async def test_large_and_binary_files_are_noted_not_copied(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    async with registry(tmp_path, max_file_bytes=1000) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        await turn(reg, service, sid, shell(
            "head -c 5000 /dev/zero | tr '\\0' x > big.txt && printf 'a\\0b' > bin.dat"
            " && echo small > small.txt"))
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        review = {f.path: f for f in store.review(record)}
        assert review["small.txt"].status == "added"
        assert review["big.txt"].status == "noted" and "large" in review["big.txt"].note
        assert review["bin.dat"].status == "noted" and "binary" in review["bin.dat"].note
        assert not review["bin.dat"].revertible
        objects = subprocess.run(["git", "--git-dir", str(store.dir / "git"), "count-objects",
                                  "-v"], capture_output=True, text=True, check=True).stdout
        assert "size-pack: 0" in objects
        with store.locked() as state:
            plan = store.undo_plan(state, record.seq)
        assert plan.not_copied == ["big.txt", "bin.dat"]


def run_git(*args: str, cwd: Path) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                           check=True).stdout


async def test_the_workspace_repository_runs_no_code_and_is_not_touched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile workspace: its .git/config defines a clean filter and hooks that would
    run code, its .gitattributes asks for them and for line-ending and `ident`
    conversion; the person has an index and a stash. louise's snapshots store the bytes
    as they are, run nothing, and leave the person's repository as it was — even with
    GIT_DIR and GIT_INDEX_FILE set in louise's own environment."""
    work = tmp_path / "work"
    work.mkdir()
    pwned = tmp_path / "pwned"
    run_git("init", "-q", cwd=work)
    (work / "tracked.txt").write_text("v1\n")
    run_git("add", "tracked.txt", cwd=work)
    run_git("commit", "-qm", "one", cwd=work)
    (work / "tracked.txt").write_text("v2\n")
    run_git("stash", "-q", cwd=work)
    run_git("config", "filter.evil.clean", f"touch {pwned}; cat", cwd=work)
    run_git("config", "filter.evil.required", "true", cwd=work)
    run_git("config", "core.fsmonitor", f"touch {pwned}", cwd=work)
    hook = work / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {pwned}\n")
    hook.chmod(0o755)
    (work / ".gitattributes").write_text("* filter=evil text eol=crlf ident "
                                         "working-tree-encoding=UTF-16\n")
    (work / ".gitignore").write_text("ignored.txt\n")
    (work / "a.txt").write_bytes(b"$Id$\nlf only\n")
    (work / "ignored.txt").write_text("secret\n")
    person = {name: (work / ".git" / name).read_bytes() for name in ("index", "HEAD")}
    stash = run_git("stash", "list", cwd=work)
    monkeypatch.setenv("GIT_DIR", str(work / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(work / ".git" / "index"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.hooksPath'='{tmp_path}'")
    async with registry(tmp_path) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        await turn(reg, service, sid, self_write(work / "a.txt", "$Id$\nchanged\n"))
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        [change] = store.review(record)
        assert change.path == "a.txt"
        store.undo(record.seq)
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    monkeypatch.delenv("GIT_CONFIG_PARAMETERS")
    assert (work / "a.txt").read_bytes() == b"$Id$\nlf only\n", "bytes as they were"
    assert not pwned.exists(), "no filter, hook or fsmonitor of the workspace ran"
    assert {name: (work / ".git" / name).read_bytes() for name in ("index", "HEAD")} == person
    assert run_git("stash", "list", cwd=work) == stash
    listed = subprocess.run(["git", "--git-dir", str(store.dir / "git"), "ls-tree", "-r",
                             "--name-only", record.after.commit],  # type: ignore[union-attr]
                            capture_output=True, text=True, check=True).stdout.split()
    assert "ignored.txt" not in listed and "a.txt" in listed, ".gitignore is honoured"
    assert ".git/index" not in listed


async def test_old_turns_are_pruned_by_count_and_by_bytes(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    async with registry(tmp_path, keep_turns=2) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        for number in range(3):
            await turn(reg, service, sid, self_write(work / "a.txt", f"{number}\n"))
        store = store_of(service, work)
        state = store.read_state()
        assert [t.number for t in state.turns] == [2, 3]
    async with registry(tmp_path / "second", max_store_bytes=1) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        for number in range(3):
            await turn(reg, service, sid, self_write(work / "a.txt", f"{number}\n"))
        assert [t.number for t in store_of(service, work).read_state().turns] == [3], \
            "over the byte limit: only the newest turn stays"


def test_git_is_found() -> None:
    assert find_git() is not None, "these tests need git on the machine"


async def test_louises_own_state_inside_the_workspace_is_not_snapshotted(
        tmp_path: Path) -> None:
    """LOUISE_STATE_DIR under the workspace (e.g. a project-local state): the store and
    the rest of the state directory are left out, or each snapshot would copy the last."""
    work = tmp_path / "work"
    state = work / ".louise-state"
    state.mkdir(parents=True)
    (state / "transcripts").mkdir()
    (state / "transcripts" / "t.jsonl").write_text("{}\n")
    service = Checkpoints(CheckpointsConfig(), state / "checkpoints")
    config = load_config_mapping({"agents": {"script": {"command": SCRIPT[0],
                                                        "args": SCRIPT[1:]}}})
    async with SessionRegistry(config, decider=ScriptedDecider("allow_once"),
                               grace_seconds=0.5, permission_memory=None, limits_cache=None,
                               transcripts_dir=None, checkpoints=service) as reg:
        sid = (await reg.new_session("script", str(work))).session_id
        await turn(reg, service, sid, self_write(work / "a.txt", "a\n"))
        await turn(reg, service, sid, self_write(work / "a.txt", "b\n"))
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        assert [f.path for f in store.review(record)] == ["a.txt"]
        listed = subprocess.run(["git", "--git-dir", str(store.dir / "git"), "ls-tree", "-r",
                                 "--name-only", record.after.commit],  # type: ignore[union-attr]
                                capture_output=True, text=True, check=True).stdout.split()
        assert listed == ["a.txt"]


def test_a_change_reported_before_the_snapshot_was_done_is_flagged(tmp_path: Path) -> None:
    """An agent that writes without asking may be faster than the snapshot before its
    turn: a file a tool call named then is checked against the snapshot's contents."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("old line\n")
    store = WorkspaceStore(tmp_path / "checkpoints", work, CheckpointsConfig(), find_git())
    store.end(store.begin("s:1", "s", "first"), "end_turn")
    (work / "a.txt").write_text("new line\n")  # before the next snapshot
    record = store.begin("s:1", "s", "second")
    assert store.late(record, {"a.txt": (False, "old line", "new line")}) == ["a.txt"]
    assert store.late(record, {"b.txt": (True, "", "new file")}) == [], "not there yet"
    assert store.late(record, {"(a command)": (True, None, None)}) == ["(a command)"]
    assert store.late(record, {"(a command)": (False, None, None)}) == [], "not started"
    store.end(record, "end_turn")
    third = store.begin("s:1", "s", "third")
    assert store.late(third, {"a.txt": (True, "old line", "new line")}) == [], \
        "the file was already so when the previous turn ended"


async def test_an_undo_never_follows_a_directory_swapped_for_a_link(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "a.txt").write_text("before\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("not the workspace's\n")
    async with registry(tmp_path) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        await turn(reg, service, sid, self_write(work / "sub" / "a.txt", "after\n"))
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        (work / "sub" / "a.txt").unlink()
        (work / "sub").rmdir()
        (work / "sub").symlink_to(outside)  # by the agent's next command, say
        done = store.undo(record.seq)
        assert done.writes == []
        [problem] = done.problems
        assert problem.path == "sub/a.txt"
        assert (outside / "a.txt").read_text() == "not the workspace's\n"
        assert store.revert_file(record, "sub/a.txt").startswith("sub/a.txt: not taken back")
        assert (outside / "a.txt").read_text() == "not the workspace's\n"


async def test_what_is_too_much_to_read_at_once_is_shown_never_taken_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from louise.checkpoints import snapshots

    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text(TWENTY)
    async with registry(tmp_path) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        await turn(reg, service, sid, self_write(work / "a.txt", edited(TWENTY, l2="x\n")))
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        monkeypatch.setattr(snapshots, "MAX_CHANGED_READ", 10)
        [review] = store.review(record)
        assert review.note == "too much changed at once to read it" and not review.revertible
        assert store.revert_hunk(record, "a.txt", 0).startswith("a.txt: not taken back")
        with store.locked() as state:
            plan = store.undo_plan(state, record.seq)
        assert plan.writes == [] and plan.not_copied == ["a.txt"]
        assert (work / "a.txt").read_text() == edited(TWENTY, l2="x\n")


def test_what_git_says_is_bounded(tmp_path: Path) -> None:
    from louise.checkpoints.git import Git, GitError

    work = tmp_path / "work"
    work.mkdir()
    for number in range(200):
        (work / f"file-{number:03d}.txt").write_text("x\n")
    git = Git(str(find_git()), tmp_path / "git", work)
    git.init()
    assert len(git.run("status", "--porcelain", "-z")) > 2000
    with pytest.raises(GitError, match="git status said more than 1,000 bytes"):
        git.run("status", "--porcelain", "-z", max_output=1000)
