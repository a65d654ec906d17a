"""fs/* and terminal/* requests of one Agent, routed by `sessionId` to that session's file
access and terminals; with an editor, loaded buffers are read and written instead of the
disk."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import anyio

from louise.acp.errors import RpcError
from louise.client_fs import FileAccess, optional_count, slice_lines
from louise.client_terminal import TerminalHost
from louise.registry.records import LiveSession, SessionTable


class BufferEditor(Protocol):
    """An editor's view of files: what is loaded in it wins over the disk (unsaved edits
    included). Both methods get a path already checked against the session's roots."""

    async def read_buffer(self, path: Path) -> str | None:
        """The loaded buffer's text, or None when the file is not loaded."""
        ...

    async def write_buffer(self, path: Path, content: str, session_id: str) -> bool:
        """Write through the loaded buffer; False when it is not loaded (the disk is used).
        Raises RpcError when the person refuses (e.g. the buffer has unsaved edits)."""
        ...


class FsRouter:
    """fs/* for one Agent."""

    def __init__(self, table: SessionTable, agent: str, editor: BufferEditor | None) -> None:
        self._table = table
        self._agent = agent
        self._editor = editor

    def _access(self, params: Mapping[str, Any]) -> tuple[LiveSession, FileAccess]:
        live = self._table.for_request(self._agent, params)
        if live.file_access is None:
            raise RpcError.method_not_found("fs")
        return live, live.file_access

    async def read_text_file(self, params: Mapping[str, Any]) -> Any:
        _live, access = self._access(params)
        if self._editor is not None:
            path = await anyio.to_thread.run_sync(access.check_path, params.get("path"))
            text = await self._editor.read_buffer(path)
            if text is not None:
                line = optional_count(params, "line", minimum=1)
                limit = optional_count(params, "limit", minimum=0)
                return {"content": slice_lines(text, line, limit)}
        return await access.read_text_file(params)

    async def write_text_file(self, params: Mapping[str, Any]) -> Any:
        live, access = self._access(params)
        content = params.get("content")
        if self._editor is not None and isinstance(content, str):
            path = await anyio.to_thread.run_sync(access.check_path, params.get("path"))
            if await self._editor.write_buffer(path, content, live.session_id):
                return {}
        return await access.write_text_file(params)


class TerminalRouter:
    """terminal/* for one Agent."""

    def __init__(self, table: SessionTable, agent: str) -> None:
        self._table = table
        self._agent = agent

    def _host(self, params: Mapping[str, Any]) -> TerminalHost:
        live = self._table.for_request(self._agent, params)
        if live.terminals is None:
            raise RpcError.method_not_found("terminal")
        return live.terminals

    async def create(self, params: Mapping[str, Any]) -> Any:
        return await self._host(params).create(params)

    async def output(self, params: Mapping[str, Any]) -> Any:
        return await self._host(params).output(params)

    async def wait_for_exit(self, params: Mapping[str, Any]) -> Any:
        return await self._host(params).wait_for_exit(params)

    async def kill(self, params: Mapping[str, Any]) -> Any:
        return await self._host(params).kill(params)

    async def release(self, params: Mapping[str, Any]) -> Any:
        return await self._host(params).release(params)
