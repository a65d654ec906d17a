"""What a session holds: its bounds, messages, tool calls and notices (plain records)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal[
    "starting", "ready", "prompting", "waiting_permission", "cancelling", "closing", "error",
    "closed"
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
    # Output of one terminal the agent runs itself (reported in its tool call's `_meta`).
    max_agent_terminal_bytes: int = 1024 * 1024
    max_agent_terminals: int = 16  # per tool call


# A streamed message's text is kept in pieces of this many chunks joined: each chunk its
# own string cost ~60 bytes of object and list slot besides its text (a 5 MB reply of
# 60-byte chunks took twice its size), a joined piece a few ‰ of it (bench/engine_rss.py).
# Joining copies each chunk once more: linear, and never the whole message per chunk.
CHUNKS_PER_PIECE = 64
# Past this many characters not yet packed, a message's text is packed: UTF-8, zlib at
# its fastest level (~1 ms for 64 KiB, ~2.5x smaller for prose; a str of text with one
# non-ASCII character takes 2-4 bytes a character). Neovim holds the text as shown; the
# model keeps it for what reads it later (a full render, export, previews), unpacked on
# each read and never cached unpacked (bench/engine_rss.py, issue 25 item 5).
PACK_CHARS = 64 * 1024
# A finished message (another entry follows it, its turn ended, a replay ended) packs
# what is left from this size on, or from NON_ASCII_PACK_CHARS when it is not ASCII.
SEAL_PACK_CHARS = 4 * 1024
NON_ASCII_PACK_CHARS = 256
_PACK_LEVEL = 1


def _pack(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8", "surrogatepass"), _PACK_LEVEL)


def _unpack(block: bytes) -> str:
    return zlib.decompress(block).decode("utf-8", "surrogatepass")


@dataclass(slots=True, eq=False)
class Message:
    """A user, agent or thought message assembled from chunks. Its text is `packed`
    blocks (older text, compressed) followed by `parts` (the newest, as strings); read
    it whole through `text`. Equal messages have equal text, however it is held."""

    role: Role
    message_id: str | None
    parts: list[str] = field(default_factory=list)
    chars: int = 0
    blocks: list[dict[str, Any]] = field(default_factory=list)  # non-text content, raw
    truncated: bool = False
    replayed: bool = False
    # Bytes accounted to the session for this message (text and blocks), and the blocks'
    # part of it: bookkeeping, not content (left out of comparisons).
    size: int = field(default=0, repr=False)
    block_bytes: int = field(default=0, repr=False)
    # How many of `parts`, at its end, are chunks not yet joined into a piece.
    loose: int = field(default=0, repr=False)
    # The text before `parts`, zlib-compressed UTF-8 blocks in order, and the
    # characters in `parts` (not yet packed).
    packed: list[bytes] = field(default_factory=list, repr=False)
    unpacked: int = field(default=0, repr=False)

    def append(self, text: str) -> None:
        """One chunk's text (kept within the bounds by the caller)."""
        parts = self.parts
        parts.append(text)
        self.unpacked += len(text)
        self.loose += 1
        if self.unpacked >= PACK_CHARS:
            self._pack_parts()
        elif self.loose >= CHUNKS_PER_PIECE:
            parts[-CHUNKS_PER_PIECE:] = ["".join(parts[-CHUNKS_PER_PIECE:])]
            self.loose = 0

    def _pack_parts(self) -> None:
        self.packed.append(_pack("".join(self.parts)))
        self.parts.clear()
        self.unpacked = 0
        self.loose = 0

    def seal(self) -> None:
        """The message is finished (it may still grow: then it is just less compact):
        its unpacked text is packed unless it is short ASCII."""
        if not self.parts:
            return
        tail = self.text_unpacked()
        if len(tail) >= SEAL_PACK_CHARS or (len(tail) >= NON_ASCII_PACK_CHARS
                                             and not tail.isascii()):
            self._pack_parts()

    def text_unpacked(self) -> str:
        """The text after the packed blocks (joined lazily, once)."""
        parts = self.parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
            self.loose = 0
        return parts[0] if parts else ""

    @property
    def text(self) -> str:
        tail = self.text_unpacked()
        if not self.packed:
            return tail
        return "".join([*map(_unpack, self.packed), tail])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return (self.role, self.message_id, self.chars, self.blocks, self.truncated,
                self.replayed) == (other.role, other.message_id, other.chars, other.blocks,
                                   other.truncated, other.replayed) \
            and self.text == other.text

    __hash__ = None  # type: ignore[assignment]


