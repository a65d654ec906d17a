"""Writes an agent asks for that meet unsaved edits, or a file changed on disk since its
buffer read it: the person chooses (keep the buffer, overwrite, refuse). The question goes
out in a frame and the answer comes back as a command; never a blocking request. Every
question is delivered (the outbox queues them); past the bound, and when the frame that
carried it failed, the write is refused: never left waiting, never allowed by default."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from louise.nvim.outbox import MAX_PENDING_CONFLICTS, FsConflict
from louise.nvim.screen import Screen

CONFLICT_CHOICES = ("buffer", "overwrite", "refuse")


@dataclass
class PendingConflict:
    """A write conflict asked of the person, until answered."""

    answered: anyio.Event = field(default_factory=anyio.Event)
    choice: str = "refuse"


class FsConflicts:
    """Open questions by id; `agent_of(session key)` names who asks."""

    def __init__(self, screen: Screen, agent_of: Callable[[str], str | None]) -> None:
        self._screen = screen
        self._agent_of = agent_of
        self._pending: dict[int, PendingConflict] = {}
        self._ids = 0

    async def ask(self, path: Path, session_id: str, reason: str = "modified") -> str:
        """The person's choice for a write to `path` (`reason`: fs.lua's state)."""
        if len(self._pending) >= MAX_PENDING_CONFLICTS:
            self._screen.notify(f"louise: too many writes wait for an answer; refused {path}",
                                "warn")
            return "refuse"
        self._ids += 1
        ident = self._ids
        pending = self._pending[ident] = PendingConflict()
        agent = self._agent_of(session_id) or "agent"
        self._screen.outbox.fs_conflicts.put(FsConflict(ident, str(path), agent, reason))
        self._screen.mark()
        try:
            await pending.answered.wait()
            return pending.choice
        finally:
            self._pending.pop(ident, None)

    def answer(self, ident: int, choice: str) -> None:
        pending = self._pending.get(ident)
        if pending is not None and not pending.answered.is_set():
            pending.choice = choice if choice in CONFLICT_CHOICES else "refuse"
            pending.answered.set()

    def refuse(self, idents: Iterable[int]) -> None:
        """Questions whose frame failed to show: refused (fail closed)."""
        for ident in idents:
            self.answer(ident, "refuse")
