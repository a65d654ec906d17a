"""Agent processes: one ACP connection per configured Agent, started on first use, served
in the registry's task group, and lost at once (every session of the Agent fails) when the
process goes away."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import TaskGroup, TaskStatus

from louise import limits as lim
from louise.acp.connection import AgentConnection
from louise.acp.errors import AcpError, ConnectionClosed
from louise.acp.handlers import ClientHandlers
from louise.acp.spawn import EarlyAgent
from louise.config.model import Config
from louise.limits.quota_order import Freshness
from louise.permissions.broker import PermissionBroker
from louise.registry.events import AgentStatus, Emitter
from louise.registry.records import AgentRuntime, RegistryError, SessionTable

LAST_STDERR_BYTES = 64 * 1024
log = logging.getLogger("louise.registry")

HandlersFor = Callable[[AgentRuntime], ClientHandlers]
EXIT_EOF_GRACE = 1.0  # after the agent exits, how long its output may take to end
IDLE_EXIT_GRACE = 0.25  # after stdin closes, for an agent with nothing left to finish
OnLost = Callable[[AgentRuntime, str], None]
# When a streaming agent's next read may happen (the Neovim engine: its next frame).
ReadPace = Callable[[], Awaitable[None]]


class _LossWatch:
    """The connection's `on_close`: tells the supervisor which connection closed."""

    def __init__(self, supervisor: AgentSupervisor, runtime: AgentRuntime) -> None:
        self.supervisor = supervisor
        self.runtime = runtime
        self.connection: AgentConnection | None = None

    def __call__(self, reason: AcpError) -> None:
        if self.connection is not None:
            self.supervisor.mark_lost(self.runtime, self.connection, reason)


