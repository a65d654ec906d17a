"""Buffers follow the files agents write themselves, as their tool calls say: once a tool
call that names files is done, and at the end of each turn, those files' buffers reload
(`fs.reload`: a clean buffer reloads, unsaved edits are asked about). A turn that ran
commands may have changed any file: every buffer is checked then."""

from __future__ import annotations

import os
from collections.abc import Callable

from louise.nvim.screen import Screen
from louise.session import Session, ToolCallChanged, TurnEnded

LOOKING_KINDS = frozenset({"read", "search", "fetch", "think"})  # tool calls that change nothing


class FileFollower:
    def __init__(self, screen: Screen, lookup: Callable[[str], Session | None]) -> None:
        self._screen = screen
        self._lookup = lookup

    def on_event(self, event: ToolCallChanged | TurnEnded) -> None:
        session = self._lookup(event.session_id)
        if session is None:
            return
        reloads = self._screen.outbox.reloads
        if isinstance(event, ToolCallChanged):
            record = session.tool_calls.get(event.tool_call_id)
            if record is None or "status" not in event.changed or not record.finished:
                return
            records = [record]
        else:
            records = session.turn_tool_calls()
            if any(r.kind == "execute" for r in records):
                reloads.put_everything()
                self._screen.mark()
                return
        for record in records:
            if record.kind in LOOKING_KINDS:
                continue
            for path in record.file_paths():
                reloads.put(os.path.join(session.cwd, path), session.agent)
        if reloads.pending:
            self._screen.mark()
