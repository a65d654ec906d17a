"""A session's history at the host, to show a front end that loads it again the session
as it is now: every `session/update` it was sent (and the prompts people sent, as
`user_message_chunk`), consecutive text chunks of one message merged into one, within a
byte and a count budget (the oldest entries go first). Pure."""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass
from typing import Any

from louise.acp.json_lines import encode_line

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_ENTRIES = 20_000
# The session/update kinds whose text chunks merge when they continue one message.
_MERGED_KINDS = frozenset({"agent_message_chunk", "user_message_chunk", "agent_thought_chunk"})
REPLAY_META = {"louise": {"replay": True}}


@dataclass(slots=True)
class _Entry:
    update: dict[str, Any]  # the `update` object of a session/update, owned here
    size: int


def _text_chunk(update: dict[str, Any]) -> str | None:
    """The text of a mergeable chunk, or None."""
    if update.get("sessionUpdate") not in _MERGED_KINDS:
        return None
    content = update.get("content")
    if not isinstance(content, dict) or content.get("type") != "text":
        return None
    text = content.get("text")
    if not isinstance(text, str) or set(content) - {"type", "text"}:
        return None  # annotations or anything else: kept as its own entry
    return text


def _continues(previous: dict[str, Any], update: dict[str, Any]) -> bool:
    same_kind = previous.get("sessionUpdate") == update.get("sessionUpdate")
    return (same_kind and previous.get("messageId") == update.get("messageId")
            and set(previous) == set(update) and _text_chunk(previous) is not None)


class SessionHistory:
    """What one session's front ends were sent, bounded by `max_bytes` and `max_entries`."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: deque[_Entry] = deque()
        self._bytes = 0
        self.dropped = 0  # entries cut from the start to stay within the budget

    @property
    def size(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, update: Any) -> None:
        """Keep one `session/update`'s `update` object (copied: the caller's is not held)."""
        if not isinstance(update, dict):
            return
        text = _text_chunk(update)
        if text is not None and self._entries and _continues(self._entries[-1].update, update):
            last = self._entries[-1]
            last.update["content"]["text"] += text
            grown = len(text.encode("utf-8", "surrogatepass"))
            last.size += grown
            self._bytes += grown
        else:
            size = len(encode_line(update))
            if size > self.max_bytes:
                self.dropped += 1
                return
            self._entries.append(_Entry(copy.deepcopy(update), size))
            self._bytes += size
        while self._entries and (self._bytes > self.max_bytes
                                 or len(self._entries) > self.max_entries):
            self._bytes -= self._entries.popleft().size
            self.dropped += 1

    def replay(self, session_id: str) -> list[dict[str, Any]]:
        """The history as `session/update` notifications for one front end, each marked
        `_meta.louise.replay`."""
        return [{"jsonrpc": "2.0", "method": "session/update",
                 "params": {"sessionId": session_id, "update": entry.update,
                            "_meta": REPLAY_META}}
                for entry in self._entries]


def user_message_updates(prompt: Any) -> list[dict[str, Any]]:
    """A prompt's content blocks as the `user_message_chunk` updates the other front ends
    (and the history) see."""
    if not isinstance(prompt, list):
        return []
    return [{"sessionUpdate": "user_message_chunk", "content": block}
            for block in prompt if isinstance(block, dict)]


# Updates for a session the agent announces before its answer that creates it (kept for
# that answer, within bounds).
MAX_EARLY_SESSIONS = 16
MAX_EARLY_UPDATES = 500


class EarlyUpdates:
    """Updates for sessions not yet created at the host, kept for the answer that creates
    each (the oldest session's dropped past `MAX_EARLY_SESSIONS`)."""

    def __init__(self) -> None:
        self._kept: dict[str, list[dict[str, Any]]] = {}

    def keep(self, session_id: str, message: dict[str, Any]) -> None:
        kept = self._kept.get(session_id)
        if kept is None:
            if len(self._kept) >= MAX_EARLY_SESSIONS:
                self._kept.pop(next(iter(self._kept)))
            kept = self._kept[session_id] = []
        if len(kept) < MAX_EARLY_UPDATES:
            kept.append(message)

    def take(self, session_id: str) -> list[dict[str, Any]]:
        return self._kept.pop(session_id, [])

    def clear(self) -> None:
        self._kept.clear()
