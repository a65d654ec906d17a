"""The client side of ACP v1 over one agent subprocess.

`AgentConnection` owns an `AgentProcess` and a `JsonRpcPeer`. Agent→client requests go
to the `ClientHandlers` the caller supplies (`louise.acp.handlers`);
what the caller does not handle is neither advertised in `clientCapabilities` nor
answered with anything but `-32601`. Permission requests fail closed: no handler, a
handler error or a cancelled request all answer `cancelled` (or `-32800`), never an allow.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from anyio.abc import TaskStatus

from louise import __version__
from louise.acp.auth import AuthMethod, parse_auth_methods
from louise.acp.errors import (
    INVALID_PARAMS,
    AcpError,
    ConnectionClosed,
    ProtocolError,
    RpcError,
)
from louise.acp.handlers import ClientHandlers, Dispatcher
from louise.acp.jsonrpc import JsonRpcPeer
from louise.acp.peer_limits import PeerLimits
from louise.acp.process import AgentCommand, AgentProcess
from louise.acp.schema import PROTOCOL_VERSION

_QUIET_SECONDS = 0.05  # after the agent exits: its output is read once this long quiet
# `authenticate` may wait on a person (a browser sign-in the agent opened): bounded, but
# far beyond a control request.
AUTHENTICATE_TIMEOUT = 600.0

Timeout = float | None | Literal["control"]  # None: wait forever; "control": the default


class Unsupported(AcpError):
    """The agent does not advertise what this call needs."""


@dataclass(frozen=True, slots=True)
class InitializeResult:
    """The agent's `initialize` answer, read (`raw`: the whole of it)."""

    protocol_version: int
    agent_capabilities: dict[str, Any]
    auth_methods: list[dict[str, Any]]
    agent_info: dict[str, Any]
    raw: dict[str, Any]

    def session_capability(self, name: str) -> bool:
        caps = self.agent_capabilities.get("sessionCapabilities")
        return isinstance(caps, dict) and caps.get(name) is not None

    @property
    def load_session(self) -> bool:
        return self.agent_capabilities.get("loadSession") is True

    @property
    def agent_name(self) -> str:
        name = self.agent_info.get("title") or self.agent_info.get("name")
        return name if isinstance(name, str) else "agent"

    @property
    def methods(self) -> list[AuthMethod]:
        """The advertised sign-in methods, read defensively (bounded)."""
        return parse_auth_methods(self.auth_methods)

    @property
    def quota_supported(self) -> bool:
        """`agentCapabilities.quota` is an object (the ACP Quotas RFD: omitted and null
        mean not supported): `quota/read` may be called, `quota_update` may come."""
        return isinstance(self.agent_capabilities.get("quota"), dict)

    @property
    def logout_supported(self) -> bool:
        """`agentCapabilities.auth.logout` present and not null."""
        auth = self.agent_capabilities.get("auth")
        return isinstance(auth, dict) and isinstance(auth.get("logout"), dict)


@dataclass(frozen=True, slots=True)
class SessionSetup:
    """The reply to session/new, load or resume (modes and config options kept raw)."""

    session_id: str
    modes: dict[str, Any] | None
    config_options: list[dict[str, Any]] | None
    raw: dict[str, Any]
    # The legacy (pre-1.0-stable, since removed) model state some agents still send
    # (gemini-cli): `{currentModelId, availableModels: [{modelId, name, description}]}`.
    models: dict[str, Any] | None = None


def _short(value: Any, limit: int = 40) -> str:
    """An agent's value in a message for the person: short, however big it is."""
    if isinstance(value, str):
        text = repr(value[:limit])
    elif value is None or isinstance(value, bool | int | float):
        text = repr(value)
    else:
        text = f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    return text if len(text) <= limit else text[:limit] + "…"


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _with_meta(params: dict[str, Any], meta: Mapping[str, Any] | None) -> None:
    """The person's `_meta` for a session setup (`agents.<name>.options._meta`), when set."""
    if meta:
        params["_meta"] = dict(meta)


def _setup(session_id: str, result: Any) -> SessionSetup:
    raw = _obj(result)
    modes = raw.get("modes")
    options = raw.get("configOptions")
    models = raw.get("models")
    return SessionSetup(
        session_id=session_id,
        modes=modes if isinstance(modes, dict) else None,
        config_options=[o for o in options if isinstance(o, dict)]
        if isinstance(options, list)
        else None,
        raw=raw,
        models=models if isinstance(models, dict) else None,
    )


