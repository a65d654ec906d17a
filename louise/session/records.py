"""What a session holds: its bounds, messages, tool calls and notices (plain records)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal[
    "starting", "ready", "prompting", "waiting_permission", "cancelling", "error", "closed"
]
Role = Literal["user", "agent", "thought"]
TURN_STATUSES: frozenset[Status] = frozenset({"prompting", "waiting_permission", "cancelling"})
UNFINISHED_TOOL_STATUSES = frozenset({None, "pending", "in_progress"})


@dataclass(frozen=True, slots=True)
class SessionBounds:
    """Caps on what one session keeps in memory. Counts bound the bookkeeping; the byte
    budgets bound what an agent controls the size of. Cut content is replaced by a visible
    marker (see `louise.session.budget`), never dropped silently."""

    max_message_chars: int = 8 * 1024 * 1024
    max_entries: int = 10_000
    max_tool_calls: int = 2_000
    max_unknown_updates: int = 100
    # One tool call's rawInput, or its rawOutput, or one kept unknown update.
    max_raw_bytes: int = 64 * 1024
    # One tool call's content (diffs, text, terminals) and one message's non-text blocks.
    max_content_bytes: int = 1024 * 1024
    # Everything the session keeps; past it the oldest entries are evicted.
    max_session_bytes: int = 64 * 1024 * 1024
    max_info_keys: int = 64
    max_info_value_bytes: int = 16 * 1024
    max_list_items: int = 1_000  # plan entries, commands, modes, config options, locations


@dataclass(slots=True)
class Message:
    """A user, agent or thought message assembled from chunks."""

    role: Role
    message_id: str | None
    parts: list[str] = field(default_factory=list)
    chars: int = 0
    blocks: list[dict[str, Any]] = field(default_factory=list)  # non-text content, raw
    truncated: bool = False
    replayed: bool = False
    # Bytes accounted to the session for this message (text and blocks), and the blocks'
    # part of it: bookkeeping, not content (left out of comparisons).
    size: int = field(default=0, compare=False, repr=False)
    block_bytes: int = field(default=0, compare=False, repr=False)

    @property
    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]  # join lazily, once
        return self.parts[0] if self.parts else ""


@dataclass(slots=True)
class ToolCall:
    tool_call_id: str
    title: str = ""
    kind: str = "other"
    status: str | None = "pending"
    content: list[dict[str, Any]] = field(default_factory=list)
    locations: list[dict[str, Any]] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    cancelled: bool = False  # set locally when the person cancelled the turn
    truncated: set[str] = field(default_factory=set)  # fields cut to a marker
    sizes: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def display_status(self) -> str:
        if self.cancelled and self.status != "completed":
            return "cancelled"
        return self.status or "pending"

    @property
    def finished(self) -> bool:
        return self.cancelled or self.status in ("completed", "failed")

    @property
    def size(self) -> int:
        return sum(self.sizes.values())


@dataclass(frozen=True, slots=True)
class ToolCallRef:
    """A transcript entry pointing at a tool call (the record itself mutates)."""

    tool_call_id: str


@dataclass(frozen=True, slots=True)
class Notice:
    """A line the client adds to the transcript: turn end, error, cancel."""

    kind: str  # "stop", "error", "cancelled", "info"
    text: str


Entry = Message | ToolCallRef | Notice
