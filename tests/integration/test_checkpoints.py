"""Checkpoints around turns, over real stdio and real git: the scripted fake agent writes
files itself (as claude's Edit and codex's apply_patch do, after a tool call naming them),
through louise (`fs/write_text_file`) and from a shell command; the turn's review lists
exactly those files, a hunk or a file is taken back, an undo restores bytes and keeps
what the person changed elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.checkpoints.git import find_git
from louise.checkpoints.records import pick_turn
from louise.checkpoints.service import Checkpoints
from louise.checkpoints.workspace import WorkspaceStore
from louise.config.checkpoints import CheckpointsConfig
from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.session import Notice
from tests.integration.agents import FAKES
from tests.integration.test_registry import ScriptedDecider

pytestmark = pytest.mark.anyio
SCRIPT = [sys.executable, str(FAKES / "script_agent.py")]
TWENTY = "".join(f"line {n}\n" for n in range(1, 21))


def edited(text: str, **lines: str) -> str:
    out = text.splitlines(keepends=True)
    for name, line in lines.items():
        out[int(name[1:]) - 1] = line
    return "".join(out)


@asynccontextmanager
async def registry(tmp_path: Path, decider: Any = None, git: str | object | None = "auto",
                   **settings: Any) -> AsyncIterator[tuple[SessionRegistry, Checkpoints]]:
    config = load_config_mapping({"agents": {"script": {"command": SCRIPT[0],
                                                        "args": SCRIPT[1:]}}})
    kwargs: dict[str, Any] = {} if git == "auto" else {"git": git}
    service = Checkpoints(CheckpointsConfig(**settings), tmp_path / "checkpoints", **kwargs)
    async with SessionRegistry(config, decider=decider or ScriptedDecider("allow_once"),
                               grace_seconds=0.5, permission_memory=None, limits_cache=None,
                               transcripts_dir=None, checkpoints=service) as reg:
        yield reg, service


def ask(tool_call_id: str, kind: str) -> dict[str, Any]:
    """The agent asks before it changes anything (claude, codex and vibe in their asking
    modes): louise answers once the snapshot before the turn is complete."""
    return {"request": "session/request_permission", "params": {
        "toolCall": {"toolCallId": tool_call_id, "title": tool_call_id, "kind": kind},
        "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]}}


def agent_edit(path: Path, old: str, new: str, content: str) -> list[dict[str, Any]]:
    """As claude's Edit: a tool call naming the file with a snippet diff, its permission,
    then the agent writes the file itself and reports it done."""
    call = {"toolCallId": f"edit-{path.name}", "title": f"Edit {path.name}", "kind": "edit"}
    return [
        {"update": {"sessionUpdate": "tool_call", **call, "status": "pending",
                    "locations": [{"path": str(path)}],
                    "content": [{"type": "diff", "path": str(path), "oldText": old,
                                 "newText": new}]}},
        ask(call["toolCallId"], "edit"),
        {"write": [str(path), content]},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"],
                    "status": "completed"}},
    ]


def self_write(path: Path, content: str) -> list[dict[str, Any]]:
    """The agent writes a file itself (asked first), as codex's apply_patch does."""
    return [ask(f"write-{path.name}", "edit"), {"write": [str(path), content]}]


def shell(command: str) -> list[dict[str, Any]]:
    """As codex's exec_command: a tool call, its permission, the agent runs it itself."""
    call = {"toolCallId": "shell-1", "title": command, "kind": "execute"}
    return [{"update": {"sessionUpdate": "tool_call", **call, "status": "in_progress",
                        "rawInput": {"command": command}}},
            ask("shell-1", "execute"),
            {"shell": command},
            {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "shell-1",
                        "status": "completed"}}]


def fs_write(path: Path, content: str) -> list[dict[str, Any]]:
    return [{"request": "fs/write_text_file", "params": {"path": str(path),
                                                         "content": content}}]


async def turn(reg: SessionRegistry, service: Checkpoints, session_id: str,
               *steps: list[dict[str, Any]]) -> None:
    await reg.prompt(session_id, json.dumps([step for group in steps for step in group]))
    await service.idle()  # the snapshot after it is taken in the background


def changes_lines(reg: SessionRegistry, session_id: str) -> list[Notice]:
    return [e for e in reg.session(session_id).entries
            if isinstance(e, Notice) and e.kind == "changes"]


def store_of(service: Checkpoints, cwd: Path) -> WorkspaceStore:
    return service.workspace(str(cwd)).store


