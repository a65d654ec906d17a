"""What the router holds (pure data): each front end, each request under way in either
direction, each queued prompt, each session the host has."""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from louise.serve.echo import PromptEcho
from louise.serve.hello import FrontEnd
from louise.serve.replay import SessionHistory
from louise.serve.routing import Message

MAX_TOOL_CALLS = 256  # per session: the last ones, for the permission rules


@dataclass(slots=True)
class FrontEndState:
    info: FrontEnd
    capabilities: dict[str, Any] = field(default_factory=dict)
    next_id: itertools.count[int] = field(default_factory=itertools.count)

    def offers_fs(self, method: str) -> bool:
        fs = self.capabilities.get("fs")
        if not self.info.same_machine or not isinstance(fs, dict):
            return False
        wanted = {"fs/read_text_file": "readTextFile", "fs/write_text_file": "writeTextFile"}
        return fs.get(wanted.get(method, "")) is True


@dataclass(slots=True)
class ToAgent:
    """A front end's request at the agent under a host id."""

    front_end: int | None  # None once it detached (the answer is dropped)
    original_id: Any
    method: str
    session_id: str | None
    cwd: str | None = None  # a session/new's working directory


@dataclass(slots=True)
class ToFrontEnd:
    """An agent request (not a permission) at one front end under that front end's id."""

    agent_id: Any
    session_id: str | None


@dataclass(slots=True)
class Queued:
    front_end: int | None
    original_id: Any
    message: Message


@dataclass(slots=True)
class Session:
    session_id: str
    cwd: str | None
    history: SessionHistory
    front_ends: list[int] = field(default_factory=list)
    setup_result: dict[str, Any] = field(default_factory=dict)
    live: bool = False  # the agent holds it (created, loaded or resumed)
    loading: list[tuple[int, Any]] = field(default_factory=list)  # waiting for its load
    running: int | None = None  # the host id of the prompt at the agent
    running_front_end: int | None = None
    queue: deque[Queued] = field(default_factory=deque)
    echo: PromptEcho | None = None  # the running prompt, for an agent that echoes it
    # What the updates said of each tool call, as much as a permission rule reads.
    tool_calls: dict[str, dict[str, Any]] = field(default_factory=dict)

    def note_tool_call(self, update: dict[str, Any]) -> None:
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str):
            return
        known = self.tool_calls.pop(call_id, None)
        if known is None:
            known = {}
            if len(self.tool_calls) >= MAX_TOOL_CALLS:
                self.tool_calls.pop(next(iter(self.tool_calls)))
        self.tool_calls[call_id] = known
        if isinstance(update.get("kind"), str):
            known["kind"] = update["kind"]
        if isinstance(update.get("locations"), list):
            known["locations"] = [{"path": loc["path"]} for loc in update["locations"][:64]
                                  if isinstance(loc, dict) and isinstance(loc.get("path"), str)]
        if isinstance(update.get("content"), list):  # the diffs' paths, not their texts
            known["content"] = [{"type": "diff", "path": item["path"]}
                                for item in update["content"][:64]
                                if isinstance(item, dict) and item.get("type") == "diff"
                                and isinstance(item.get("path"), str)]
        raw = update.get("rawInput")
        if isinstance(raw, dict):
            known["rawInput"] = {key: value for key, value in raw.items()
                                 if isinstance(value, str) and len(value) <= 4096}


def with_running(session: Session) -> dict[str, Any]:
    """A live session's setup answer, saying whether a turn runs there now (its end then
    comes as `_louise/turn_ended`)."""
    value = dict(session.setup_result)
    meta = value.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta["louise"] = {"turnRunning": session.running is not None,
                      "queuedPrompts": len(session.queue)}
    value["_meta"] = meta
    return value
