"""Sessions of the demo agent: state, bounded history for `session/load`, and listing.

Session ids count up (`demo-1`, `demo-2`, …); times are the wall clock's, at least one
second apart per event (and after the newest stored session), so that ordering by time
is strict and a person sees real dates.
Sessions are stored through `storage.SessionFiles` and outlive the process.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import catalog
from .storage import SessionFiles

JsonObject = dict[str, Any]

MAX_HISTORY = 200  # replayable entries per session; older ones fall off
MAX_ENTRY_TEXT = 8 * 1024  # a streamed message is stored joined, cut at this size
MAX_SESSIONS = 10_000
_CHUNK_KINDS = {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"}


_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class DemoClock:
    """Event times: the wall clock, strictly increasing by at least one second."""

    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self.seconds = 0
        self._now = now

    def tick(self) -> tuple[int, str]:
        """Return (seconds since the Unix epoch, ISO 8601 time) of a new event."""
        self.seconds = max(int(self._now()), self.seconds + 1)
        when = datetime.datetime.fromtimestamp(self.seconds, datetime.UTC)
        return self.seconds, when.strftime(_TIME_FORMAT)

    @staticmethod
    def seconds_of(iso: str) -> int:
        try:
            when = datetime.datetime.strptime(iso, _TIME_FORMAT).replace(tzinfo=datetime.UTC)
        except ValueError:
            return 0
        return max(0, int(when.timestamp()))


class RunningTurn(Protocol):
    """What a session knows of its running turn (`turn.Turn`): it can be cancelled, and
    text can be steered into it."""

    steered: list[str]

    def cancel(self, *, by_request: bool = False) -> None: ...


@dataclass
class Session:
    id: str
    cwd: str
    title: str | None = None
    updated_at: str = ""
    seq: int = 0  # ordering for session/list: the most recently touched first
    mode: str = catalog.DEFAULT_MODE
    config: dict[str, str] = field(default_factory=lambda: dict(catalog.DEFAULT_CONFIG))
    history: deque[JsonObject] = field(default_factory=lambda: deque(maxlen=MAX_HISTORY))
    turn: RunningTurn | None = None
    # tool kind -> "allow" / "reject", remembered from allow_always / reject_always
    always: dict[str, str] = field(default_factory=dict)
    used_tokens: int = 0
    prompts: int = 0
    next_message: int = 0
    next_tool_call: int = 0
    # The MCP servers of the last session/new, load or resume (kept in this process only).
    mcp_servers: list[JsonObject] = field(default_factory=list)
    # What the last prompt carried besides text (links, embedded files, images).
    attachments: list[str] = field(default_factory=list)

    def info(self) -> JsonObject:
        """`SessionInfo` for session/list."""
        info: JsonObject = {"sessionId": self.id, "cwd": self.cwd, "updatedAt": self.updated_at}
        if self.title is not None:
            info["title"] = self.title
        return info

    def to_json(self) -> JsonObject:
        return {
            "sessionId": self.id,
            "cwd": self.cwd,
            "title": self.title,
            "updatedAt": self.updated_at,
            "mode": self.mode,
            "config": self.config,
            "always": self.always,
            "usedTokens": self.used_tokens,
            "nextMessage": self.next_message,
            "nextToolCall": self.next_tool_call,
            "history": list(self.history),
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> Session | None:
        """A stored session, or None if the file is not one of ours."""
        try:
            session = cls(id=data["sessionId"], cwd=data["cwd"], updated_at=data["updatedAt"])
            if not all(isinstance(v, str) for v in (session.id, session.cwd, session.updated_at)):
                return None
            title = data.get("title")
            session.title = title if isinstance(title, str) else None
            session.seq = DemoClock.seconds_of(session.updated_at)
            config = data.get("config", {})
            for key, value in config.items() if isinstance(config, dict) else ():
                if catalog.is_valid_config_value(key, value):
                    session.config[key] = value
            session.mode = session.config["mode"]
            always = data.get("always", {})
            if isinstance(always, dict):
                session.always = {
                    k: v
                    for k, v in always.items()
                    if isinstance(k, str) and v in ("allow", "reject")
                }
            for name, attribute in (
                ("usedTokens", "used_tokens"),
                ("nextMessage", "next_message"),
                ("nextToolCall", "next_tool_call"),
            ):
                value = data.get(name, 0)
                setattr(session, attribute, value if type(value) is int and value >= 0 else 0)
            history = data.get("history", [])
            session.history.extend(
                h for h in history if isinstance(h, dict) and "sessionUpdate" in h
            )
        except (KeyError, TypeError, AttributeError):
            return None
        return session

    def set_mode(self, mode: str) -> None:
        # The mode is both the legacy `modes` state and the "mode" config option.
        self.mode = mode
        self.config["mode"] = mode

    def record(self, update: JsonObject) -> None:
        """Keep what `session/load` replays: message chunks (joined) and tool calls."""
        kind = update.get("sessionUpdate")
        if kind in _CHUNK_KINDS:
            self._record_chunk(update)
        elif kind == "tool_call":
            self.history.append(copy.deepcopy(update))
        elif kind == "tool_call_update":
            self._merge_tool_call(update)

    def _record_chunk(self, update: JsonObject) -> None:
        last = self.history[-1] if self.history else None
        content = update.get("content")
        joinable = (
            last is not None
            and update.get("messageId") is not None
            and last.get("sessionUpdate") == update["sessionUpdate"]
            and last.get("messageId") == update.get("messageId")
            and isinstance(content, dict)
            and content.get("type") == "text"
            and last["content"].get("type") == "text"
        )
        if last is not None and joinable and isinstance(content, dict):
            if len(last["content"]["text"]) >= MAX_ENTRY_TEXT:
                return  # a long stream: the replay keeps its start only
            joined = last["content"]["text"] + content.get("text", "")
            last["content"]["text"] = joined[:MAX_ENTRY_TEXT]
            return
        entry = copy.deepcopy(update)
        if isinstance(content, dict) and isinstance(content.get("text"), str):
            entry["content"]["text"] = content["text"][:MAX_ENTRY_TEXT]
        self.history.append(entry)

    def _merge_tool_call(self, update: JsonObject) -> None:
        for entry in reversed(self.history):
            if entry.get("sessionUpdate") == "tool_call" and (
                entry.get("toolCallId") == update.get("toolCallId")
            ):
                # tool_call_update fields replace whole values (content, locations too).
                for key, value in update.items():
                    if key != "sessionUpdate":
                        entry[key] = copy.deepcopy(value)
                return


class SessionStore:
    """All sessions: the saved ones every process starts with, and the stored ones."""

    def __init__(self, *, saved: int, page_size: int, cwd: str, files: SessionFiles) -> None:
        self.clock = DemoClock()
        self.page_size = page_size
        self.files = files
        self._sessions: dict[str, Session] = {}
        self._on_disk: set[str] = set()  # ids read from or written to the files
        for index in range(saved):
            stored = self.files.load(f"saved-{index + 1}")
            if stored is not None and stored.get("deleted") is True:
                continue  # session/delete: gone for good
            session = Session(
                id=f"saved-{index + 1}",
                cwd=cwd,
                title=catalog.SAVED_TITLES[index % len(catalog.SAVED_TITLES)],
            )
            session.history.extend(catalog.saved_history(index))
            self.touch(session)
            self._sessions[session.id] = session
        self._load_stored()

    def _load_stored(self) -> None:
        """Pick up sessions stored by earlier (or concurrent) processes."""
        for session_id in self.files.ids():
            if session_id in self._on_disk:
                continue  # the copy in memory is the newer one
            if len(self._sessions) >= MAX_SESSIONS:
                break
            data = self.files.load(session_id)
            if data is not None and data.get("deleted") is True:
                self._sessions.pop(session_id, None)
                self._on_disk.add(session_id)
                continue
            session = Session.from_json(data) if data is not None else None
            if session is not None and session.id == session_id:
                self._sessions[session_id] = session
                self._on_disk.add(session_id)
                # New events must sort after everything stored.
                self.clock.seconds = max(self.clock.seconds, session.seq)

    def touch(self, session: Session) -> None:
        session.seq, session.updated_at = self.clock.tick()

    def save(self, session: Session) -> None:
        self.files.save(session.id, session.to_json())
        self._on_disk.add(session.id)

    def create(self, cwd: str) -> Session:
        if len(self._sessions) >= MAX_SESSIONS:
            raise OverflowError("too many sessions")
        session = Session(id=self.files.claim(), cwd=cwd)
        self.touch(session)
        self._sessions[session.id] = session
        self.save(session)
        return session

    def delete(self, session_id: str) -> None:
        """session/delete: gone from the list and from disk (a marker stays, so a saved
        session is not made again); an unknown id is fine."""
        self._sessions.pop(session_id, None)
        self.files.save(session_id, {"sessionId": session_id, "deleted": True})
        self._on_disk.add(session_id)

    def fork(self, source: Session, cwd: str) -> Session:
        """session/fork: a new session with the source's history and settings."""
        session = self.create(cwd)
        session.history.extend(copy.deepcopy(list(source.history)))
        session.title = f"Fork of {source.title or source.id}"[:80]
        session.config = dict(source.config)
        session.mode = source.mode
        session.next_message = source.next_message
        session.next_tool_call = source.next_tool_call
        self.save(session)
        return session

    def get(self, session_id: object) -> Session | None:
        if not isinstance(session_id, str):
            return None
        if session_id not in self._sessions:
            self._load_stored()  # another process may have made it since we started
        return self._sessions.get(session_id)

    def page(self, cwd: str | None, cursor: str | None) -> tuple[list[Session], str | None]:
        """One page of sessions, newest first; raises ValueError on a bad cursor."""
        offset = 0 if cursor is None else _decode_cursor(cursor)
        if offset == 0:
            self._load_stored()
        matching = [s for s in self._sessions.values() if cwd is None or s.cwd == cwd]
        matching.sort(key=lambda s: (s.seq, s.id), reverse=True)
        end = offset + self.page_size
        next_cursor = _encode_cursor(end) if end < len(matching) else None
        return matching[offset:end], next_cursor


def _encode_cursor(offset: int) -> str:
    # Opaque to the client; it must never parse it. Base64 keeps it from looking like a number.
    return base64.urlsafe_b64encode(f"demo-cursor:{offset}".encode()).decode()


def _decode_cursor(cursor: str) -> int:
    try:
        prefix, _, number = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        offset = int(number)
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise ValueError("invalid cursor") from exc
    if prefix != "demo-cursor" or offset < 0:
        raise ValueError("invalid cursor")
    return offset