@dataclass(slots=True)
class AgentTerminal:
    """A terminal the agent runs itself and reports in its tool call's `_meta`
    (`terminal_info`, `terminal_output_delta`/`terminal_output`, `terminal_exit`: codex
    always, claude once the client advertises `_meta.terminal_output`). louise never
    created it: its output is only what the agent reports, kept up to
    `SessionBounds.max_agent_terminal_bytes`."""

    output: list[str] = field(default_factory=list)
    output_bytes: int = 0
    cut: bool = False  # output past the bound was not kept
    announced: bool = False  # a TerminalReported with its command went out
    exited: bool = False
    exit_code: int | None = None
    signal: str | None = None

    @property
    def text(self) -> str:
        if len(self.output) > 1:
            self.output[:] = ["".join(self.output)]
        return self.output[0] if self.output else ""

    def exit_text(self) -> str | None:
        """"exit 0" or "signal SIGKILL" once it ended, else None."""
        if not self.exited:
            return None
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        return f"signal {self.signal}" if self.signal else "exited"


@dataclass(slots=True)
class ToolCall:
    """A tool call as the agent reported it, updates merged."""

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
    # Terminals the agent runs itself, by terminal id (see `AgentTerminal`).
    terminals: dict[str, AgentTerminal] = field(default_factory=dict)
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

    def terminal_ids(self) -> list[str]:
        """The terminals this tool call shows: in its content, then those only its
        `_meta` reported."""
        ids = [str(item["terminalId"]) for item in self.content
               if item.get("type") == "terminal" and isinstance(item.get("terminalId"), str)]
        return list(dict.fromkeys([*ids, *self.terminals]))

    def file_paths(self) -> list[str]:
        """The files this tool call names (its locations, then its diffs), as sent."""
        paths = [loc["path"] for loc in self.locations if isinstance(loc.get("path"), str)]
        paths += [item["path"] for item in self.content
                  if item.get("type") == "diff" and isinstance(item.get("path"), str)]
        return list(dict.fromkeys(paths))


@dataclass(frozen=True, slots=True)
class ToolCallRef:
    """A transcript entry pointing at a tool call (the record itself mutates)."""

    tool_call_id: str


@dataclass(frozen=True, slots=True)
class Notice:
    """A line the client adds to the transcript: turn end, error, cancel."""

    kind: str  # "stop", "error", "cancelled", "info", "changes"
    text: str
    data: Mapping[str, Any] | None = None  # for the editor (a turn's changes: its review)


@dataclass(frozen=True, slots=True)
class IdPlan:
    """A plan the agent addresses by id (unstable `plan_update`): `items` (entries, as a
    `plan` update's), `markdown` (`text` is its content) or `file` (`text` is its uri).
    `anchor`: the transcript index it first showed at."""

    plan_id: str
    kind: Literal["items", "markdown", "file"]
    anchor: int
    entries: tuple[dict[str, Any], ...] = ()
    text: str = ""


@dataclass(slots=True)
class Compaction:
    """A context compaction (unstable `compaction_update`): its status (`in_progress`,
    `completed`, `failed`, `cancelled` or the agent's own), the text of the summary it
    retained, and why it failed."""

    compaction_id: str
    status: str
    summary: str = ""
    error: str | None = None
    index: int = -1  # its CompactionRef's transcript index (an id may come back later)

    @property
    def size(self) -> int:
        return len(self.compaction_id) + len(self.status) + len(self.summary.encode(
            "utf-8", "surrogatepass")) + len((self.error or "").encode("utf-8", "surrogatepass"))


@dataclass(frozen=True, slots=True)
class CompactionRef:
    """A transcript entry pointing at a context compaction (`louise.session.unstable`):
    where the agent's first update about it put it."""

    compaction_id: str


Entry = Message | ToolCallRef | Notice | CompactionRef
