"""A session's transcript as kept in memory: its entries (messages, tool calls, notices,
compactions) and what they hold, and the byte accounting that evicts the oldest entries
past the session's budget. Pure.

`Entries` is the base of `SessionContent` (content.py); the appliers of tool calls
(`tool_calls.py`) and of unstable updates (`unstable.py`) fill it too, through `push`,
`grow` and `replace_size`.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

from louise.session.budget import clean_list, fit_items, text_bytes
from louise.session.records import (
    Compaction,
    Entry,
    IdPlan,
    Message,
    Notice,
    Role,
    SessionBounds,
    ToolCall,
    ToolCallRef,
)


class Entries:
    """The entries of one session and their byte accounting (`size_bytes`)."""

    def __init__(self, session_id: str, bounds: SessionBounds | None = None) -> None:
        self.session_id = session_id
        self.bounds = bounds or SessionBounds()
        self.entries: deque[Entry] = deque()
        self.entries_dropped = 0  # entries evicted from memory (oldest first)
        self.tool_calls: OrderedDict[str, ToolCall] = OrderedDict()
        # Unstable updates (louise.session.unstable): plans by id, context compactions.
        self.id_plans: OrderedDict[str, IdPlan] = OrderedDict()
        self.compactions: OrderedDict[str, Compaction] = OrderedDict()
        # This turn's tool calls. Insertion-ordered (a dict, not a set) so cancel/fail
        # events come in creation order, the same in every process (set order of str
        # varies with hash randomisation).
        self.turn_tool_call_ids: dict[str, None] = {}
        self.message_index: dict[tuple[Role, str], Message] = {}
        self._size = 0  # bytes of everything kept, see size_bytes
        self.sizes: dict[str, int] = {}  # bytes of plan, commands, … (replaced whole)

    # ------------------------------------------------------------ accounting

    @property
    def size_bytes(self) -> int:
        """Bytes the session keeps (message text and blocks, tool calls, notices, plan,
        commands, modes, options, info, kept unknown updates), as accounted against
        `bounds.max_session_bytes`."""
        return self._size

    def grow(self, delta: int) -> None:
        self._size += delta
        if self._size > self.bounds.max_session_bytes:
            self._evict_for_bytes()

    def _evict_for_bytes(self) -> None:
        """Oldest entries go until the session fits its budget (never the newest: it is
        being written to)."""
        while self._size > self.bounds.max_session_bytes and len(self.entries) > 1:
            self.drop_oldest()

    def drop_oldest(self) -> None:
        old = self.entries.popleft()
        self.entries_dropped += 1
        if isinstance(old, Message):
            self._size -= old.size
            if old.message_id is not None:
                key = (old.role, old.message_id)
                if self.message_index.get(key) is old:
                    del self.message_index[key]
        elif isinstance(old, ToolCallRef):
            record = self.tool_calls.pop(old.tool_call_id, None)
            if record is not None:
                self._size -= record.size
                self.turn_tool_call_ids.pop(old.tool_call_id, None)
        elif isinstance(old, Notice):
            self._size -= text_bytes(old.text)
        else:
            compaction = self.compactions.pop(old.compaction_id, None)
            self._size -= compaction.size if compaction is not None else 0

    def replace_size(self, name: str, size: int) -> None:
        self.grow(size - self.sizes.get(name, 0))
        self.sizes[name] = size

    def bounded_list(self, name: str, value: Any) -> list[dict[str, Any]]:
        items = clean_list(value)
        kept, size, _left_out = fit_items(items, self.bounds.max_content_bytes,
                                          self.bounds.max_list_items)
        self.replace_size(name, size)
        return kept

    # ------------------------------------------------------------ transcript access

    def entry_index(self, entry: Entry) -> int:
        """Absolute index of an entry (stable even after old entries are evicted)."""
        for offset, candidate in enumerate(reversed(self.entries)):
            if candidate is entry:
                return self.entries_dropped + len(self.entries) - 1 - offset
        raise ValueError("entry not in transcript")

    def push(self, entry: Entry) -> int:
        if self.entries:
            self.seal_last()  # a message followed by another entry is finished
        self.entries.append(entry)
        if len(self.entries) > self.bounds.max_entries:
            self.drop_oldest()
        if isinstance(entry, Notice):
            self.grow(text_bytes(entry.text))
        return self.entries_dropped + len(self.entries) - 1

    def seal_last(self) -> None:
        """The last entry, if a message, is finished: held compactly (`Message.seal`)."""
        last = self.entries[-1] if self.entries else None
        if isinstance(last, Message):
            last.seal()

    def messages(self) -> list[Message]:
        return [entry for entry in self.entries if isinstance(entry, Message)]
