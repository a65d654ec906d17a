"""A workspace's checkpoint store (`store.TurnStore`) with what a person does with a
turn: review it, take a hunk or a file back, undo it with every later turn. Blocking and
locked, as the store."""

from __future__ import annotations

from collections.abc import Sequence

from louise.checkpoints import workspace_files as wf
from louise.checkpoints.records import StoreState, TurnRecord
from louise.checkpoints.review import ReviewFile, file_review, noted_review
from louise.checkpoints.store import FileContents, TurnStore
from louise.checkpoints.undo import ABSENT_CONTENT, Content, FilePlan, UndoPlan, take_back_steps


class WorkspaceStore(TurnStore):
    """One workspace's checkpoints: see `store.py`."""

    # ------------------------------------------------------------------ review

    def review(self, record: TurnRecord) -> list[ReviewFile]:
        out = []
        for item in self.turn_files(record):
            change = item.change
            if not item.copied:
                status = "added" if not change.old.exists else \
                    ("removed" if not change.new.exists else "modified")
                why = change.new.why or change.old.why or "large"
                out.append(noted_review(change.path, status, why) if not item.unread else
                           ReviewFile(change.path, status, note=item.note, revertible=False))
                continue
            disk = self.current(change.path)
            current = disk.data if disk.kind in ("file", "link") else None
            out.append(file_review(change.path, item.before, item.after, current,
                                   note=item.note))
        return out

    def revert_hunk(self, record: TurnRecord, path: str, index: int) -> str:
        """Take one hunk of the turn back from the file as it is now; what happened, for
        a person."""
        from louise.checkpoints.diffs import revert_hunk, split_lines

        with self.locked():
            item = self._item(record, path)
            if item is None:
                return f"{path}: the turn did not change it"
            if not item.copied:
                return f"{path}: not taken back: {item.note or 'it was not copied'}"
            review = file_review(path, item.before, item.after, None)
            if not 0 <= index < len(review.hunks):
                return f"{path}: no such hunk (the review is out of date)"
            if review.status == "added" and len(review.hunks) == 1:
                return self._revert_whole(record, item)
            disk = self.current(path)
            if disk.kind not in ("file", "absent") or (disk.kind == "file" and disk.data is None):
                return f"{path}: not taken back: it is not a text file within the size limit now"
            after = split_lines(item.after or b"")
            lines = revert_hunk(after, split_lines(disk.data or b""), review.hunks[index])
            if lines is None:
                return f"{path}: not taken back: those lines changed since the turn"
            try:
                wf.write(self.workspace, path, b"".join(lines),
                         mode=disk.mode if disk.kind == "file" else 0o644)
            except OSError as exc:
                return f"{path}: not taken back: {exc.strerror or exc}"
            return f"{path}: hunk taken back"

    def revert_file(self, record: TurnRecord, path: str) -> str:
        with self.locked():
            item = self._item(record, path)
            if item is None:
                return f"{path}: the turn did not change it"
            return self._revert_whole(record, item)

    def _item(self, record: TurnRecord, path: str) -> FileContents | None:
        return next((item for item in self.turn_files(record) if item.change.path == path),
                    None)

    def _revert_whole(self, record: TurnRecord, item: FileContents) -> str:
        plan = self._plan_for(item.change.path)
        if not item.copied:
            return f"{item.change.path}: not taken back: " \
                   f"{item.note or 'it was not copied (large or binary)'}"
        take_back_steps(plan, self.steps(record, item))
        if plan.problem:
            return f"{item.change.path}: not taken back: {plan.problem}"
        if not plan.changes:
            return f"{item.change.path}: already as before the turn"
        self._write(plan)
        if plan.problem:
            return f"{item.change.path}: not taken back: {plan.problem}"
        return f"{item.change.path}: taken back"

    # ------------------------------------------------------------------ undo

    def _plan_for(self, path: str) -> FilePlan:
        disk = self.current(path)
        content: Content = (disk.kind, disk.data, disk.mode) if disk.kind in ("file", "link") \
            and disk.data is not None else ABSENT_CONTENT
        if disk.kind == "other" or (disk.kind == "file" and disk.data is None):
            plan = FilePlan(path, content, content)
            plan.problem = "it is not a text file within the size limit now"
            return plan
        return FilePlan(path, content, content)

    def undo_plan(self, state: StoreState, seq: int) -> UndoPlan:
        """Undo of turn `seq` and every later turn of this workspace, latest first."""
        from louise.checkpoints.review import summary

        turns = sorted((t for t in state.turns if t.seq >= seq and not t.undone
                        and t.after is not None), key=lambda t: -t.seq)
        plans: dict[str, FilePlan] = {}
        not_copied: list[str] = []
        for turn in turns:
            for item in self.turn_files(turn):
                change = item.change
                if not item.copied:
                    not_copied.append(change.path)
                    continue
                plan = plans.get(change.path)
                if plan is None:
                    plan = plans[change.path] = self._plan_for(change.path)
                plan.turns.append(turn.seq)
                take_back_steps(plan, self.steps(turn, item))
        described = [{"seq": t.seq, "number": t.number, "session": t.session,
                      "agent": t.agent, "prompt": t.prompt,
                      "summary": summary([(f.added, f.removed) for f in t.files],
                                         t.files_more)} for t in turns]
        return UndoPlan(seq, described, [plans[p] for p in sorted(plans)],
                        sorted(set(not_copied)))

    def undo(self, seq: int, expect: Sequence[str] | None = None) -> UndoPlan:
        """Carry out the undo of `seq` (and every later turn): files written where clean,
        the turns marked undone. `expect`: the files the person was shown; if the plan
        changed meanwhile, nothing is done (ValueError)."""
        with self.locked() as state:
            plan = self.undo_plan(state, seq)
            if expect is not None and sorted(expect) != sorted(p.path for p in plan.writes):
                raise ValueError("the files changed since the undo was shown; nothing was "
                                 "done, look again")
            for item in plan.writes:
                self._write(item)  # a file it cannot write says why (plan.problems)
            for turn in state.turns:
                if turn.seq >= seq:
                    turn.undone = True
            return plan

    def _write(self, plan: FilePlan) -> None:
        """Put the plan's result in place; what stands in the way becomes its problem (a
        directory swapped for a link is refused, never followed)."""
        kind, data, mode = plan.result
        try:
            if kind == "absent":
                wf.remove(self.workspace, plan.path)
            else:
                wf.write(self.workspace, plan.path, data or b"", mode=mode or 0o644,
                         link=kind == "link")
        except OSError as exc:
            plan.problem = f"it could not be written: {exc.strerror or exc}"