class AgentSupervisor:
    """Starts, serves and loses agent processes. `on_lost(runtime, message)` runs
    synchronously when a connection closes, before any pending caller resumes."""

    def __init__(self, table: SessionTable, emitter: Emitter, broker: PermissionBroker,
                 config: Config, *, grace_seconds: float, handlers_for: HandlersFor,
                 on_lost: OnLost, read_pace: ReadPace | None = None,
                 early_agent: EarlyAgent | None = None) -> None:
        self._table = table
        # An agent spawned before louise's modules loaded, for the first agent start to
        # take when it is what that start spawns (`AgentProcess.adopt`), else stopped.
        self._early = early_agent
        self._read_pace = read_pace
        self._emitter = emitter
        self._broker = broker
        self._config = config
        self._grace_seconds = grace_seconds
        self._handlers_for = handlers_for
        self._on_lost = on_lost
        self._task_group: TaskGroup | None = None
        self.closed = False

    def bind(self, task_group: TaskGroup) -> None:
        """The task group connections are served in (the registry's)."""
        self._task_group = task_group

    async def connection(self, agent: str) -> AgentConnection:
        """The Agent's live, initialized connection; (re)starts the process when needed."""
        if self.closed:
            raise RegistryError("the session registry is closed")
        runtime = self._table.runtime(agent)
        async with runtime.start_lock:
            if runtime.connection is not None and runtime.connection.is_open \
                    and runtime.initialized is not None:
                return runtime.connection
            return await self._start(runtime)

    async def _start(self, runtime: AgentRuntime) -> AgentConnection:
        if self._task_group is None:
            raise RegistryError("the session registry is not running")
        runtime.generation += 1
        self._emitter.emit(AgentStatus(runtime.name, "starting", runtime.command.display()))
        watch = _LossWatch(self, runtime)
        connection = AgentConnection(
            runtime.launch or runtime.command, self._handlers_for(runtime), name=runtime.name,
            request_timeout=self._config.request_timeout, grace_seconds=self._grace_seconds,
            on_close=watch, read_pace=self._read_pace)
        watch.connection = connection
        connection.turns_outlive_client = runtime.launch is not None
        early, self._early = self._early, None
        try:
            if early is not None and runtime.launch is None \
                    and connection.process.adopt(early):
                log.info("%s: adopted the agent started early (pid %s)", runtime.name,
                         connection.process.pid)
            else:
                if early is not None:  # another agent, or through the session host
                    early.stop()
                await connection.process.start()
        except OSError as exc:
            runtime.note(f"could not start: {exc.strerror or exc}")
            self._emitter.emit(AgentStatus(runtime.name, "failed", str(exc)))
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
        runtime.quota = runtime.initialized.quota_supported
        runtime.quota_order = Freshness()  # a new agent process: its first snapshots count
        self._emitter.emit(AgentStatus(runtime.name, "running", runtime.initialized.agent_name))
        return connection

    def discard_early(self) -> None:
        """No agent start takes the early agent any more: it is stopped (a no-op once one
        took it)."""
        early, self._early = self._early, None
        if early is not None:
            early.stop()

    async def _serve(self, runtime: AgentRuntime, connection: AgentConnection, *,
                     task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run one connection; when it ends, its sessions fail and the limits source goes."""
        try:
            async with anyio.create_task_group() as watch:
                watch.start_soon(self._close_when_exited, runtime, connection)
                await connection.run(task_status=task_status)
                watch.cancel_scope.cancel()
        except Exception as exc:
            log.warning("%s: connection ended with %s", runtime.name, exc)
        finally:
            with anyio.CancelScope(shield=True):
                reason = connection.closed_reason or ConnectionClosed(f"{runtime.name} stopped")
                self.mark_lost(runtime, connection, reason)
                for live in runtime.sessions:
                    if live.terminals is not None and live.model.status == "error":
                        await live.terminals.release_all()

    async def _close_when_exited(self, runtime: AgentRuntime,
                                 connection: AgentConnection) -> None:
        """The agent's exit ends its connection even when its stdout stays open: a child it
        started (a shell tool, a language server) may hold the pipe, and no end of input
        then ever comes. After a moment for the usual end of input, the connection is
        closed with the exit status (which also stops what is left of its process group)."""
        process = connection.process
        if not process.started:
            return
        await process.process.wait()
        await anyio.sleep(EXIT_EOF_GRACE)
        if connection.is_open:
            log.info("%s exited but its output stayed open (a child holds it); closing",
                     runtime.name)
            connection.peer.close(ConnectionClosed(
                f"the agent exited: {runtime.command.display()}", process.exit_status,
                process.stderr.tail(4000)))

    def mark_lost(self, runtime: AgentRuntime, connection: AgentConnection,
                  reason: AcpError) -> None:
        """Synchronous part of losing a connection: runs before any pending request's
        caller resumes, so every session of the Agent is already `error` by then."""
        if runtime.connection is not connection:
            return
        runtime.connection = None
        runtime.initialized = None
        runtime.early.clear()
        # Kept for :LouiseLog: what the process said, else what its loss recorded.
        runtime.last_stderr = connection.process.stderr.tail(LAST_STDERR_BYTES) or (
            reason.stderr_tail if isinstance(reason, ConnectionClosed) else "")
        self._broker.cancel_agent(runtime.name)
        message = str(reason)
        if runtime.launch is not None and isinstance(reason, ConnectionClosed):
            message = host_lost_message(runtime.last_stderr)
        if runtime.restarting is not None:  # louise stopped it on purpose: no alarm
            message = f"{runtime.name} restarted ({runtime.restarting})"
        elif not self.closed:
            self._emitter.emit(AgentStatus(runtime.name, "exited", message))
        self._on_lost(runtime, message)

    async def restart(self, agent: str, why: str) -> AgentConnection:
        """Stop the Agent's process on purpose (its sessions fail quietly, `why` says
        why) and start it again."""
        runtime = self._table.runtime(agent)
        async with runtime.start_lock:
            old = runtime.connection
            if old is not None:
                runtime.restarting = why
                try:
                    await old.aclose()
                finally:
                    runtime.restarting = None
            return await self._start(runtime)

    async def aclose(self, finished: frozenset[str] = frozenset(),
                     deadline: float | None = None) -> None:
        """Stop every agent process, concurrently. After its stdin closes an agent gets the
        grace period to exit by itself; one with nothing left to finish (`finished`: every
        session of it closed at the agent, and no request open either way) only a short
        one before SIGTERM: codex-acp, for one, takes 2 s to exit however idle it is.
        With a `deadline` (anyio's clock), every process group is killed by then."""
        self.closed = True
        self.discard_early()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for runtime in self._table.runtimes.values():
                    connection = runtime.connection
                    if connection is not None:
                        done = runtime.name in finished and connection.idle
                        tg.start_soon(connection.aclose,
                                      min(IDLE_EXIT_GRACE, self._grace_seconds) if done
                                      else None, deadline)

    def kill_all(self) -> None:
        """SIGKILL every agent's process group at once: the last resort of a process that
        leaves before its shutdown finished (synchronous; it only sends signals)."""
        self.discard_early()
        for runtime in self._table.runtimes.values():
            connection = runtime.connection
            if connection is not None:
                connection.process.kill_group()

    def agent_log(self, agent: str) -> list[str]:
        """The agent's stderr tail and the protocol errors of its connection."""
        runtime = self._table.runtime(agent)
        connection = runtime.connection
        lines = [f"# {agent}: {runtime.command.display()}"]
        if runtime.notes:
            lines.append("")
            lines.append("## louise (most recent last)")
            lines.extend(runtime.notes)
        if connection is None:
            lines.append("")
            if runtime.generation == 0:
                lines.append(f"{agent} has not run yet here (:LouiseChat {agent} starts it)")
                return lines
            lines.append("(not running)")
            if runtime.last_stderr:
                lines.append("")
                lines.append("## stderr of its last run (tail)")
                lines.extend(runtime.last_stderr.splitlines())
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


HOST_LOST = "the session host went away (it stopped or crashed)"


def host_lost_message(attach_stderr: str) -> str:
    """One line for the end of an Agent reached through the session host: what `louise
    attach` said last (its own line), else that the host went away."""
    for line in reversed(attach_stderr.strip().splitlines()):
        said = line.removeprefix("louise attach: ").strip()
        if line.startswith("louise attach: ") and said:
            return said
    return HOST_LOST