class AgentConnection:
    """One ACP connection to one agent process.

    Start it inside a task group: `await tg.start(conn.run)`; or use `open_connection`.
    """

    def __init__(
        self,
        command: AgentCommand,
        handlers: ClientHandlers | None = None,
        *,
        name: str = "agent",
        request_timeout: float = 30.0,
        limits: PeerLimits | None = None,
        grace_seconds: float = 2.0,
        on_protocol_error: Callable[[ProtocolError], None] | None = None,
        on_close: Callable[[AcpError], None] | None = None,
        read_pace: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.command = command
        # Through the session host: turns go on without this client (see `prompt`).
        self.turns_outlive_client = False
        self._read_pace = read_pace
        self._on_close = on_close
        self.handlers = handlers or ClientHandlers()
        self.name = name
        self.request_timeout = request_timeout
        self.process = AgentProcess(command, grace_seconds=grace_seconds)
        self._limits = limits
        self._on_protocol_error = on_protocol_error
        self._peer: JsonRpcPeer | None = None
        self.initialized: InitializeResult | None = None
        self._closed = anyio.Event()
        self._cancel_scope: anyio.CancelScope | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def peer(self) -> JsonRpcPeer:
        if self._peer is None:
            raise RuntimeError("connection not started")
        return self._peer

    @property
    def closed_reason(self) -> AcpError | None:
        return self._peer.closed if self._peer is not None else None

    @property
    def is_open(self) -> bool:
        return self._peer is not None and self._peer.closed is None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Spawn the agent (unless `start` did) and serve the connection until it closes."""
        if not self.process.started:
            await self.process.start()
        proc = self.process.process
        assert proc.stdin is not None
        self._peer = JsonRpcPeer(
            self.process.stdout,
            proc.stdin,
            Dispatcher(self.handlers, self.name),
            limits=self._limits,
            on_eof=self._eof_reason,
            on_protocol_error=self._on_protocol_error,
            on_close=self._on_close,
            read_pace=self._read_pace,
            name=self.name,
        )
        try:
            with anyio.CancelScope() as scope:
                self._cancel_scope = scope
                async with anyio.create_task_group() as tg:
                    await tg.start(self.process.run)
                    await tg.start(self._peer.run)
                    tg.start_soon(self._end_on_exit, self._peer)
                    task_status.started()
                    await self._peer.wait_closed()
                    # The peer is done; make sure the process goes too.
                    await self.process.shutdown()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if self._peer.closed is None:
                    self._peer.close(ConnectionClosed("louise closed the connection"))
                await self.process.shutdown()
            self._closed.set()

    async def _eof_reason(self) -> AcpError:
        status = await self.process.wait_exit(self.process.grace_seconds)
        reason = "the agent exited" if status is not None else "the agent closed its output"
        return ConnectionClosed(
            f"{reason}: {self.command.display()}", status, self.process.stderr.tail(4000)
        )

    async def _end_on_exit(self, peer: JsonRpcPeer) -> None:
        """The process, not its stdout, says when the agent is gone: a child that
        inherited stdout can keep it open long after (a daemon, for ever)."""
        status = await self.process.wait_exited()
        # What the agent wrote before it exited is still in the pipes: read it, unless a
        # child keeps them busy (bounded).
        with anyio.move_on_after(self.process.grace_seconds):
            while not (peer.input_ended.is_set() and self.process.stderr_ended):
                seen = peer.bytes_received, self.process.stderr.total_bytes
                await anyio.sleep(_QUIET_SECONDS)
                if (peer.bytes_received, self.process.stderr.total_bytes) == seen:
                    break
        peer.end_input(ConnectionClosed(
            f"the agent exited: {self.command.display()}", status, self.process.stderr.tail(4000)
        ))

    @property
    def idle(self) -> bool:
        """No request of ours waits for an answer and none of the agent's for ours."""
        if self._peer is None:
            return True
        state = self._peer.state
        return not state.pending and not state.inbound

    async def aclose(self, grace: float | None = None, deadline: float | None = None) -> None:
        """Close stdin, give the agent a grace period (`grace`, else the connection's), then
        terminate and kill; with a `deadline` (anyio's clock), killed by then at the latest
        (`AgentProcess.shutdown`) and not waited for past it."""
        if self._peer is not None and self._peer.closed is None:
            self._peer.close(ConnectionClosed("louise closed the connection"))
        with anyio.CancelScope(shield=True):
            await self.process.shutdown(grace, deadline)
            if self._cancel_scope is not None:
                self._cancel_scope.cancel()
            if self._peer is not None:
                with anyio.CancelScope(deadline=math.inf if deadline is None else deadline):
                    await self._closed.wait()

    # ------------------------------------------------------------------ requests

    async def request(
        self, method: str, params: Any = None, *, timeout: Timeout = "control",
        announce_abandon: bool = True,
    ) -> Any:
        """A raw request; by default bounded by the connection's control-request timeout."""
        effective = self.request_timeout if timeout == "control" else timeout
        return await self.peer.request(method, params, timeout=effective,
                                       announce_abandon=announce_abandon)

    async def notify(self, method: str, params: Any = None, *,
                     timeout: Timeout = "control") -> None:
        """A raw notification; the timeout bounds the wait while the agent reads nothing."""
        effective = self.request_timeout if timeout == "control" else timeout
        await self.peer.notify(method, params, timeout=effective)

    async def initialize(self) -> InitializeResult:
        result = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": self.handlers.capabilities(),
                "clientInfo": {"name": "louise", "title": "louise", "version": __version__},
            },
        )
        raw = _obj(result)
        version = raw.get("protocolVersion")
        if version != PROTOCOL_VERSION:
            await self.aclose()
            raise AcpError(
                f"{self.command.display()} speaks ACP protocol version {_short(version)}; "
                f"louise supports version {PROTOCOL_VERSION}. Update louise or the agent."
            )
        auth = raw.get("authMethods")
        self.initialized = InitializeResult(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=_obj(raw.get("agentCapabilities")),
            auth_methods=[m for m in auth if isinstance(m, dict)] if isinstance(auth, list) else [],
            agent_info=_obj(raw.get("agentInfo")),
            raw=raw,
        )
        return self.initialized

    def _require(self, present: bool, what: str) -> None:
        if not present:
            raise Unsupported(f"{self.name} does not support {what}")

    @property
    def _init(self) -> InitializeResult:
        if self.initialized is None:
            raise AcpError("initialize the connection first")
        return self.initialized

    async def authenticate(self, method_id: str, *,
                           timeout: float = AUTHENTICATE_TIMEOUT) -> None:
        """`authenticate` with an `agent` method (never a `terminal` one: the spec
        forbids it, and louise checks)."""
        method = next((m for m in self._init.methods if m.id == method_id), None)
        if method is None:
            raise Unsupported(f"{self.name} offers no sign-in method {method_id!r}")
        if method.kind != "agent":
            raise Unsupported(f"{method.name!r} is a {method.type} method; louise runs it "
                              "itself, never through authenticate")
        await self.request("authenticate", {"methodId": method_id}, timeout=timeout)

    async def logout(self) -> None:
        """`logout`, only where the agent advertises `auth.logout`."""
        self._require(self._init.logout_supported, "logout")
        await self.request("logout", {})

    async def new_session(
        self, cwd: str, *, mcp_servers: Sequence[Mapping[str, Any]] = (),
        additional_directories: Sequence[str] = (), meta: Mapping[str, Any] | None = None,
    ) -> SessionSetup:
        params: dict[str, Any] = {"cwd": cwd, "mcpServers": list(mcp_servers)}
        self._directories(params, additional_directories)
        _with_meta(params, meta)
        result = _obj(await self.request("session/new", params))
        session_id = result.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise RpcError(INVALID_PARAMS, "session/new reply has no sessionId", result)
        return _setup(session_id, result)

    def _directories(self, params: dict[str, Any], directories: Sequence[str]) -> None:
        """`additionalDirectories`, only to an agent that advertises them."""
        if directories and self._init.session_capability("additionalDirectories"):
            params["additionalDirectories"] = list(directories)

    async def load_session(
        self, session_id: str, cwd: str, *, mcp_servers: Sequence[Mapping[str, Any]] = (),
        additional_directories: Sequence[str] = (), meta: Mapping[str, Any] | None = None,
    ) -> SessionSetup:
        self._require(self._init.load_session, "session/load")
        params = {"sessionId": session_id, "cwd": cwd, "mcpServers": list(mcp_servers)}
        self._directories(params, additional_directories)
        _with_meta(params, meta)
        # A replay of a long history may take a while: no control timeout.
        return _setup(session_id, await self.request("session/load", params, timeout=None))

    async def resume_session(
        self, session_id: str, cwd: str, *, mcp_servers: Sequence[Mapping[str, Any]] = (),
        additional_directories: Sequence[str] = (), meta: Mapping[str, Any] | None = None,
    ) -> SessionSetup:
        self._require(self._init.session_capability("resume"), "session/resume")
        params = {"sessionId": session_id, "cwd": cwd, "mcpServers": list(mcp_servers)}
        self._directories(params, additional_directories)
        _with_meta(params, meta)
        return _setup(session_id, await self.request("session/resume", params))

    async def fork_session(
        self, session_id: str, cwd: str, *, mcp_servers: Sequence[Mapping[str, Any]] = ()
    ) -> SessionSetup:
        """`session/fork` (unstable; only where advertised): a new session holding the
        source's history. Returns the new session's setup."""
        self._require(self._init.session_capability("fork"), "session/fork")
        params = {"sessionId": session_id, "cwd": cwd, "mcpServers": list(mcp_servers)}
        # Copying a long history may take a while: bounded, but beyond a control request.
        result = _obj(await self.request("session/fork", params,
                                         timeout=max(self.request_timeout, 120.0)))
        new_id = result.get("sessionId")
        if not isinstance(new_id, str) or not new_id:
            raise RpcError(INVALID_PARAMS, "session/fork reply has no sessionId", result)
        return _setup(new_id, result)

    async def list_sessions(
        self, cwd: str | None = None, *, max_pages: int = 100
    ) -> AsyncIterator[dict[str, Any]]:
        """Every SessionInfo the agent lists, following `nextCursor` (bounded pages)."""
        self._require(self._init.session_capability("list"), "session/list")
        cursor: str | None = None
        for _ in range(max_pages):
            params: dict[str, Any] = {}
            if cwd is not None:
                params["cwd"] = cwd
            if cursor is not None:
                params["cursor"] = cursor
            result = _obj(await self.request("session/list", params))
            sessions = result.get("sessions")
            for info in sessions if isinstance(sessions, list) else []:
                if isinstance(info, dict):
                    yield info
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                return
            cursor = next_cursor

    async def close_session(self, session_id: str) -> None:
        self._require(self._init.session_capability("close"), "session/close")
        await self.request("session/close", {"sessionId": session_id})

    async def delete_session(self, session_id: str) -> None:
        self._require(self._init.session_capability("delete"), "session/delete")
        await self.request("session/delete", {"sessionId": session_id})

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        await self.request("session/set_mode", {"sessionId": session_id, "modeId": mode_id})

    async def set_model(self, session_id: str, model_id: str) -> None:
        """The legacy `session/set_model` (only for a session whose setup had `models`)."""
        await self.request("session/set_model", {"sessionId": session_id, "modelId": model_id})

    async def set_config_option(
        self, session_id: str, config_id: str, value: str | bool
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"sessionId": session_id, "configId": config_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"
        result = _obj(await self.request("session/set_config_option", params))
        options = result.get("configOptions")
        return [o for o in options if isinstance(o, dict)] if isinstance(options, list) else []

    async def prompt(self, session_id: str, prompt: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Run one turn; returns the raw PromptResponse (`stopReason`, …). No timeout.
        With `turns_outlive_client` (the session host), a prompt louise stops waiting for
        (it is closing) is not cancelled at the agent: the turn goes on there (a person's
        cancel is `session/cancel`)."""
        result = await self.request(
            "session/prompt", {"sessionId": session_id, "prompt": list(prompt)}, timeout=None,
            announce_abandon=not self.turns_outlive_client)
        return _obj(result)

    async def cancel(self, session_id: str) -> None:
        await self.notify("session/cancel", {"sessionId": session_id})

    async def read_quota(self, session_id: str | None = None) -> Any:
        """`quota/read` (the ACP Quotas RFD), only where the agent advertises `quota`:
        the snapshot that applies to the session, or without one, to the account a new
        session would use. Returns the raw result (validated by `louise.limits`)."""
        self._require(self._init.quota_supported, "quota/read")
        params = {} if session_id is None else {"sessionId": session_id}
        return await self.request("quota/read", params)

    async def ext_request(
        self, method: str, params: Any = None, *, timeout: Timeout = "control"
    ) -> Any:
        if not method.startswith("_"):
            raise ValueError("extension methods start with '_'")
        return await self.request(method, {} if params is None else params, timeout=timeout)




@contextlib.asynccontextmanager
async def open_connection(
    command: AgentCommand,
    handlers: ClientHandlers | None = None,
    *,
    initialize: bool = True,
    **kwargs: Any,
) -> AsyncIterator[AgentConnection]:
    """Spawn an agent, (optionally) initialize it, and shut it down on exit."""
    connection = AgentConnection(command, handlers, **kwargs)
    await connection.process.start()  # a spawn error surfaces as a plain OSError
    async with anyio.create_task_group() as tg:
        await tg.start(connection.run)
        try:
            if initialize:
                await connection.initialize()
            yield connection
        finally:
            await connection.aclose()
            tg.cancel_scope.cancel()
