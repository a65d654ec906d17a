"""Taking turns back: what an undo would do to each file, worked out in memory first (every
later turn's changes taken back first, latest first), then written only where it is
clean. Pure: contents in, plans out; the store reads and writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from louise.checkpoints.diffs import take_back

Content = tuple[str, bytes | None, int]  # (kind: "file" | "link" | "absent", data, mode)
ABSENT_CONTENT: Content = ("absent", None, 0)


@dataclass(frozen=True, slots=True)
class Step:
    """One change of the agent's to one file: from `before` to `after`."""

    before: Content
    after: Content


@dataclass(slots=True)
class FilePlan:
    path: str
    current: Content  # the file now
    result: Content  # the file after the undo
    turns: list[int] = field(default_factory=list)  # the turns (seq) that changed it
    problem: str = ""  # why it is not taken back (a conflict, not copied, …)
    conflict_lines: list[int] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        return not self.problem and self.result != self.current

    def to_wire(self) -> dict[str, Any]:
        return {"path": self.path, "turns": self.turns, "problem": self.problem,
                "lines": self.conflict_lines[:20], "changes": self.changes,
                "action": _action(self.current, self.result)}


def _action(current: Content, result: Content) -> str:
    if current == result:
        return "unchanged"
    if result[0] == "absent":
        return "remove"
    if current[0] == "absent":
        return "restore"
    return "revert"


def _data(content: Content) -> bytes | None:
    return None if content[0] == "absent" else content[1] or b""


def take_back_steps(plan: FilePlan, steps: Sequence[Step]) -> None:
    """Take `steps` (one turn's changes to the file, in order) back from the plan's
    result, latest first; on a conflict the plan says so and stops."""
    for step in reversed(steps):
        if plan.problem or step.before == step.after:
            continue
        if step.before[0] == "link" or step.after[0] == "link" or plan.result[0] == "link":
            if plan.result == step.after:
                plan.result = step.before
            elif plan.result != step.before:
                plan.problem = "a link that changed since"
            continue
        back = take_back(_data(step.before), _data(step.after), _data(plan.result))
        if not back.ok:
            plan.problem = back.reason or "changed since where the turn changed it too"
            plan.conflict_lines = [c.line for c in back.conflicts]
            continue
        if back.unchanged:
            continue
        if back.result is None:
            plan.result = ABSENT_CONTENT
        else:
            mode = step.before[2] if step.before[0] == "file" else plan.result[2] or 0o644
            if plan.result[0] == "file" and step.after[0] == "file" \
                    and plan.result[2] != step.after[2]:
                mode = plan.result[2]  # the mode was changed since: keep it
            plan.result = ("file", back.result, mode)


@dataclass(slots=True)
class UndoPlan:
    """Undo of turn `seq` and every later one (`turns`, latest first)."""

    seq: int
    turns: list[dict[str, Any]]
    files: list[FilePlan]
    not_copied: list[str] = field(default_factory=list)  # noted files the turns changed

    @property
    def writes(self) -> list[FilePlan]:
        return [f for f in self.files if f.changes]

    @property
    def problems(self) -> list[FilePlan]:
        return [f for f in self.files if f.problem]

    def to_wire(self) -> dict[str, Any]:
        return {"seq": self.seq, "turns": self.turns,
                "files": [f.to_wire() for f in self.files if f.changes or f.problem],
                "not_copied": self.not_copied[:50]}

    def lines(self) -> list[str]:
        """The plan as a person reads it before saying yes."""
        out = []
        for turn in self.turns:
            out.append(f"turn {turn['number']} of {turn['session']}: {turn['summary']}"
                       + (f" — {turn['prompt']}" if turn.get("prompt") else ""))
        for plan in self.files:
            if plan.changes:
                out.append(f"  {_action(plan.current, plan.result)} {plan.path}")
        for plan in self.problems:
            where = f" (line {', '.join(map(str, plan.conflict_lines[:5]))})" \
                if plan.conflict_lines else ""
            out.append(f"  keep {plan.path}: {plan.problem}{where}")
        for path in self.not_copied:
            out.append(f"  cannot restore {path}: it was not copied (large or binary)")
        return out
