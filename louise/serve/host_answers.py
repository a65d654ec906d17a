"""The agent's `fs/*` and `terminal/*` requests answered by the host itself, per session:
files within the session's working directory (and the configured extra roots), terminals
there; what the configuration turns off is refused."""

from __future__ import annotations

import logging
from typing import Any

import anyio.abc

from louise.acp.errors import RpcError
from louise.capabilities.fs import FileAccess
from louise.capabilities.terminal import TerminalHost
from louise.config.sections import FsConfig, TerminalConfig

log = logging.getLogger("louise.serve")
MAX_SESSIONS = 256


class HostAnswers:
    def __init__(self, group: anyio.abc.TaskGroup, fs: FsConfig,
                 terminal: TerminalConfig) -> None:
        self._group = group
        self._fs = fs
        self._terminal = terminal
        self._files: dict[str, FileAccess] = {}
        self._terminals: dict[str, TerminalHost] = {}

    async def answer(self, message: dict[str, Any], cwd: str | None) -> dict[str, Any]:
        """The response to one agent request (a result or an error, never raises)."""
        request_id = message.get("id")
        try:
            result = await self._dispatch(message, cwd)
        except RpcError as error:
            return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}
        except Exception as exc:  # a capability must not bring the host down
            log.warning("answering %s: %s: %.200s", message.get("method"),
                        type(exc).__name__, exc)
            return {"jsonrpc": "2.0", "id": request_id,
                    "error": {"code": -32603, "message": "the host could not do that"}}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _dispatch(self, message: dict[str, Any], cwd: str | None) -> dict[str, Any]:
        method = message.get("method")
        params = message.get("params")
        if not isinstance(params, dict):
            raise RpcError.invalid_params("params must be an object")
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or cwd is None:
            raise RpcError.invalid_params("no session of this host has that sessionId")
        if method == "fs/read_text_file" and self._fs.read:
            return await self._file_access(session_id, cwd).read_text_file(params)
        if method == "fs/write_text_file" and self._fs.write:
            return await self._file_access(session_id, cwd).write_text_file(params)
        if isinstance(method, str) and method.startswith("terminal/") and self._terminal.enabled:
            terminals = self._terminal_host(session_id, cwd)
            verbs = {"terminal/create": terminals.create, "terminal/output": terminals.output,
                     "terminal/wait_for_exit": terminals.wait_for_exit,
                     "terminal/kill": terminals.kill, "terminal/release": terminals.release}
            verb = verbs.get(method)
            if verb is not None:
                return await verb(params)
        raise RpcError.method_not_found(str(method))

    def _file_access(self, session_id: str, cwd: str) -> FileAccess:
        access = self._files.get(session_id)
        if access is None:
            if len(self._files) >= MAX_SESSIONS:
                self._files.pop(next(iter(self._files)))
            access = FileAccess([cwd, *self._fs.roots])
            self._files[session_id] = access
        return access

    def _terminal_host(self, session_id: str, cwd: str) -> TerminalHost:
        terminals = self._terminals.get(session_id)
        if terminals is None:
            terminals = TerminalHost(cwd, output_byte_limit=self._terminal.output_byte_limit,
                                     task_group=self._group)
            self._terminals[session_id] = terminals
        return terminals

    async def close(self) -> None:
        for terminals in self._terminals.values():
            await terminals.release_all()
        self._terminals.clear()
