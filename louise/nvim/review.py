"""`:LouiseReview` and `:LouiseUndo` in the engine: a turn's review for Lua
(`lua/louise/review.lua`), hunks and files taken back, review comments sent as the next
prompt, and an undo shown first and done on the person's say-so. The checkpoint store's
work runs in its worker thread (`louise.checkpoints.service`); open buffers follow the
files it writes as they follow an agent's (`fs.reload`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from louise.checkpoints.service import Checkpoints, Workspace
from louise.nvim.screen import Screen
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError

if TYPE_CHECKING:  # the store's modules load with a workspace's store (service.py)
    from louise.checkpoints.records import TurnRecord

MAX_TOLD_FILES = 5
MAX_SAVED_BYTES = 2 * 1024 * 1024
WHO = "louise (undo)"  # who changed a file, when its buffer asks about unsaved edits


class ReviewUi:
    def __init__(self, screen: Screen, registry: SessionRegistry,
                 checkpoints: Checkpoints | None) -> None:
        self._screen = screen
        self._registry = registry
        self._checkpoints = checkpoints  # None: [checkpoints] enabled = false

    @property
    def checkpoints(self) -> Checkpoints:
        service = self._checkpoints
        if service is None:
            raise RegistryError("checkpoints are off ([checkpoints] enabled = false), so "
                                "there is nothing to review or undo")
        return service

    def _workspace(self, key: str) -> Workspace:
        return self.checkpoints.workspace(self._registry.session(key).cwd)

    async def _turn(self, key: str, turn: int | None, seq: int | None
                    ) -> tuple[Workspace, TurnRecord]:
        from louise.checkpoints.records import NoSuchTurn, pick_turn

        workspace = self._workspace(key)
        state = await workspace.run(workspace.store.read_state)
        try:
            record = pick_turn(state, key, turn, seq)
        except NoSuchTurn as exc:
            raise RegistryError(str(exc)) from None
        if record.after is None:
            raise RegistryError(f"turn {record.number} is not over yet")
        return workspace, record

    # ------------------------------------------------------------------ review

    async def show(self, key: str, turn: int | None = None, seq: int | None = None) -> None:
        from louise.checkpoints.review import summary, to_wire

        workspace, record = await self._turn(key, turn, seq)
        store = workspace.store
        files = await workspace.run(lambda: store.review(record))
        notes = []
        if record.before is not None and record.before.mode == "files":
            why = (await workspace.run(store.read_state)).why
            notes.append(f"only files named by tool calls and louise's own writes are "
                         f"tracked here ({why}); changes made by shell commands are not")
        if record.late:
            notes.append("changes reported before the checkpoint was done may be missing: "
                         + ", ".join(record.late))
        if record.incomplete:
            notes.append(record.incomplete)
        if record.undone:
            notes.append("this turn was undone")
        self._screen.outbox.review.put({
            "key": key, "seq": record.seq, "turn": record.number, "agent": record.agent,
            "cwd": str(store.workspace), "prompt": record.prompt,
            "summary": summary(files) if files else "no files changed",
            "notes": notes, "files": to_wire(files)})
        self._screen.mark()

    async def revert_hunk(self, key: str, seq: int, path: str, hunk: int) -> None:
        workspace, record = await self._turn(key, None, seq)
        store = workspace.store
        said = await workspace.run(lambda: store.revert_hunk(record, path, int(hunk)))
        self._after_write(workspace, [path], said)
        await self.show(key, seq=seq)

    async def revert_file(self, key: str, seq: int, path: str) -> None:
        workspace, record = await self._turn(key, None, seq)
        store = workspace.store
        said = await workspace.run(lambda: store.revert_file(record, path))
        self._after_write(workspace, [path], said)
        await self.show(key, seq=seq)

    def _after_write(self, workspace: Workspace, paths: Sequence[str], said: str) -> None:
        for path in paths:
            self._screen.outbox.reloads.put(os.path.join(workspace.store.workspace, path), WHO)
        self._screen.notify(f"louise: {said}")

    async def comments_prompt(self, key: str, seq: int,
                              comments: Sequence[Mapping[str, Any]]) -> str:
        """Review comments as the prompt that sends them to the agent."""
        from louise.checkpoints.review import comments_prompt

        _, record = await self._turn(key, None, seq)
        return comments_prompt(f"turn {record.number}", comments)

    # ------------------------------------------------------------------ undo

    async def plan_undo(self, key: str, turn: int | None = None,
                        seq: int | None = None) -> None:
        """What the undo would do, shown to the person first (one confirmation)."""
        workspace, record = await self._turn(key, turn, seq)
        if record.undone:
            raise RegistryError(f"turn {record.number} is already undone")
        store = workspace.store

        def plan() -> Any:
            with store.locked() as state:
                return store.undo_plan(state, record.seq)

        found = await workspace.run(plan)
        self._screen.outbox.undo.put({
            "key": key, "seq": record.seq, "turn": record.number, "lines": found.lines(),
            "expect": [p.path for p in found.writes], "nothing": not found.writes,
            "plan": found.to_wire()})
        self._screen.mark()

    async def undo(self, key: str, seq: int, expect: Sequence[str]) -> None:
        workspace, record = await self._turn(key, None, seq)
        store = workspace.store
        try:
            done = await workspace.run(lambda: store.undo(int(seq), [str(p) for p in expect]))
        except ValueError as exc:
            raise RegistryError(str(exc)) from None
        written = [p.path for p in done.writes]
        problems = [f"{p.path} ({p.problem})" for p in done.problems]
        said = f"restored {len(written)} file(s)" + \
            (f"; left as they are: {', '.join(problems)}" if problems else "")
        self._after_write(workspace, written, said)
        if not written:
            return
        names = ", ".join(written[:MAX_TOLD_FILES]) + (" …" if len(written) >
                                                         MAX_TOLD_FILES else "")
        turns = sorted(t["number"] for t in done.turns)
        which = f"turn {turns[0]}" if len(turns) == 1 else \
            f"turns {turns[0]} to {turns[-1]}"
        self._screen.outbox.undo.put({
            "key": key, "done": True, "agent": record.agent,
            "tell": f"I reverted your changes of {which} to {names}: those files are back "
                    "as they were before; take that into account."})
        self._screen.mark()
        if problems:
            self._screen.notify("louise: files changed since in the same places were left as "
                                "they are (:LouiseReview shows them)", "warn")

    # ------------------------------------------------------------------ the person's saves

    async def person_saved(self, path: str, before: str | None, after: str | None) -> None:
        """The person saved a file during a turn (Lua copied it just before and just after
        the write): their change, kept out of the turn's review and undo."""
        def read(copy: str | None) -> bytes | None:
            if not copy:
                return None
            try:
                with open(copy, "rb") as handle:
                    return handle.read(MAX_SAVED_BYTES + 1)
            except OSError:
                return None
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(copy)

        old, new = await anyio.to_thread.run_sync(lambda: (read(before), read(after)))
        if (old is not None and len(old) > MAX_SAVED_BYTES) \
                or (new is not None and len(new) > MAX_SAVED_BYTES):
            return
        self._registry.checkpoints.person_saved(Path(os.path.realpath(path)), old, new)
