"""fs/* and terminal/* requests of one Agent, routed by `sessionId` to that session's file
access and terminals; with an editor, loaded buffers are read and written instead of the
disk. A write or a command nobody approved this turn goes through the gate first
(`gate.py`). While louise answers one of these requests the agent is not silent (the
prompt watchdog waits)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio

from louise.acp.errors import RESOURCE_NOT_FOUND, RpcError
from louise.capabilities.fs import FileAccess, optional_count, slice_lines
from louise.capabilities.terminal import TerminalHost
from louise.registry.agent_quirks import reads_missing_file_as_empty
from louise.registry.gate import UnaskedGate
from louise.registry.records import LiveSession, SessionTable


@asynccontextmanager
async def answering(live: LiveSession) -> AsyncIterator[None]:
    """While louise answers an agent's request, the agent is waiting on louise."""
    live.touch()
    live.busy += 1
    try:
        yield
    finally:
        live.busy -= 1
        live.touch()


@dataclass(frozen=True, slots=True)
class BufferText:
    """A loaded buffer's text, and whether it differs from the file on disk: `stale` is
    None, "changed" (the file changed on disk since the buffer read it) or
    "modified_changed" (that, and the buffer has unsaved edits)."""

    text: str
    stale: str | None = None


STALE_NOTES = {
    "changed": "the file changed on disk since its buffer read it",
    "modified_changed": "the buffer has unsaved edits and the file changed on disk since "
                        "the buffer read it",
}


class BufferEditor(Protocol):
    """An editor's view of files: what is loaded in it wins over the disk (unsaved edits
    included). Both methods get a path already checked against the session's roots."""

    async def read_buffer(self, path: Path) -> BufferText | None:
        """The loaded buffer's text, or None when the file is not loaded."""
        ...

    async def write_buffer(self, path: Path, content: str, session_id: str) -> bool:
        """Write through the loaded buffer; False when it is not loaded (the disk is used).
        Raises RpcError when the person refuses (e.g. the buffer has unsaved edits)."""
        ...


class FsRouter:
    """fs/* for one Agent."""

    def __init__(self, table: SessionTable, agent: str, editor: BufferEditor | None,
                 gate: UnaskedGate | None = None) -> None:
        self._table = table
        self._agent = agent
        self._editor = editor
        self._gate = gate

    def _access(self, params: Mapping[str, Any]) -> tuple[LiveSession, FileAccess]:
        live = self._table.for_request(self._agent, params)
        if live.file_access is None:
            raise RpcError.method_not_found("fs")
        return live, live.file_access

    async def read_text_file(self, params: Mapping[str, Any]) -> Any:
        live, access = self._access(params)
        async with answering(live):
            if self._editor is not None:
                path = await anyio.to_thread.run_sync(access.check_path, params.get("path"))
                buffer = await self._editor.read_buffer(path)
                if buffer is not None:
                    if buffer.stale is not None:
                        # What the person sees is what the agent gets; the log says so.
                        self._table.runtime(self._agent).note(
                            f"fs/read_text_file {path}: answered from the buffer, not the "
                            f"disk: {STALE_NOTES.get(buffer.stale, buffer.stale)}")
                    line = optional_count(params, "line", minimum=1)
                    limit = optional_count(params, "limit", minimum=0)
                    return {"content": slice_lines(buffer.text, line, limit)}
            try:
                return await access.read_text_file(params)
            except RpcError as error:
                if error.code != RESOURCE_NOT_FOUND or not self._missing_file_as_empty():
                    raise
                return {"content": ""}

    def _missing_file_as_empty(self) -> bool:
        initialized = self._table.runtime(self._agent).initialized
        return reads_missing_file_as_empty(
            initialized.agent_info if initialized is not None else None)

    async def write_text_file(self, params: Mapping[str, Any]) -> Any:
        live, access = self._access(params)
        async with answering(live):
            watch = live.turn_watch
            if watch is not None:  # the state before the turn is recorded first
                await watch.ready()
            content = params.get("content")
            raw_path = params.get("path")
            gate = self._gate if self._gate is not None and self._gate.enabled else None
            path: Path | None = None
            if gate is not None or (self._editor is not None and isinstance(content, str)):
                path = await anyio.to_thread.run_sync(access.check_path, raw_path)
            if gate is not None:
                if not isinstance(content, str) or not isinstance(raw_path, str):
                    raise RpcError.invalid_params("path and content must be strings")
                assert path is not None
                resolved = path

                async def old_text() -> str | None:
                    return await self._current_text(access, resolved)

                await gate.write(live, raw_path, resolved, content, old_text)
            if watch is not None and isinstance(content, str):
                if path is None:
                    path = await anyio.to_thread.run_sync(access.check_path, raw_path)
                await watch.before_write(path)
            if self._editor is not None and isinstance(content, str) and path is not None:
                if await self._editor.write_buffer(path, content, live.session_id):
                    return {}
            # Where the gate let it write, or nowhere (a link swapped meanwhile).
            return await access.write_text_file(params, expected=path if gate else None)

    async def _current_text(self, access: FileAccess, path: Path) -> str | None:
        """The file's text as the agent would read it now (None: new, or unreadable)."""
        if self._editor is not None:
            buffer = await self._editor.read_buffer(path)
            if buffer is not None:
                return buffer.text
        try:
            result = await access.read_text_file({"path": str(path)})
        except RpcError:
            return None
        content = result.get("content")
        return content if isinstance(content, str) else None


class TerminalRouter:
    """terminal/* for one Agent."""

    def __init__(self, table: SessionTable, agent: str,
                 gate: UnaskedGate | None = None) -> None:
        self._table = table
        self._agent = agent
        self._gate = gate

    def _host(self, params: Mapping[str, Any]) -> tuple[LiveSession, TerminalHost]:
        live = self._table.for_request(self._agent, params)
        if live.terminals is None:
            raise RpcError.method_not_found("terminal")
        return live, live.terminals

    async def create(self, params: Mapping[str, Any]) -> Any:
        live, host = self._host(params)
        async with answering(live):
            if live.turn_watch is not None:  # the state before the turn is recorded first
                await live.turn_watch.ready()
            if self._gate is not None:
                await self._gate.terminal(live, params)
            return await host.create(params)

    async def output(self, params: Mapping[str, Any]) -> Any:
        live, host = self._host(params)
        async with answering(live):
            return await host.output(params)

    async def wait_for_exit(self, params: Mapping[str, Any]) -> Any:
        live, host = self._host(params)
        async with answering(live):
            return await host.wait_for_exit(params)

    async def kill(self, params: Mapping[str, Any]) -> Any:
        live, host = self._host(params)
        async with answering(live):
            return await host.kill(params)

    async def release(self, params: Mapping[str, Any]) -> Any:
        live, host = self._host(params)
        async with answering(live):
            return await host.release(params)
