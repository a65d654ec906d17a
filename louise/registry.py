"""The session registry: configured Agents → agent processes → live sessions.

One ACP connection per configured Agent, started on first use and shared by that Agent's
sessions. Each session's state lives in a `louise.session.Session`; every change reaches
subscribers as a typed event, in order. Permission requests go through one
`PermissionBroker`. Account limits are observed per Agent (see `louise.limits` and the
contract in docs/account-limits-v1.md) and written to the cross-process cache.

Runs on one anyio event loop: `async with SessionRegistry(config) as registry: ...`.
Nothing here imports pynvim; an editor plugs in through `EditorPort` and a
`PermissionDecider`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Protocol, Self

import anyio
from anyio.abc import TaskGroup

from louise import limits as lim
from louise import paths
from louise.acp.connection import AgentConnection, ClientHandlers, InitializeResult, SessionSetup
from louise.acp.errors import AcpError, ConnectionClosed, RpcError
from louise.acp.process import AgentCommand
from louise.acp.schema import ParsedUpdate
from louise.broker import PermissionBroker, PermissionDecider, PermissionRequest, extract_request
from louise.client_fs import FileAccess, optional_count, slice_lines
from louise.client_terminal import TerminalHost
from louise.config import Config
from louise.limits_cache import LimitsCache
from louise.permissions import PermissionMemory, agent_key, canonical_workspace
from louise.session import Event, Session, SessionBounds, StatusChanged

log = logging.getLogger("louise.registry")

LOUISE_CLIENT_META = {lim.NAMESPACE: {"accountLimits": True}}
MAX_EARLY_SESSIONS = 16  # session ids we buffer updates for before their reply arrives
MAX_EARLY_UPDATES = 2_000  # per such session
MAX_QUEUED_PROMPTS = 16
TRANSCRIPT_MAX_BYTES = 64 * 1024 * 1024


class RegistryError(AcpError):
    """A request to the registry that cannot be done (unknown session, queue full, …)."""


# ----------------------------------------------------------------------------- events


@dataclass(slots=True)
class SessionAdded(Event):
    agent: str
    cwd: str


@dataclass(slots=True)
class SessionRemoved(Event):
    agent: str


@dataclass(frozen=True, slots=True)
class LimitsChanged:
    agent: str
    state: lim.LimitsState


@dataclass(frozen=True, slots=True)
class PermissionQueueChanged:
    pending: tuple[PermissionRequest, ...]


@dataclass(frozen=True, slots=True)
class AgentStatus:
    """A line about an Agent's process: started, exited (with reason), auth required."""

    agent: str
    state: Literal["starting", "running", "exited", "failed"]
    message: str = ""


RegistryEvent = Event | LimitsChanged | PermissionQueueChanged | AgentStatus
Listener = Callable[[RegistryEvent], None]


# ----------------------------------------------------------------------------- records


@dataclass(eq=False)
class LiveSession:
    """A session the registry holds: its model and what runs on its behalf."""

    model: Session
    agent: str
    cwd: str
    file_access: FileAccess | None
    terminals: TerminalHost | None
    prompt_lock: anyio.Lock = field(default_factory=anyio.Lock)
    waiting_prompts: int = 0
    transcript: Path | None = None
    transcript_bytes: int = 0  # what this process appended (bounded by TRANSCRIPT_MAX_BYTES)

    @property
    def session_id(self) -> str:
        """The registry-wide key (`agent:acp_id`), as in events."""
        return self.model.session_id

    @property
    def acp_id(self) -> str:
        """The agent's own session id, used on the wire."""
        return self.model.acp_id


@dataclass(eq=False)
class AgentRuntime:
    """One configured Agent: its connection (if running) and its sessions."""

    name: str
    command: AgentCommand
    connection: AgentConnection | None = None
    initialized: InitializeResult | None = None
    capability: lim.Capability | None = None
    start_lock: anyio.Lock = field(default_factory=anyio.Lock)
    sessions: list[LiveSession] = field(default_factory=list)  # creation order
    early: dict[str, deque[ParsedUpdate]] = field(default_factory=dict)
    observed: bool = False  # an initialized session was seen (limits: unsupported vs not)
    refreshing: anyio.Event | None = None  # set when the limits read in flight ends
    holder: bool = False
    generation: int = 0  # bumps each time the process is (re)started

    @property
    def connected(self) -> bool:
        return self.connection is not None and self.connection.is_open

    def live_sessions(self) -> list[LiveSession]:
        return [s for s in self.sessions if s.model.status not in ("error", "closed")]


# ----------------------------------------------------------------------------- routing


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


