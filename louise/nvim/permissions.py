"""Permission prompts in Neovim: the decider the registry asks (Python shows the request
in a frame, Lua answers with a command), what the permission float shows (each file of an
edit as a whole file before and after, put onto what the person has now: the loaded
buffer, unsaved edits included, else the disk), and a prompt that failed to show. Pure:
no pynvim here."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from louise.capabilities.file_changes import (
    MAX_REVIEW_BYTES,
    FileChange,
    proposed_change,
    read_for_review,
)
from louise.nvim.screen import Screen
from louise.nvim.tool_text import diff_lines
from louise.permissions.broker import PermissionRequest, QueueView, waited_text

# A loaded buffer's text as the person sees it (None: no buffer holds the file).
BufferText = Callable[[Path], Awaitable[str | None]]


@dataclass
class PendingPermission:
    """A permission request shown to the person, until answered."""

    request: PermissionRequest
    answered: anyio.Event = field(default_factory=anyio.Event)
    option_id: str | None = None


class NvimDecider:
    """Asks the person in Neovim: Python shows, Lua answers with a notification."""

    def __init__(self, screen: Screen, buffer_text: BufferText) -> None:
        self._screen = screen
        self._buffer_text = buffer_text
        self.pending: dict[int, PendingPermission] = {}
        self._failures: dict[int, int] = {}  # frames that failed to show a request

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        pending = PendingPermission(request)
        self.pending[request.request_id] = pending
        try:
            changes = await self.review_changes(request)
            self._screen.outbox.permission.show(request.request_id,
                                                permission_view(request, queue, changes))
            self._screen.mark()
            await pending.answered.wait()
            return pending.option_id
        finally:
            self.pending.pop(request.request_id, None)
            self._close(request.request_id)

    def answer(self, request_id: int, option_id: str | None) -> None:
        pending = self.pending.get(request_id)
        if pending is not None:
            pending.option_id = option_id
            pending.answered.set()

    def failed_to_show(self, request_id: int, shown_again: bool) -> None:
        """A frame that carried the request failed: it is shown again once (with the
        full render, `shown_again`); a second failure, or none to come, cancels it."""
        count = self._failures[request_id] = self._failures.get(request_id, 0) + 1
        if count > 1 or not shown_again:
            self._screen.notify("louise: the permission request could not be shown; it was "
                                "cancelled", "error")
            self.answer(request_id, None)
            # Off the screen now, not once the decider's task gets to it: the resync that
            # follows would otherwise show it a third time.
            self._close(request_id)

    def _close(self, request_id: int) -> None:
        """Answered, cancelled or gone: off the screen (unless a newer one is on it)."""
        self._failures.pop(request_id, None)
        self._screen.outbox.permission.settle(request_id)
        self._screen.mark()

    async def review_changes(self, request: PermissionRequest) -> list[FileChange]:
        """Each file of the request as a whole file before and after the edit, put onto
        what the person has now: the loaded buffer (unsaved edits included), else the
        disk."""
        changes = []
        for item in request.diffs:
            path = str(item.get("path") or "")
            if path and not os.path.isabs(path):
                path = os.path.join(request.workspace, path)
            current: str | None = None
            in_buffer = False
            if os.path.isabs(path):
                buffer = await self._buffer_text(Path(path))
                if buffer is not None:
                    in_buffer = True
                    current = buffer if len(buffer) <= MAX_REVIEW_BYTES else None
            if not in_buffer:
                current = await anyio.to_thread.run_sync(read_for_review, path)
            changes.append(proposed_change({**item, "path": path}, current))
        return changes


def permission_view(request: PermissionRequest, queue: QueueView,
                    changes: Sequence[FileChange] = ()) -> dict[str, Any]:
    """What the permission float shows (Lua sanitizes every string it puts in a buffer):
    `changes` are the request's files, whole before and after (`review_changes`)."""
    return {
        "id": request.request_id,
        "agent": request.agent,
        "session": request.session_id,
        "title": request.title,
        "kind": request.kind or "other",
        "paths": list(request.paths),
        "command": request.command,
        "options": [{"id": o.get("optionId"), "name": o.get("name"), "kind": o.get("kind")}
                    for o in request.options],
        "position": queue.position,
        "total": queue.total,
        "waited": waited_text(request.waited_seconds),
        "diff": diff_lines([change.to_diff_item() for change in changes], request.workspace),
        "diffs": [{"path": c.path, "old": c.before, "new": c.after, "mode": c.mode,
                   "whole": c.whole_file, "note": c.note} for c in changes],
    }
