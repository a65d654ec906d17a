"""Permission prompts in Neovim: the decider the registry asks (Python shows the request,
Lua answers with a notification) and what the permission float shows. Pure: no pynvim
here.

Split out of `engine.py` (module size rule); `engine` re-exports these names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from louise.capabilities.file_changes import FileChange
from louise.nvim.tool_text import diff_lines
from louise.permissions.broker import PermissionRequest, QueueView

if TYPE_CHECKING:
    from louise.nvim.engine import Engine


@dataclass
class PendingPermission:
    request: PermissionRequest
    answered: anyio.Event = field(default_factory=anyio.Event)
    option_id: str | None = None


class NvimDecider:
    """Asks the person in Neovim: Python notifies, Lua answers with a notification."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.pending: dict[int, PendingPermission] = {}

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        pending = PendingPermission(request)
        self.pending[request.request_id] = pending
        try:
            changes = await self.engine.review_changes(request)
            self.engine.show_permission(request, queue, changes)
            await pending.answered.wait()
            return pending.option_id
        finally:
            self.pending.pop(request.request_id, None)
            self.engine.close_permission(request.request_id)

    def answer(self, request_id: int, option_id: str | None) -> None:
        pending = self.pending.get(request_id)
        if pending is not None:
            pending.option_id = option_id
            pending.answered.set()


def permission_view(request: PermissionRequest, queue: QueueView,
                    changes: Sequence[FileChange] = ()) -> dict[str, Any]:
    """What the permission float shows (Lua sanitizes every string it puts in a buffer):
    `changes` are the request's files, whole before and after (`Engine.review_changes`)."""
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
        "diff": diff_lines([change.to_diff_item() for change in changes], request.workspace),
        "diffs": [{"path": c.path, "old": c.before, "new": c.after, "mode": c.mode,
                   "whole": c.whole_file, "note": c.note} for c in changes],
    }
