"""Buffer-correct file access for agents: a file loaded in Neovim is read from its
buffer (unsaved edits included) and written through it (one undo step). Unsaved edits
are never overwritten silently: the person chooses.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from louise.acp.errors import RpcError

if TYPE_CHECKING:
    from louise.nvim.engine import Engine

REFUSED = -32001  # a person's refusal, distinct from protocol errors


class NvimEditor:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def read_buffer(self, path: Path) -> str | None:
        text: Any = await self.engine.bridge.exec_lua(
            "return require('louise.fs').read(...)", str(path))
        return text if isinstance(text, str) else None

    async def write_buffer(self, path: Path, content: str, session_id: str) -> bool:
        state = await self.engine.bridge.exec_lua(
            "return require('louise.fs').state(...)", str(path))
        if state not in ("clean", "modified"):
            return False
        save = True
        if state == "modified":
            choice = await self.engine.ask_conflict(path, session_id)
            if choice not in ("buffer", "overwrite"):
                raise RpcError(REFUSED, f"the person kept their unsaved edits in {path}; "
                                        "the file was not changed")
            save = choice == "overwrite"
        written = await self.engine.bridge.exec_lua(
            "return require('louise.fs').write(...)", str(path), content, save)
        return bool(written)
