"""The registry's side of the checkpoint hooks (`turn_hooks.py`): each turn's watch started
before `session/prompt` and ended with the turn, tool calls' files reported, the
person's saves passed on, the "changes" line noted in the chat."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from louise.acp.schema import ParsedUpdate
from louise.registry.events import Emitter
from louise.registry.records import AgentRuntime, LiveSession, SessionTable
from louise.registry.transcripts import TranscriptWriter
from louise.registry.turn_hooks import TurnHooks, TurnInfo

log = logging.getLogger("louise.registry")

TOOL_UPDATES = ("tool_call", "tool_call_update")


class TurnCheckpoints:
    """The registry's side: starts and ends each turn's watch, reports tool calls."""

    def __init__(self, table: SessionTable, emitter: Emitter, transcripts: TranscriptWriter,
                 hooks: TurnHooks | None) -> None:
        self._table = table
        self._emitter = emitter
        self._transcripts = transcripts
        self.hooks = hooks

    async def start(self, live: LiveSession, prompt: str) -> None:
        """Before `session/prompt`: the turn's watch, its snapshot under way."""
        if self.hooks is None:
            return
        session_id = live.session_id
        info = TurnInfo(session_id, live.agent, live.cwd, live.model.turn, prompt,
                        lambda kind, text, data: self.note(session_id, kind, text, data))
        try:
            watch = self.hooks.turn_started(info)
            await watch.begun()
        except Exception:
            log.exception("%s: the checkpoint of turn %s did not start", session_id,
                          live.model.turn)
            return
        live.turn_watch = watch

    def end(self, live: LiveSession, stop_reason: str) -> None:
        watch, live.turn_watch = live.turn_watch, None
        if watch is not None:
            try:
                watch.ended(stop_reason)
            except Exception:
                log.exception("%s: the checkpoint after the turn failed", live.session_id)

    def on_update(self, runtime: AgentRuntime, acp_id: str, update: ParsedUpdate) -> None:
        if update.kind not in TOOL_UPDATES:
            return
        live = self._table.find(runtime.name, acp_id)
        watch = live.turn_watch if live is not None else None
        if live is None or watch is None:
            return
        tool_call_id = update.raw.get("toolCallId")
        record = live.model.tool_calls.get(tool_call_id) if isinstance(tool_call_id, str) \
            else None
        if record is None:
            return
        diffs = [item for item in record.content if item.get("type") == "diff"]
        watch.tool_call(record.tool_call_id, record.kind, record.status, record.file_paths(),
                        diffs)

    def session_opened(self, session_id: str, cwd: str) -> None:
        if self.hooks is not None:
            self.hooks.session_opened(session_id, cwd)

    def person_saved(self, path: Path, before: bytes | None, after: bytes | None) -> int:
        """The person saved a file: told to every running turn whose workspace holds it.
        How many were told."""
        told = 0
        for live in self._table.sessions.values():
            watch = live.turn_watch
            if watch is not None and path.is_relative_to(os.path.realpath(live.cwd)):
                watch.person_saved(path, before, after)
                told += 1
        return told

    def note(self, session_id: str, kind: str, text: str,
             data: Mapping[str, Any] | None) -> None:
        """A line in the session's chat and transcript (the session may have gone)."""
        live = self._table.sessions.get(session_id)
        if live is None:
            return
        self._emitter.emit_all(live.model.add_notice(kind, text, data))
        self._transcripts.record(live.transcript, {"type": "notice", "kind": kind,
                                                   "text": text})