async def test_what_the_agent_wrote_itself_through_louise_and_from_a_shell_is_recorded(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text(TWENTY)
    (work / "b.txt").write_text("b old\n")
    (work / "same.txt").write_text("untouched\n")
    async with registry(tmp_path) as (reg, service):
        session = await reg.new_session("script", str(work))
        sid = session.session_id
        await turn(reg, service, sid,
                   agent_edit(work / "a.txt", "line 2", "agent two",
                              edited(TWENTY, l2="agent two\n")),
                   fs_write(work / "b.txt", "b new\nmore\n"),
                   shell("printf 'from the shell\\n' > c.txt"))
        assert (work / "c.txt").read_text() == "from the shell\n"
        [line] = changes_lines(reg, sid)
        assert line.text == "3 files changed (+4 \u22122) · review"
        assert line.data == {"review": {"seq": 1, "turn": 1}}
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        review = store.review(record)
        assert [(f.path, f.status, f.added, f.removed) for f in review] == [
            ("a.txt", "modified", 1, 1), ("b.txt", "modified", 2, 1), ("c.txt", "added", 1, 0)]
        assert record.late == [] and record.incomplete is None


async def test_a_hunk_taken_back_leaves_the_other_hunks_and_undo_restores_bytes(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    original = TWENTY.replace("\n", "\r\n") + "no newline at the end"
    (work / "a.txt").write_bytes(original.encode())
    (work / "gone.txt").write_bytes(b"\xff\xfe not utf-8\n")
    (work / "run.sh").write_text("echo hi\n")
    (work / "run.sh").chmod(0o755)
    after = original.replace("line 2\r\n", "agent two\r\n").replace("line 18\r\n",
                                                                    "agent 18\r\n")
    async with registry(tmp_path) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        await turn(reg, service, sid,
                   self_write(work / "a.txt", after),
                   shell("rm gone.txt && echo 'echo bye' > run.sh && echo new > new.txt"))
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        [a_review] = [f for f in store.review(record) if f.path == "a.txt"]
        assert len(a_review.hunks) == 2
        assert store.revert_hunk(record, "a.txt", 0) == "a.txt: hunk taken back"
        assert (work / "a.txt").read_bytes() == original.replace(
            "line 18\r\n", "agent 18\r\n").encode(), "only the first hunk went back"
        [a_review] = [f for f in store.review(record) if f.path == "a.txt"]
        assert a_review.states == ["reverted", "applied"]
        with store.locked() as state:
            plan = store.undo_plan(state, record.seq)
        assert [(p.path, p.to_wire()["action"]) for p in plan.writes] == [
            ("a.txt", "revert"), ("gone.txt", "restore"), ("new.txt", "remove"),
            ("run.sh", "revert")]
        store.undo(record.seq, [p.path for p in plan.writes])
        assert (work / "a.txt").read_bytes() == original.encode()
        assert (work / "gone.txt").read_bytes() == b"\xff\xfe not utf-8\n"
        assert (work / "run.sh").read_text() == "echo hi\n"
        assert os.stat(work / "run.sh").st_mode & 0o777 == 0o755
        assert not (work / "new.txt").exists()
        assert store.read_state().turn(record.seq).undone  # type: ignore[union-attr]


async def test_an_undo_keeps_edits_made_outside_the_turn_and_shows_a_conflict(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text(TWENTY)
    (work / "b.txt").write_text(TWENTY)
    async with registry(tmp_path) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        await turn(reg, service, sid,
                   self_write(work / "a.txt", edited(TWENTY, l5="agent five\n")),
                   self_write(work / "b.txt", edited(TWENTY, l5="agent five\n")))
        # The person edits after the turn: a.txt elsewhere, b.txt on the agent's line.
        (work / "a.txt").write_text(edited(TWENTY, l5="agent five\n", l15="mine\n"))
        (work / "b.txt").write_text(edited(TWENTY, l5="my five\n"))
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        with store.locked() as state:
            plan = store.undo_plan(state, record.seq)
        assert [p.path for p in plan.writes] == ["a.txt"]
        [problem] = plan.problems
        assert problem.path == "b.txt" and problem.conflict_lines == [5]
        assert any("keep b.txt" in line and "line 5" in line for line in plan.lines())
        store.undo(record.seq, ["a.txt"])
        assert (work / "a.txt").read_text() == edited(TWENTY, l15="mine\n")
        assert (work / "b.txt").read_text() == edited(TWENTY, l5="my five\n"), \
            "a conflict is shown, never resolved silently"


async def test_undoing_an_earlier_turn_takes_every_later_turn_back_first(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text(TWENTY)
    async with registry(tmp_path) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        one = edited(TWENTY, l3="turn one\n")
        await turn(reg, service, sid, self_write(work / "a.txt", one))
        await turn(reg, service, sid, self_write(work / "a.txt", edited(one, l4="turn two\n")),
                   self_write(work / "b.txt", "b\n"))
        store = store_of(service, work)
        first = pick_turn(store.read_state(), sid, 1)
        with store.locked() as state:
            plan = store.undo_plan(state, first.seq)
        assert [t["number"] for t in plan.turns] == [2, 1], "the later turn first"
        store.undo(first.seq, [p.path for p in plan.writes])
        assert (work / "a.txt").read_text() == TWENTY
        assert not (work / "b.txt").exists()


async def test_the_persons_save_during_a_turn_stays_theirs(tmp_path: Path) -> None:
    """While the agent waits for a permission, the person saves a.txt (line 15) and
    mine.txt (the editor reports both saves); then the agent changes a.txt (line 3). The
    review lists only the agent's change; the undo takes it back and keeps theirs."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text(TWENTY)
    (work / "mine.txt").write_text("mine\n")
    decider = ScriptedDecider("allow_once", hold=True)
    ask = {"request": "session/request_permission", "params": {
        "toolCall": {"toolCallId": "e1", "title": "Edit a.txt", "kind": "edit"},
        "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]}}
    async with registry(tmp_path, decider) as (reg, service):
        sid = (await reg.new_session("script", str(work))).session_id
        async with anyio.create_task_group() as tg:
            steps = [ask, {"shell": "sed -i 's/^line 3$/agent three/' a.txt"}]
            tg.start_soon(reg.prompt, sid, json.dumps(steps))
            with anyio.fail_after(30):
                while not decider.asked:
                    await anyio.sleep(0.01)
                await service.idle()  # the snapshot before the turn is complete
            for name, new in (("a.txt", edited(TWENTY, l15="mine\n")), ("mine.txt", "ours\n")):
                path = work / name
                old = path.read_bytes()
                path.write_text(new)
                assert reg.checkpoints.person_saved(path, old, new.encode()) == 1
            decider.release.set()
        await service.idle()
        assert (work / "a.txt").read_text() == edited(TWENTY, l3="agent three\n",
                                                      l15="mine\n")
        store = store_of(service, work)
        record = pick_turn(store.read_state(), sid)
        review = store.review(record)
        assert [(f.path, f.added, f.removed) for f in review] == [("a.txt", 1, 1)]
        assert [line for line in review[0].hunks[0].lines() if line[:1] in "+-"] == \
            ["-line 3", "+agent three"]
        store.undo(record.seq)
        assert (work / "a.txt").read_text() == edited(TWENTY, l15="mine\n")
        assert (work / "mine.txt").read_text() == "ours\n"


class HeldSnapshot:
    """TurnHooks whose "before" snapshot completes only when the test says so."""

    def __init__(self) -> None:
        self.asked = anyio.Event()  # someone waits for the snapshot
        self.done = anyio.Event()

    def bind(self, task_group: Any) -> None:
        pass

    def session_opened(self, session_id: str, cwd: str) -> None:
        pass

    def turn_started(self, info: Any) -> HeldSnapshot:
        return self

    async def begun(self) -> None:
        pass

    async def ready(self) -> None:
        self.asked.set()
        await self.done.wait()

    async def before_write(self, path: Path) -> None:
        pass

    def tool_call(self, *args: Any) -> None:
        pass

    def asked(self, tool_call_id: str) -> None:
        pass

    def person_saved(self, *args: Any) -> None:
        pass

    def ended(self, stop_reason: str) -> None:
        pass

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize("request_kind", ["fs", "terminal", "permission"])
async def test_the_agents_own_requests_wait_for_the_snapshot_before_the_turn(
        tmp_path: Path, request_kind: str) -> None:
    """An fs write, a terminal, or the answer to a permission request (after which an
    agent edits itself) is served only once the snapshot before the turn is complete."""
    target = tmp_path / "notes.txt"
    target.write_text("before\n")
    held = HeldSnapshot()
    config = load_config_mapping({"agents": {"script": {"command": SCRIPT[0],
                                                        "args": SCRIPT[1:]}},
                                  "permissions": {"gate_unasked": False}})
    steps = {
        "fs": fs_write(target, "after\n"),
        "terminal": [{"request": "terminal/create", "params": {
                         "command": "sh", "args": ["-c", f"echo after > {target}"]}},
                     {"request": "terminal/wait_for_exit",
                      "params": {"terminalId": "$terminalId"}}],
        "permission": self_write(target, "after\n"),
    }[request_kind]
    async with SessionRegistry(config, decider=ScriptedDecider("allow_once"),
                               grace_seconds=0.5, permission_memory=None, limits_cache=None,
                               transcripts_dir=None, checkpoints=held) as reg:
        sid = (await reg.new_session("script", str(tmp_path))).session_id
        async with anyio.create_task_group() as tg:
            tg.start_soon(reg.prompt, sid, json.dumps(steps))
            with anyio.fail_after(30):
                await held.asked.wait()
            assert target.read_text() == "before\n", "nothing is served before the snapshot"
            held.done.set()
    assert target.read_text() == "after\n"


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
