"""Checkpoints around turns, over real stdio and real git: the scripted fake agent writes
files itself (as claude's Edit and codex's apply_patch do, after a tool call naming them),
through louise (`fs/write_text_file`) and from a shell command; the turn's review lists
exactly those files, a hunk or a file is taken back, an undo restores bytes and keeps
what the person changed elsewhere (limits and safeguards: test_checkpoints_bounds.py)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

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
