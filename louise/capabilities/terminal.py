"""The client's terminal capability without an editor (`terminal/*` on anyio subprocesses).

One `TerminalHost` serves one session. `create` starts `command` + `args` directly (no
shell) in its own process group, with stdout and stderr merged into one output buffer,
and returns at once; the process is watched by a task in the host's task group. Retained
output is capped at `outputByteLimit` bytes, truncated from the start on a UTF-8
character boundary (`truncated` then stays true); `terminal/output` sends at most
MAX_OUTPUT_JSON_BYTES of it as JSON encodes them (`truncated` too). `kill`
ends the whole process group and keeps the terminal readable; `release` kills if needed
and forgets the id; `release_all` (also run when the host's context exits) does that for
every terminal.

Run it either as `async with TerminalHost(cwd) as host:` (it owns a task group) or with
`TerminalHost(cwd, task_group=tg)` inside a task group the caller owns (then call
`release_all()` before that group ends).

UIs mirror terminals with `subscribe(listener, terminal_id=None)`: the listener is a plain
function called in order, on the event loop, with the events of terminal_events.py. It
must not block; exceptions it raises are logged and ignored.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import Process, TaskGroup

from louise.acp.errors import INVALID_REQUEST, RpcError
from louise.acp.json_size import json_tail
from louise.capabilities.terminal_events import (
    ExitStatus,
    TerminalCreated,
    TerminalEvent,
    TerminalExited,
    TerminalListener,
    TerminalOutput,
)

__all__ = [
    "DEFAULT_OUTPUT_BYTE_LIMIT",
    "MAX_OUTPUT_BYTE_LIMIT",
    "MAX_OUTPUT_JSON_BYTES",
    "TerminalHost",
]

log = logging.getLogger(__name__)

DEFAULT_OUTPUT_BYTE_LIMIT = 1024 * 1024
MAX_OUTPUT_BYTE_LIMIT = 16 * 1024 * 1024
# The most output one `terminal/output` reply carries, as JSON encodes it: a control
# character takes up to 6 bytes there (16 MiB of NULs would be a 96 MiB line), and louise
# itself reads no line over PeerLimits.max_line_bytes (32 MiB).
MAX_OUTPUT_JSON_BYTES = MAX_OUTPUT_BYTE_LIMIT


def _complete_prefix_len(data: bytes | bytearray) -> int:
    """Length of `data` without a trailing UTF-8 sequence that is still incomplete."""
    size = len(data)
    for back in range(1, min(4, size) + 1):
        byte = data[size - back]
        if byte & 0xC0 == 0x80:  # continuation byte: keep looking for its lead
            continue
        if byte < 0xC0:
            return size
        needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4 if byte < 0xF8 else 1
        return size if back >= needed else size - back
    return size


class _Terminal:
    def __init__(self, terminal_id: str, process: Process, byte_limit: int) -> None:
        self.id = terminal_id
        self.process = process
        self.byte_limit = byte_limit
        self.buffer = bytearray()
        self.truncated = False
        self.eof = False
        self.eof_event = anyio.Event()
        self.exit_status: ExitStatus | None = None
        self.exited = anyio.Event()
        self.done = anyio.Event()
        self.scope = anyio.CancelScope()
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.listeners: list[TerminalListener] = []

    def append(self, chunk: bytes) -> None:
        self.buffer += chunk
        excess = len(self.buffer) - self.byte_limit
        if excess <= 0:
            return
        self.truncated = True
        # Drop whole characters only: skip the continuation bytes (at most 3) that would
        # otherwise start the retained output, so it stays within the limit and valid.
        skip = 0
        while (
            skip < 3
            and excess + skip < len(self.buffer)
            and self.buffer[excess + skip] & 0xC0 == 0x80
        ):
            skip += 1
        del self.buffer[: excess + skip]

    def text(self) -> str:
        if self.eof:
            return self.buffer.decode("utf-8", errors="replace")
        # While running, a character may be half-written: leave it for the next read.
        return bytes(self.buffer[: _complete_prefix_len(self.buffer)]).decode(
            "utf-8", errors="replace"
        )

    @property
    def group_may_be_alive(self) -> bool:
        # The leader still runs, or something (a child in its group) still holds the pipe.
        return self.process.returncode is None or not self.eof


class TerminalHost:
    """`terminal/*` for one session; see the module docstring for the lifecycle."""

    def __init__(
        self,
        cwd: str | os.PathLike[str],
        *,
        output_byte_limit: int = DEFAULT_OUTPUT_BYTE_LIMIT,
        max_output_byte_limit: int = MAX_OUTPUT_BYTE_LIMIT,
        max_terminals: int = 64,
        max_output_json_bytes: int = MAX_OUTPUT_JSON_BYTES,
        eof_grace: float = 2.0,
        kill_wait: float = 5.0,
        task_group: TaskGroup | None = None,
    ) -> None:
        """`cwd` is the session cwd (the default for commands). `output_byte_limit` applies
        when a request gives none; any limit is clamped to `max_output_byte_limit` so
        memory stays bounded whatever the agent asks. `eof_grace` is how long to wait,
        after the command exits, for its output to end (a background child may keep it
        open). `kill` waits up to `kill_wait` for the exit so the next `output` shows it.
        """
        path = Path(cwd)
        if not path.is_absolute():
            raise ValueError(f"terminal cwd must be an absolute path, got {str(cwd)!r}")
        if output_byte_limit < 0 or max_output_byte_limit < 0:
            raise ValueError("output byte limits must be >= 0")
        self._cwd = str(path)
        self._default_limit = min(output_byte_limit, max_output_byte_limit)
        self._max_limit = max_output_byte_limit
        self._max_terminals = max_terminals
        self._max_json = max_output_json_bytes
        self._eof_grace = eof_grace
        self._kill_wait = kill_wait
        self._task_group = task_group
        self._owned_group: TaskGroup | None = None
        self._terminals: dict[str, _Terminal] = {}
        self._listeners: list[TerminalListener] = []
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._task_group is None:
            group = anyio.create_task_group()
            await group.__aenter__()
            self._owned_group = self._task_group = group
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            with anyio.CancelScope(shield=True):
                await self.release_all()
        finally:
            self._closed = True
            group, self._owned_group = self._owned_group, None
            if group is not None:
                self._task_group = None
                await group.__aexit__(exc_type, exc, tb)
        return None

    @property
    def terminal_ids(self) -> tuple[str, ...]:
        return tuple(self._terminals)

    # -- terminal/create ---------------------------------------------------------------

    async def create(self, params: Mapping[str, Any]) -> dict[str, Any]:
        group = self._task_group
        if group is None or self._closed:
            raise RuntimeError("TerminalHost is not running (use `async with` or task_group=)")
        command, args, env, cwd, limit = self._parse_create(params)
        if not await anyio.Path(cwd).is_dir():
            raise RpcError.invalid_params(f"cwd {cwd} is not an existing directory")
        if len(self._terminals) >= self._max_terminals:
            raise RpcError(
                INVALID_REQUEST,
                f"too many terminals in this session ({self._max_terminals}); "
                "release finished ones with terminal/release",
            )
        merged_env = dict(os.environ)
        merged_env.update(env)
        try:
            process = await anyio.open_process(
                [command, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=merged_env,
                # Its own process group, so kill reaches the children it starts.
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise RpcError.invalid_params(
                f"command not found: {command!r} (terminal commands run without a shell: "
                "send the program in `command` and its arguments in `args`, "
                'e.g. command "sh", args ["-c", "…"])'
            ) from exc
        except (OSError, ValueError) as exc:
            raise RpcError.invalid_params(f"cannot run {command!r}: {exc}") from exc
        terminal_id = f"term_{os.urandom(8).hex()}"  # secrets.token_hex(8), without hashlib
        terminal = _Terminal(terminal_id, process, limit)
        self._terminals[terminal_id] = terminal
        self._emit(terminal, TerminalCreated(terminal_id, command, tuple(args), cwd))
        group.start_soon(self._run, terminal, name=f"terminal {terminal_id}")
        return {"terminalId": terminal_id}

    def _parse_create(
        self, params: Mapping[str, Any]
    ) -> tuple[str, list[str], dict[str, str], str, int]:
        command = params.get("command")
        if not isinstance(command, str) or not command:
            raise RpcError.invalid_params("command must be a non-empty string")
        raw_args = params.get("args")
        if raw_args is None:
            raw_args = []
        if not isinstance(raw_args, list) or not all(isinstance(a, str) for a in raw_args):
            raise RpcError.invalid_params("args must be a list of strings")
        env: dict[str, str] = {}
        raw_env = params.get("env")
        if raw_env is not None:
            if not isinstance(raw_env, list):
                raise RpcError.invalid_params("env must be a list of {name, value} objects")
            for item in raw_env:
                name = item.get("name") if isinstance(item, Mapping) else None
                value = item.get("value") if isinstance(item, Mapping) else None
                if not isinstance(name, str) or not name or "=" in name:
                    raise RpcError.invalid_params(f"env entry has an invalid name: {item!r}")
                if not isinstance(value, str):
                    raise RpcError.invalid_params(f"env entry {name!r} needs a string value")
                env[name] = value
        cwd = params.get("cwd")
        if cwd is None:
            cwd = self._cwd
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError.invalid_params(f"cwd must be an absolute path, got {cwd!r}")
        limit = params.get("outputByteLimit")
        if limit is None:
            limit = self._default_limit
        elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise RpcError.invalid_params("outputByteLimit must be an integer >= 0 or null")
        return command, list(raw_args), env, cwd, min(limit, self._max_limit)

    # -- the task that owns each process -----------------------------------------------

    async def _run(self, terminal: _Terminal) -> None:
        try:
            with terminal.scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._pump, terminal)
                    await terminal.process.wait()
                    # Exit is reported once the output has ended, so `output` after
                    # `wait_for_exit` has everything; a background child holding the pipe
                    # only delays it by the grace period (the pump keeps reading after).
                    with anyio.move_on_after(self._eof_grace):
                        await terminal.eof_event.wait()
                    self._finish(terminal)
        finally:
            with anyio.CancelScope(shield=True):
                if terminal.group_may_be_alive:
                    self._signal_group(terminal)
                with contextlib.suppress(Exception):
                    await terminal.process.aclose()
                self._finish(terminal)
                terminal.done.set()

    async def _pump(self, terminal: _Terminal) -> None:
        stream = terminal.process.stdout
        assert stream is not None  # opened with stdout=PIPE
        try:
            async for chunk in stream:
                terminal.append(chunk)
                text = terminal.decoder.decode(chunk)
                self._emit(terminal, TerminalOutput(terminal.id, chunk, text))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            terminal.eof = True
            terminal.eof_event.set()
            tail = terminal.decoder.decode(b"", final=True)
            if tail:
                self._emit(terminal, TerminalOutput(terminal.id, b"", tail))

    def _finish(self, terminal: _Terminal) -> None:
        if terminal.exit_status is not None:
            return
        returncode = terminal.process.returncode
        if returncode is None:
            return
        terminal.exit_status = ExitStatus.from_returncode(returncode)
        terminal.exited.set()
        self._emit(terminal, TerminalExited(terminal.id, terminal.exit_status))

    @staticmethod
    def _signal_group(terminal: _Terminal) -> None:
        # The group id is the leader's pid (start_new_session); it stays reserved while any
        # member lives, and we only signal while the leader runs or the pipe is held.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(terminal.process.pid, signal.SIGKILL)

    # -- terminal/output, wait_for_exit, kill, release ---------------------------------

    def _lookup(self, params: Mapping[str, Any]) -> _Terminal:
        terminal_id = params.get("terminalId")
        terminal = self._terminals.get(terminal_id) if isinstance(terminal_id, str) else None
        if terminal is None:
            raise RpcError.invalid_params(
                f"unknown terminal {terminal_id!r} (not created in this session, "
                "or already released)"
            )
        return terminal

    async def output(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The output retained (`outputByteLimit` bytes), cut from its start further if
        the reply would carry more than MAX_OUTPUT_JSON_BYTES of it."""
        terminal = self._lookup(params)
        text, cut = json_tail(terminal.text(), self._max_json)
        result: dict[str, Any] = {"output": text, "truncated": terminal.truncated or cut}
        if terminal.exit_status is not None:
            result["exitStatus"] = terminal.exit_status.to_wire()
        return result

    async def wait_for_exit(self, params: Mapping[str, Any]) -> dict[str, Any]:
        terminal = self._lookup(params)
        await terminal.exited.wait()
        assert terminal.exit_status is not None
        return terminal.exit_status.to_wire()

    async def kill(self, params: Mapping[str, Any]) -> dict[str, Any]:
        terminal = self._lookup(params)
        if terminal.group_may_be_alive:
            self._signal_group(terminal)
            with anyio.move_on_after(self._kill_wait):
                await terminal.exited.wait()
        return {}

    async def release(self, params: Mapping[str, Any]) -> dict[str, Any]:
        terminal = self._lookup(params)
        del self._terminals[terminal.id]
        await self._dispose([terminal])
        return {}

    async def release_all(self) -> None:
        """Kill and forget every terminal (at session end); returns once all are reaped."""
        terminals = list(self._terminals.values())
        self._terminals.clear()
        await self._dispose(terminals)

    async def _dispose(self, terminals: list[_Terminal]) -> None:
        for terminal in terminals:
            if terminal.group_may_be_alive:
                self._signal_group(terminal)
            terminal.scope.cancel()
        for terminal in terminals:
            await terminal.done.wait()
            terminal.listeners.clear()

    # -- subscriptions -----------------------------------------------------------------

    def subscribe(
        self,
        listener: TerminalListener,
        terminal_id: str | None = None,
        *,
        replay: bool = True,
    ) -> Callable[[], None]:
        """Call `listener` with the events of one terminal, or of all (`terminal_id=None`,
        including `TerminalCreated` for later ones). With `replay`, existing terminals'
        retained output and exit (if any) are delivered first, synchronously, so nothing
        is missed or doubled. Returns a function that unsubscribes. Unknown id → KeyError.
        """
        if terminal_id is None:
            targets = list(self._terminals.values())
            registry = self._listeners
        else:
            if terminal_id not in self._terminals:
                raise KeyError(terminal_id)
            targets = [self._terminals[terminal_id]]
            registry = self._terminals[terminal_id].listeners
        if replay:
            for terminal in targets:
                if terminal.buffer:
                    data = bytes(terminal.buffer)
                    _deliver(listener, TerminalOutput(terminal.id, data, terminal.text(), True))
                if terminal.exit_status is not None:
                    _deliver(listener, TerminalExited(terminal.id, terminal.exit_status))
        registry.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                registry.remove(listener)

        return unsubscribe

    def _emit(self, terminal: _Terminal, event: TerminalEvent) -> None:
        for listener in (*self._listeners, *terminal.listeners):
            _deliver(listener, event)


def _deliver(listener: TerminalListener, event: TerminalEvent) -> None:
    try:
        listener(event)
    except Exception:
        log.exception("terminal listener failed on %s", type(event).__name__)