class _FsRouter:
    """fs/* for one Agent: routes by sessionId to that session's file access; with an
    editor, loaded buffers are read and written instead of the disk."""

    def __init__(self, registry: SessionRegistry, agent: str) -> None:
        self._registry = registry
        self._agent = agent

    def _access(self, params: Mapping[str, Any]) -> tuple[LiveSession, FileAccess]:
        live = self._registry._session_for(self._agent, params)
        if live.file_access is None:
            raise RpcError.method_not_found("fs")
        return live, live.file_access

    async def read_text_file(self, params: Mapping[str, Any]) -> Any:
        _live, access = self._access(params)
        editor = self._registry.editor
        if editor is not None:
            path = await anyio.to_thread.run_sync(access.check_path, params.get("path"))
            text = await editor.read_buffer(path)
            if text is not None:
                line = optional_count(params, "line", minimum=1)
                limit = optional_count(params, "limit", minimum=0)
                return {"content": slice_lines(text, line, limit)}
        return await access.read_text_file(params)

    async def write_text_file(self, params: Mapping[str, Any]) -> Any:
        live, access = self._access(params)
        editor = self._registry.editor
        content = params.get("content")
        if editor is not None and isinstance(content, str):
            path = await anyio.to_thread.run_sync(access.check_path, params.get("path"))
            if await editor.write_buffer(path, content, live.session_id):
                return {}
        return await access.write_text_file(params)


class _TerminalRouter:
    """terminal/* for one Agent: routes by sessionId to that session's TerminalHost."""

    def __init__(self, registry: SessionRegistry, agent: str) -> None:
        self._registry = registry
        self._agent = agent

    def _host(self, params: Mapping[str, Any]) -> TerminalHost:
        live = self._registry._session_for(self._agent, params)
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


# ----------------------------------------------------------------------------- registry


_DEFAULT: Any = object()


