"""Where a recorder of the workspace (louise's checkpoints, `louise/checkpoints/`) hooks
into turns, through a small interface so the registry stays testable without one.

The registry tells the hooks when a session opens (a first snapshot can be taken before
the first prompt), when a turn starts and ends, which files tool calls name, and which
file louise is about to write for the agent. It starts the snapshot before it sends
`session/prompt` (the first token does not wait for it) and holds the agent's own
`fs/write_text_file` and `terminal/create` requests, and the answers to its permission
requests (an agent that asks before it edits or runs a command edits after the answer),
until that snapshot is complete. An agent that changes files itself without asking
cannot be held: its tool calls are reported to the hooks, which note a change reported
before the snapshot was done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from anyio.abc import TaskGroup

Note = Callable[[str, str, Mapping[str, Any] | None], None]


class TurnWatch(Protocol):
    """One turn, as the recorder sees it."""

    async def begun(self) -> None:
        """Returns once the snapshot before the turn is under way (not done)."""

    async def ready(self) -> None:
        """Returns once the snapshot before the turn is complete (or given up, bounded)."""

    async def before_write(self, path: Path) -> None:
        """louise is about to write `path` for the agent (after `ready`)."""

    def tool_call(self, tool_call_id: str, kind: str, status: str | None,
                  paths: Sequence[str], diffs: Sequence[Mapping[str, Any]]) -> None:
        """A tool call of the turn (its kind and status) named these files (as sent) and
        diffs."""

    def asked(self, tool_call_id: str) -> None:
        """The agent's permission request for this tool call is answered now, after
        `ready`: what the tool call does comes after the snapshot."""

    def person_saved(self, path: Path, before: bytes | None, after: bytes | None) -> None:
        """The person saved `path` during the turn (in the editor): their change."""

    def ended(self, stop_reason: str) -> None:
        """The turn is over (the snapshot after it is the recorder's business)."""


@dataclass(frozen=True, slots=True)
class TurnInfo:
    """A turn as the hooks see it."""

    session_id: str
    agent: str
    cwd: str
    turn: int
    prompt: str
    note: Note  # a line in the session's chat: (kind, text, data for the editor)


class TurnHooks(Protocol):
    def bind(self, task_group: TaskGroup) -> None:
        """The registry's task group, for work that outlives a call."""

    def session_opened(self, session_id: str, cwd: str) -> None: ...

    def turn_started(self, info: TurnInfo) -> TurnWatch: ...

    async def aclose(self) -> None:
        """Finish what is under way (the registry is closing)."""
