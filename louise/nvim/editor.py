"""Buffer-correct file access for agents: a file loaded in Neovim is read from its
buffer (unsaved edits included) and written through it (one undo step). Unsaved edits,
and a file that changed on disk since its buffer read it, are never overwritten silently:
the person chooses. Line endings follow one rule with the disk (see lua/louise/fs.lua).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from louise.acp.errors import RpcError
from louise.nvim.bridge import LuaCaller
from louise.nvim.fs_conflicts import FsConflicts
from louise.registry.routing import BufferText

REFUSED = -32001  # a person's refusal, distinct from protocol errors
# fs.lua's states that stand in the way of a write, and how a refusal explains them.
CONFLICTS = {
    "modified": "they kept their unsaved edits in",
    "changed": "the file changed on disk since it was read into Neovim:",
    "modified_changed": "they kept their unsaved edits, and the file changed on disk:",
}
# The states in which an agent reading the buffer gets other text than the file's.
STALE = ("changed", "modified_changed")


class NvimEditor:
    """The registry's `BufferEditor` in Neovim: Lua's `louise.fs` through `nvim`."""

    def __init__(self, nvim: LuaCaller, conflicts: FsConflicts) -> None:
        self._nvim = nvim
        self._conflicts = conflicts

    async def read_buffer(self, path: Path) -> BufferText | None:
        """The buffer's text for an agent, and whether the file changed on disk since the
        buffer read it (under unsaved edits, the person is asked about that: see fs.lua)."""
        found: Any = await self._nvim.exec_lua(
            "return require('louise.fs').read_for_agent(...)", str(path))
        if not isinstance(found, dict) or not isinstance(found.get("text"), str):
            return None
        state = found.get("state")
        return BufferText(found["text"], state if state in STALE else None)

    async def buffer_text(self, path: Path) -> str | None:
        """The buffer's text as the person sees it, touching nothing (for previews)."""
        text: Any = await self._nvim.exec_lua(
            "return require('louise.fs').read(...)", str(path))
        return text if isinstance(text, str) else None

    async def write_buffer(self, path: Path, content: str, session_id: str) -> bool:
        state = await self._nvim.exec_lua(
            "return require('louise.fs').state(...)", str(path))
        if state not in ("clean", *CONFLICTS):
            return False
        save = True
        if state in CONFLICTS:
            # Unsaved edits, or a file changed on disk since the buffer read it: the person
            # resolves it (never Vim's own question, which would block Neovim here).
            choice = await self._conflicts.ask(path, session_id, state)
            if choice not in ("buffer", "overwrite"):
                raise RpcError(REFUSED, f"the person refused the write: {CONFLICTS[state]} "
                                        f"{path}; the file was not changed")
            save = choice == "overwrite"
        written = await self._nvim.exec_lua(
            "return require('louise.fs').write(...)", str(path), content, save)
        return bool(written)