class SessionRegistry:
    """Configured Agents, their processes and sessions; see the module docstring."""

    def __init__(
        self,
        config: Config,
        *,
        decider: PermissionDecider | None = None,
        editor: BufferEditor | None = None,
        limits_cache: LimitsCache | None = _DEFAULT,
        permission_memory: PermissionMemory | None = _DEFAULT,
        transcripts_dir: Path | None = _DEFAULT,
        clock: Callable[[], float] = time.time,
        bounds: SessionBounds | None = None,
        grace_seconds: float = 2.0,
    ) -> None:
        self.config = config
        self.editor = editor
        self.clock = clock
        self.bounds = bounds
        self.grace_seconds = grace_seconds
        self.limits_cache = LimitsCache() if limits_cache is _DEFAULT else limits_cache
        memory = PermissionMemory() if permission_memory is _DEFAULT else permission_memory
        self.transcripts_dir = (paths.state_dir() / "transcripts"
                                if transcripts_dir is _DEFAULT else transcripts_dir)
        self.broker = PermissionBroker(
            decider, memory=memory, policy=config.permissions, roots_for=self._roots_for,
            on_change=self._permission_queue_changed)
        self._agents: dict[str, AgentRuntime] = {}
        for name, agent in config.agents.items():
            self._agents[name] = AgentRuntime(
                name, AgentCommand(agent.command, tuple(agent.args), dict(agent.env), agent.cwd))
        self._sessions: dict[str, LiveSession] = {}
        self._listeners: tuple[Listener, ...] = ()
        self._limits: dict[str, lim.LimitsState] = {}
        self._task_group: TaskGroup | None = None
        self._wake_reset_watch = anyio.Event()
        self._closed = False
        self._cache_pending: dict[str, lim.LimitsState] = {}
        self._holder_changes: deque[tuple[str, bool]] = deque()
        self._cache_wake = anyio.Event()
        self._transcript_lines: dict[Path, list[dict[str, Any] | _ChunkRecord]] = {}
        self._transcript_due = False
        self._transcript_wake = anyio.Event()

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._reset_watch)
        self._task_group.start_soon(self._cache_writer)
        self._task_group.start_soon(self._transcript_writer)
        if self.limits_cache is not None:
            cache = self.limits_cache
            view = await anyio.to_thread.run_sync(cache.load)
            for agent, state in view.states.items():
                if agent in self._agents and state is not None:
                    self._limits[agent] = state
            if view.file_status != "missing":  # a first run has no cache yet: not news
                for warning in view.warnings:
                    log.warning("%s", warning)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        await self.aclose()
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
        return await self._task_group.__aexit__(exc_type, exc, tb)

    async def aclose(self) -> None:
        """Close every session and agent process; flush the cache and transcripts."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            async def close_agent(runtime: AgentRuntime) -> None:
                for live in list(runtime.sessions):
                    self._emit_all(live.model.close())
                    if live.terminals is not None:
                        await live.terminals.__aexit__(None, None, None)
                self.broker.cancel_agent(runtime.name)
                if runtime.connection is not None:
                    await runtime.connection.aclose()

            # Concurrently: each agent may take its whole grace period to leave.
            async with anyio.create_task_group() as tg:
                for runtime in self._agents.values():
                    tg.start_soon(close_agent, runtime)
            await self._flush_transcripts()
            if self.limits_cache is not None:
                cache = self.limits_cache
                pending = dict(self._cache_pending)
                self._cache_pending.clear()

                def final() -> None:
                    for agent, state in pending.items():
                        cache.record_state(agent, state)
                    cache.release_process()

                try:
                    await anyio.to_thread.run_sync(final)
                except OSError as exc:
                    log.warning("could not update the limits cache: %s", exc)

    # ------------------------------------------------------------------ listeners

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Receive every registry event, in order, on the engine loop (must not block)."""
        self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            self._listeners = tuple(x for x in self._listeners if x is not listener)

        return unsubscribe

    def _emit(self, event: RegistryEvent) -> None:
        for listener in self._listeners:  # a tuple: (un)subscribing replaces it
            try:
                listener(event)
            except Exception:
                log.exception("registry listener failed on %s", type(event).__name__)

    def _emit_all(self, events: Sequence[RegistryEvent]) -> None:
        for event in events:
            self._emit(event)
            if isinstance(event, StatusChanged):
                self._on_status(event)

    # ------------------------------------------------------------------ queries

    def agent_names(self) -> list[str]:
        return list(self._agents)

    def runtime(self, agent: str) -> AgentRuntime:
        try:
            return self._agents[agent]
        except KeyError:
            known = ", ".join(self._agents)
            raise RegistryError(f"unknown agent {agent!r}; configured: {known}") from None

    def session(self, session_id: str) -> Session:
        return self._live(session_id).model

    def sessions(self, agent: str | None = None) -> list[Session]:
        return [live.model for live in self._sessions.values()
                if agent is None or live.agent == agent]

    def terminal_host(self, session_id: str) -> TerminalHost | None:
        return self._live(session_id).terminals

    def transcript_path(self, session_id: str) -> Path | None:
        return self._live(session_id).transcript

    async def flush_transcripts(self) -> None:
        await self._flush_transcripts()

    def agent_log(self, agent: str) -> list[str]:
        """The agent's stderr tail and the protocol errors of its connection."""
        runtime = self.runtime(agent)
        connection = runtime.connection
        lines = [f"# {agent}: {runtime.command.display()}"]
        if connection is None:
            lines.append("(not running)")
            return lines
        lines.append(f"pid {connection.process.pid}")
        if connection.peer.protocol_errors:
            lines.append("")
            lines.append("## protocol errors (most recent last)")
            lines.extend(connection.peer.protocol_errors)
        lines.append("")
        lines.append("## stderr (tail)")
        lines.extend(connection.process.stderr.tail(64 * 1024).splitlines())
        return lines

    def _live(self, session_id: str) -> LiveSession:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise RegistryError(f"unknown session {session_id!r}") from None

    def _session_for(self, agent: str, params: Mapping[str, Any]) -> LiveSession:
        session_id = params.get("sessionId")
        live = (self._sessions.get(session_key(agent, session_id))
                if isinstance(session_id, str) else None)
        if live is None:
            raise RpcError.invalid_params(f"unknown sessionId {session_id!r}")
        return live

    # ------------------------------------------------------------------ connections

    def _handlers(self, runtime: AgentRuntime) -> ClientHandlers:
        fs = self.config.fs_for(runtime.name)
        terminal = self.config.terminal_for(runtime.name)
        return ClientHandlers(
            on_update=lambda sid, update: self._on_update(runtime, sid, update),
            request_permission=lambda params: self._on_permission(runtime, params),
            fs_read=fs.read,
            fs_write=fs.write,
            fs=_FsRouter(self, runtime.name) if (fs.read or fs.write) else None,
            terminal=_TerminalRouter(self, runtime.name) if terminal.enabled else None,
            on_ext_notification=lambda method, params: self._on_ext(runtime, method, params),
            client_meta=LOUISE_CLIENT_META,
        )

    async def connection(self, agent: str) -> AgentConnection:
        """The Agent's live, initialized connection; (re)starts the process when needed."""
        if self._closed:
            raise RegistryError("the session registry is closed")
        runtime = self.runtime(agent)
        async with runtime.start_lock:
            if runtime.connection is not None and runtime.connection.is_open \
                    and runtime.initialized is not None:
                return runtime.connection
            return await self._start(runtime)

    async def _start(self, runtime: AgentRuntime) -> AgentConnection:
        assert self._task_group is not None
        runtime.generation += 1
        self._emit(AgentStatus(runtime.name, "starting", runtime.command.display()))
        connection = AgentConnection(
            runtime.command, self._handlers(runtime), name=runtime.name,
            request_timeout=self.config.request_timeout, grace_seconds=self.grace_seconds)
        connection._on_close = lambda reason: self._mark_lost(runtime, connection, reason)
        try:
            await connection.process.start()
        except OSError as exc:
            self._emit(AgentStatus(runtime.name, "failed", str(exc)))
            raise RegistryError(f"{runtime.name}: {exc}") from None
        runtime.connection = connection
        runtime.initialized = None
        await self._task_group.start(self._serve, runtime, connection)
        try:
            runtime.initialized = await connection.initialize()
        except BaseException:
            await connection.aclose()
            raise
        runtime.capability = lim.negotiate(runtime.initialized.agent_capabilities)
        self._emit(AgentStatus(runtime.name, "running", runtime.initialized.agent_name))
        return connection

    async def _serve(self, runtime: AgentRuntime, connection: AgentConnection, *,
                     task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                     ) -> None:
        """Run one connection; when it ends, its sessions fail and the limits source goes."""
        try:
            await connection.run(task_status=task_status)
        except Exception as exc:
            log.warning("%s: connection ended with %s", runtime.name, exc)
        finally:
            with anyio.CancelScope(shield=True):
                await self._connection_lost(runtime, connection)

    def _mark_lost(self, runtime: AgentRuntime, connection: AgentConnection,
                   reason: AcpError) -> None:
        """Synchronous part of losing a connection: runs before any pending request's
        caller resumes, so every session of the Agent is already `error` by then."""
        if runtime.connection is not connection:
            return
        runtime.connection = None
        runtime.initialized = None
        runtime.early.clear()
        self.broker.cancel_agent(runtime.name)
        message = str(reason)
        if not self._closed:
            self._emit(AgentStatus(runtime.name, "exited", message))
        for live in runtime.sessions:
            if live.model.status not in ("closed", "error"):
                self._emit_all(live.model.fail(message))
        self._limits_source_changed(runtime)

    async def _connection_lost(self, runtime: AgentRuntime, connection: AgentConnection) -> None:
        reason = connection.closed_reason or ConnectionClosed(f"{runtime.name} stopped")
        self._mark_lost(runtime, connection, reason)
        for live in runtime.sessions:
            if live.terminals is not None and live.model.status == "error":
                await live.terminals.release_all()

    # ------------------------------------------------------------------ sessions

    def _new_live(self, runtime: AgentRuntime, acp_id: str, cwd: str) -> LiveSession:
        fs = self.config.fs_for(runtime.name)
        terminal = self.config.terminal_for(runtime.name)
        file_access = FileAccess([cwd, *fs.roots]) if (fs.read or fs.write) else None
        terminals = TerminalHost(cwd, output_byte_limit=terminal.output_byte_limit,
                                 task_group=self._task_group) if terminal.enabled else None
        transcript = None
        if self.transcripts_dir is not None:
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in acp_id)[:120]
            transcript = self.transcripts_dir / f"{runtime.name}--{safe}.jsonl"
        model = Session(session_key(runtime.name, acp_id), runtime.name, cwd, self.bounds,
                        acp_id=acp_id)
        live = LiveSession(model, runtime.name, cwd, file_access, terminals,
                           transcript=transcript)
        return live

    def _register(self, runtime: AgentRuntime, live: LiveSession) -> None:
        self._sessions[live.session_id] = live
        runtime.sessions.append(live)
        self._emit(SessionAdded(live.session_id, live.agent, live.cwd))
        self._record(live, {"type": "session", "agent": live.agent, "cwd": live.cwd,
                            "sessionId": live.acp_id})

    def _apply_early(self, runtime: AgentRuntime, live: LiveSession) -> None:
        for update in runtime.early.pop(live.acp_id, deque()):
            self._apply(live, update)

    async def new_session(self, agent: str | None = None, cwd: str | None = None) -> Session:
        """Create a session on an Agent (default: the configured default Agent).

        An agent's refusal (authentication required, …) raises RegistryError with a message
        for a person (the sign-in methods it offers); the RpcError is its __cause__."""
        runtime = self.runtime(agent or self.config.default_agent)
        cwd = self._absolute_cwd(cwd, runtime)
        connection = await self.connection(runtime.name)
        try:
            setup = await connection.new_session(cwd)
        except RpcError as exc:
            raise RegistryError(describe_rpc_error(exc, runtime)) from exc
        return self._adopt(runtime, setup, cwd)

    def _adopt(self, runtime: AgentRuntime, setup: SessionSetup, cwd: str,
               live: LiveSession | None = None) -> Session:
        if live is None:
            live = self._new_live(runtime, setup.session_id, cwd)
            self._register(runtime, live)
        self._emit_all(live.model.apply_setup(setup.modes, setup.config_options))
        self._apply_early(runtime, live)
        runtime.observed = True
        self._emit_all(live.model.mark_ready())
        return live.model

    async def load_session(self, agent: str, session_id: str, cwd: str | None = None) -> Session:
        """`session/load` of the agent's session id (replays history before the reply)."""
        runtime = self.runtime(agent)
        cwd = self._absolute_cwd(cwd, runtime)
        connection = await self.connection(runtime.name)
        live = self._sessions.get(session_key(runtime.name, session_id))
        if live is None:
            live = self._new_live(runtime, session_id, cwd)
            self._register(runtime, live)
        live.model.begin_replay()
        self._emit_all(live.model.mark_starting())
        try:
            setup = await connection.load_session(session_id, cwd)
        except BaseException as exc:
            self._emit_all(live.model.fail(f"session/load failed: {exc}"))
            raise
        return self._adopt(runtime, setup, cwd, live)

    async def resume_session(self, agent: str, session_id: str, cwd: str | None = None
                             ) -> Session:
        """`session/resume` (no replay)."""
        runtime = self.runtime(agent)
        cwd = self._absolute_cwd(cwd, runtime)
        connection = await self.connection(runtime.name)
        live = self._sessions.get(session_key(runtime.name, session_id))
        if live is None:
            live = self._new_live(runtime, session_id, cwd)
            self._register(runtime, live)
        self._emit_all(live.model.mark_starting())
        try:
            setup = await connection.resume_session(session_id, cwd)
        except BaseException as exc:
            self._emit_all(live.model.fail(f"session/resume failed: {exc}"))
            raise
        return self._adopt(runtime, setup, cwd, live)

    async def list_sessions(self, agent: str, cwd: str | None = None) -> list[dict[str, Any]]:
        connection = await self.connection(agent)
        return [info async for info in connection.list_sessions(cwd)]

    async def close_session(self, session_id: str) -> None:
        """Close a session here, and at the agent where it supports `session/close`."""
        live = self._live(session_id)
        runtime = self.runtime(live.agent)
        self.broker.cancel_session(session_id)
        connection = runtime.connection
        if connection is not None and connection.is_open and runtime.initialized is not None \
                and runtime.initialized.session_capability("close"):
            try:
                await connection.close_session(live.acp_id)
            except AcpError as exc:
                log.info("%s: session/close failed: %s", live.agent, exc)
        self._emit_all(live.model.close())
        if live.terminals is not None:
            await live.terminals.release_all()
        self._sessions.pop(session_id, None)
        if live in runtime.sessions:
            runtime.sessions.remove(live)
        self._emit(SessionRemoved(session_id, live.agent))
        self._limits_source_changed(runtime)

    async def reattach(self, session_id: str) -> Session:
        """After the agent process died: restart it and reattach the session where the
        agent can (load, else resume); otherwise raise with a clear message."""
        live = self._live(session_id)
        runtime = self.runtime(live.agent)
        connection = await self.connection(live.agent)
        init = runtime.initialized
        assert init is not None
        if init.load_session:
            live.model.begin_replay()
            self._emit_all(live.model.add_notice("info", "agent restarted; reloading session"))
            self._emit_all(live.model.mark_starting())
            setup = await connection.load_session(live.acp_id, live.cwd)
        elif init.session_capability("resume"):
            self._emit_all(live.model.add_notice("info", "agent restarted; resuming session"))
            self._emit_all(live.model.mark_starting())
            setup = await connection.resume_session(live.acp_id, live.cwd)
        else:
            raise RegistryError(
                f"{live.agent} restarted but cannot load or resume sessions; start a new one")
        return self._adopt(runtime, setup, live.cwd, live)

    def _absolute_cwd(self, cwd: str | None, runtime: AgentRuntime) -> str:
        chosen = cwd or runtime.command.cwd or os.getcwd()
        path = os.path.abspath(os.path.expanduser(chosen))
        if not os.path.isdir(path):
            raise RegistryError(f"working directory does not exist: {path}")
        return path

    # ------------------------------------------------------------------ turns

    async def prompt(self, session_id: str, prompt: str | Sequence[Mapping[str, Any]]) -> str:
        """Run one turn and return its stop reason. Prompts on a session queue (bounded).

        A session in `error` after its agent died is reattached first where possible."""
        live = self._live(session_id)
        blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else \
            [dict(block) for block in prompt]
        if live.waiting_prompts >= MAX_QUEUED_PROMPTS:
            raise RegistryError(f"{MAX_QUEUED_PROMPTS} prompts already wait on this session")
        live.waiting_prompts += 1
        try:
            await live.prompt_lock.acquire()
        finally:
            live.waiting_prompts -= 1
        try:
            return await self._run_turn(live, blocks)
        finally:
            live.prompt_lock.release()

    async def _run_turn(self, live: LiveSession, blocks: list[dict[str, Any]]) -> str:
        runtime = self.runtime(live.agent)
        if live.model.status == "closed":
            raise RegistryError("the session is closed")
        if live.model.status == "error" or not runtime.connected:
            await self.reattach(live.session_id)
        connection = await self.connection(live.agent)
        self._emit_all(live.model.begin_turn(blocks))
        self._record(live, {"type": "prompt", "prompt": blocks})
        try:
            result = await connection.prompt(live.acp_id, blocks)
        except ConnectionClosed as exc:
            self._emit_all(live.model.end_turn(None, str(exc), connection_lost=True))
            self._record(live, {"type": "turn_end", "stopReason": "error", "error": str(exc)})
            raise
        except RpcError as exc:
            message = describe_rpc_error(exc, runtime)
            self._emit_all(live.model.end_turn(None, message))
            reason = live.model.last_stop_reason or "error"
            self._record(live, {"type": "turn_end", "stopReason": reason, "error": message})
            if reason == "cancelled":
                return reason
            raise RegistryError(message) from exc
        stop_reason = result.get("stopReason")
        reason = stop_reason if isinstance(stop_reason, str) else "end_turn"
        self._emit_all(live.model.end_turn(reason))
        self._record(live, {"type": "turn_end", "stopReason": live.model.last_stop_reason})
        return live.model.last_stop_reason or reason

    async def cancel(self, session_id: str) -> None:
        """Cancel per spec: session/cancel, every pending permission → cancelled, unfinished
        tool calls marked cancelled; the turn ends on the prompt's reply."""
        live = self._live(session_id)
        events = live.model.request_cancel()
        if not events:
            return
        self._emit_all(events)
        self.broker.cancel_session(session_id)
        runtime = self.runtime(live.agent)
        if runtime.connection is not None and runtime.connection.is_open:
            try:
                await runtime.connection.cancel(live.acp_id)
            except AcpError as exc:
                log.info("%s: session/cancel not sent: %s", live.agent, exc)

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        live = self._live(session_id)
        connection = await self.connection(live.agent)
        await connection.set_mode(live.acp_id, mode_id)
        self._emit_all(live.model.apply(ParsedUpdate(
            "current_mode_update", {"sessionUpdate": "current_mode_update",
                                    "currentModeId": mode_id}, None)))

    async def set_config_option(self, session_id: str, config_id: str, value: str | bool
                                ) -> None:
        live = self._live(session_id)
        connection = await self.connection(live.agent)
        options = await connection.set_config_option(live.acp_id, config_id, value)
        self._emit_all(live.model.apply(ParsedUpdate(
            "config_option_update", {"sessionUpdate": "config_option_update",
                                     "configOptions": options}, None)))

    # ------------------------------------------------------------------ inbound

    def _on_update(self, runtime: AgentRuntime, session_id: str,
                         update: ParsedUpdate) -> None:
        live = self._sessions.get(session_key(runtime.name, session_id))
        if live is None:
            # Before the reply that introduces the session (vibe does this): buffer, bounded.
            queue = runtime.early.get(session_id)
            if queue is None:
                if len(runtime.early) >= MAX_EARLY_SESSIONS:
                    runtime.early.pop(next(iter(runtime.early)))
                queue = runtime.early[session_id] = deque(maxlen=MAX_EARLY_UPDATES)
            queue.append(update)
            return
        self._apply(live, update)

    def _apply(self, live: LiveSession, update: ParsedUpdate) -> None:
        self._emit_all(live.model.apply(update))
        if update.kind in _CHUNK_KINDS and self._record_chunk(live, update.raw):
            return  # the streaming hot path: merged into the pending record
        self._record(live, {"type": "update", "update": update.raw})

    def _record_chunk(self, live: LiveSession, raw: dict[str, Any]) -> bool:
        """Append a plain text chunk to the pending transcript record of its message (the
        streaming hot path); False when the chunk has more to keep than text."""
        path = live.transcript
        if path is None or live.transcript_bytes >= TRANSCRIPT_MAX_BYTES:
            return True
        content = raw.get("content")
        if type(content) is not dict or content.get("type") != "text" or len(raw) > 3:
            return False  # anything beyond kind/content/messageId is kept verbatim
        text = content.get("text")
        message_id = raw.get("messageId")
        if type(text) is not str or (message_id is not None and type(message_id) is not str):
            return False
        kind = raw["sessionUpdate"]
        pending = self._transcript_lines.get(path)
        if pending is None:
            pending = self._transcript_lines[path] = []
        last = pending[-1] if pending else None
        if type(last) is _ChunkRecord and last.kind == kind and last.message_id == message_id:
            last.parts.append(text)
        else:
            pending.append(_ChunkRecord(round(self.clock(), 3), kind, message_id, [text]))
        live.transcript_bytes += len(text)
        if live.transcript_bytes >= TRANSCRIPT_MAX_BYTES:
            pending.append({"type": "truncated", "limit": TRANSCRIPT_MAX_BYTES})
        if not self._transcript_due:
            self._transcript_due = True
            self._transcript_wake.set()
        return True

    async def _on_permission(self, runtime: AgentRuntime, params: Any) -> Any:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        live = (self._sessions.get(session_key(runtime.name, session_id))
                if isinstance(session_id, str) else None)
        if live is None:
            return {"outcome": {"outcome": "cancelled"}}
        tool_call = params.get("toolCall")
        known = None
        if isinstance(tool_call, dict) and isinstance(tool_call.get("toolCallId"), str):
            record = live.model.tool_calls.get(tool_call["toolCallId"])
            if record is not None:
                known = {"toolCallId": record.tool_call_id, "title": record.title,
                         "kind": record.kind, "content": record.content,
                         "locations": record.locations, "rawInput": record.raw_input}
        request = extract_request(
            self.broker.next_id(), runtime.name,
            agent_key(runtime.command.command, runtime.command.args),
            canonical_workspace(live.cwd), params, known, session_key=live.session_id)
        self._emit_all(live.model.permission_pending(request.request_id, request.tool_call_id))
        outcome: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
        try:
            outcome = await self.broker.ask(request)
            return outcome
        finally:
            chosen = outcome.get("outcome", {})
            text = (f"selected:{chosen.get('optionId')}" if chosen.get("outcome") == "selected"
                    else "cancelled")
            self._emit_all(live.model.permission_settled(request.request_id, text))
            self._record(live, {"type": "permission", "title": request.title,
                                "kind": request.kind, "outcome": text})

    def _roots_for(self, request: PermissionRequest) -> list[str]:
        live = self._sessions.get(request.session_id)
        roots = list(self.config.fs_for(request.agent).roots)
        return [live.cwd, *roots] if live is not None else [request.workspace, *roots]

    def _permission_queue_changed(self) -> None:
        self._emit(PermissionQueueChanged(tuple(self.broker.pending())))

    async def _on_ext(self, runtime: AgentRuntime, method: str, params: Any) -> None:
        capability = runtime.capability
        if capability is None or method != capability.updated_method:
            log.debug("%s: ignored notification %s", runtime.name, method)
            return
        if not runtime.live_sessions():
            return  # notifications from a session-less connection carry no live source
        self._accept_limits(runtime.name, params)

    # ------------------------------------------------------------------ limits

    def _on_status(self, event: StatusChanged) -> None:
        """A session became ready (after setup or a turn): refresh that Agent's limits."""
        live = self._sessions.get(event.session_id)
        if live is None:
            return
        if event.new == "ready" and self._task_group is not None and not self._closed:
            self._task_group.start_soon(self._refresh_quietly, live.agent)
        if event.new in ("error", "closed", "ready"):
            self._limits_source_changed(self.runtime(live.agent))

    async def _refresh_quietly(self, agent: str) -> None:
        try:
            await self.refresh_limits(agent)
        except Exception:
            log.exception("%s: limits refresh failed", agent)

    def _source(self, runtime: AgentRuntime) -> LiveSession | None:
        """First capable live session of the Agent, in creation order."""
        if runtime.capability is None or not runtime.connected:
            return None
        for live in runtime.sessions:
            if live.model.status not in ("error", "closed", "starting"):
                return live
        return None

    def inspect_limits(self, agent: str, now: float | None = None) -> lim.LimitsState:
        """The Agent's limits state by the spec's inspection rules; starts nothing."""
        runtime = self.runtime(agent)
        observed = runtime.observed and any(
            s.model.status not in ("error", "closed") for s in runtime.sessions)
        return lim.inspect(self._limits.get(agent), agent,
                           self.clock() if now is None else now,
                           self._source(runtime) is not None, observed)

    def _set_limits(self, agent: str, state: lim.LimitsState) -> None:
        previous = self._limits.get(agent)
        self._limits[agent] = state
        if state.status in ("fresh", "empty", "unlimited", "stale", "unavailable"):
            self._cache_pending[agent] = state
            self._cache_wake.set()
        self._wake_reset_watch.set()
        if previous != state:
            self._emit(LimitsChanged(agent, state))

    def _accept_limits(self, agent: str, payload: Any) -> lim.LimitsState:
        previous = self._limits.get(agent)
        try:
            snapshot = lim.parse_snapshot(payload)
        except lim.LimitsError as exc:
            state = lim.failed(previous, str(exc), agent=agent)
        else:
            state = lim.accepted(agent, snapshot, self.clock())
        self._set_limits(agent, state)
        return state

    async def refresh_limits(self, agent: str) -> lim.LimitsState:
        """Read the Agent's limits through its first capable live session, if any.

        Without one, returns the inspected state and sends nothing. Concurrent refreshes
        of one Agent are de-duplicated. An answer from a source that closed meanwhile is
        ignored; the read moves to the next capable session (failover), if there is one."""
        runtime = self.runtime(agent)
        if runtime.refreshing is not None:
            # De-duplicated: share the read already in flight.
            await runtime.refreshing.wait()
            return self.inspect_limits(agent)
        done = runtime.refreshing = anyio.Event()
        before = self._limits.get(agent)
        try:
            for _attempt in range(3):  # bounded failover
                result = await self._read_limits(runtime)
                if result is not None:
                    return result
            return self.inspect_limits(agent)
        finally:
            runtime.refreshing = None
            done.set()
            current = self._limits.get(agent)
            if current is not None and current.status == "loading":
                # The read never concluded (cancelled, or every source went away): the
                # state before it, inspected now, decides (stale/unavailable when no source).
                base = before if before is not None else current
                self._set_limits(agent, lim.inspect(
                    base, agent, self.clock(), self._source(runtime) is not None, True))

    async def _read_limits(self, runtime: AgentRuntime) -> lim.LimitsState | None:
        """One read through the current source; None when that source went away."""
        agent = runtime.name
        source = self._source(runtime)
        capability = runtime.capability
        connection = runtime.connection
        if source is None or capability is None or connection is None:
            state = self.inspect_limits(agent)
            if self._limits.get(agent) is not None and state != self._limits.get(agent):
                self._set_limits(agent, state)
            return state
        generation = runtime.generation
        self._set_limits(agent, lim.loading(self._limits.get(agent), agent=agent))
        try:
            payload = await connection.ext_request(capability.read_method, {})
        except RpcError as exc:
            if self._source_gone(runtime, source, generation):
                return None
            state = lim.failed(self._limits.get(agent),
                               f"ACP account limits read failed: {exc.message}", agent=agent)
            self._set_limits(agent, state)
            return state
        except AcpError:
            return None
        if self._source_gone(runtime, source, generation):
            return None
        return self._accept_limits(agent, payload)

    def _source_gone(self, runtime: AgentRuntime, source: LiveSession, generation: int) -> bool:
        return (runtime.generation != generation
                or source.model.status in ("error", "closed")
                or source not in runtime.sessions)

    def _limits_source_changed(self, runtime: AgentRuntime) -> None:
        """Re-inspect after a source may have gone; keep cache liveness records right."""
        has_source = self._source(runtime) is not None
        if has_source != runtime.holder and self.limits_cache is not None:
            runtime.holder = has_source
            self._holder_changes.append((runtime.name, has_source))
            self._cache_wake.set()
        current = self._limits.get(runtime.name)
        if current is not None:
            state = self.inspect_limits(runtime.name)
            if state != current:
                self._set_limits(runtime.name, state)

    async def _reset_watch(self) -> None:
        """At the earliest reset time, re-inspect (marks stale); never reads."""
        while True:
            now = self.clock()
            earliest = math.inf
            for state in self._limits.values():
                if state.snapshot is None or state.status not in ("fresh", "loading"):
                    continue
                for bucket in state.snapshot.buckets:
                    for window in bucket.windows:
                        if window.resets_at > now:
                            earliest = min(earliest, window.resets_at)
            self._wake_reset_watch = anyio.Event()
            with anyio.move_on_after(max(earliest - now, 0) + 0.01):
                await self._wake_reset_watch.wait()
                continue
            for agent in list(self._limits):
                state = self.inspect_limits(agent)
                if state != self._limits.get(agent):
                    self._set_limits(agent, state)

    async def _cache_writer(self) -> None:
        """Writes accepted states and liveness to the cache off the event loop."""
        if self.limits_cache is None:
            return
        cache = self.limits_cache
        while True:
            await self._cache_wake.wait()
            self._cache_wake = anyio.Event()
            states = dict(self._cache_pending)
            self._cache_pending.clear()
            holders = list(self._holder_changes)
            self._holder_changes.clear()

            def write(states: dict[str, lim.LimitsState] = states,
                      holders: list[tuple[str, bool]] = holders) -> None:
                for agent, live in holders:
                    if live:
                        cache.add_holder(agent)
                    else:
                        cache.remove_holder(agent)
                for agent, state in states.items():
                    cache.record_state(agent, state)

            try:
                await anyio.to_thread.run_sync(write)
            except Exception as exc:
                log.warning("could not update the limits cache %s: %s", cache.path, exc)

    # ------------------------------------------------------------------ transcripts

    def _record(self, live: LiveSession, entry: dict[str, Any]) -> None:
        """Queue one transcript record; serialization happens off the event loop at flush
        time (text chunks take `_record_chunk`, which merges them per message)."""
        path = live.transcript
        if path is None or live.transcript_bytes >= TRANSCRIPT_MAX_BYTES:
            return
        pending = self._transcript_lines.setdefault(path, [])
        pending.append({"t": round(self.clock(), 3), **entry})
        live.transcript_bytes += 200  # an estimate; the exact size is known when written
        if live.transcript_bytes >= TRANSCRIPT_MAX_BYTES:
            pending.append({"type": "truncated", "limit": TRANSCRIPT_MAX_BYTES})
        if not self._transcript_due:
            self._transcript_due = True
            self._transcript_wake.set()

    async def _transcript_writer(self) -> None:
        while True:
            await self._transcript_wake.wait()
            await anyio.sleep(0.2)  # batch a burst of chunks into one write per file
            await self._flush_transcripts()

    async def _flush_transcripts(self) -> None:
        self._transcript_wake = anyio.Event()
        self._transcript_due = False
        batches = self._transcript_lines
        self._transcript_lines = {}
        if not batches:
            return

        def write() -> None:
            dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
            for path, records in batches.items():
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "a", encoding="utf-8") as handle:
                    handle.writelines(dumps(record.as_json() if isinstance(record, _ChunkRecord)
                                            else record) + "\n" for record in records)

        try:
            await anyio.to_thread.run_sync(write)
        except OSError as exc:
            log.warning("could not write a transcript: %s", exc)


_CHUNK_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})


@dataclass(slots=True)
class _ChunkRecord:
    """Text chunks of one message, merged until the transcript is written."""

    t: float
    kind: str
    message_id: str | None
    parts: list[str]

    def as_json(self) -> dict[str, Any]:
        update: dict[str, Any] = {"sessionUpdate": self.kind,
                                  "content": {"type": "text", "text": "".join(self.parts)}}
        if self.message_id is not None:
            update["messageId"] = self.message_id
        return {"t": self.t, "type": "update", "update": update}


def session_key(agent: str, acp_id: str) -> str:
    """Registry-wide session id: two Agents may hand out the same ids."""
    return f"{agent}:{acp_id}"


def describe_rpc_error(exc: RpcError, runtime: AgentRuntime) -> str:
    """A person-facing message for an agent's error (never its raw `data`)."""
    if exc.is_auth_required:
        methods = runtime.initialized.auth_methods if runtime.initialized else []
        names = ", ".join(str(m.get("name") or m.get("id")) for m in methods) or "none advertised"
        return (f"{runtime.name} requires authentication ({exc.message}). "
                f"Sign-in methods it offers: {names}. Sign in with the agent's own tool, "
                "then retry.")
    return f"{runtime.name}: {exc.message}"
