"""Sessions: creating one, and the one attach path that `session/load`, `session/resume`
and the reattach after an agent crash all take; routing the agent's updates to them.

A `session/load` replays the agent's history into a *fresh* model that replaces the old
one when the load succeeds (subscribers get `SessionReplaced`), so a replay never
duplicates what the chat already showed. A resume replays nothing and keeps the model
(unless the agent replays anyway: then that replay replaces it too). A failed attach fails
the session with a message that says what failed and why.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from louise.acp.connection import SessionSetup
from louise.acp.errors import AcpError, RpcError
from louise.acp.schema import ParsedUpdate, parse_update
from louise.capabilities.fs import FileAccess
from louise.capabilities.terminal import MAX_OUTPUT_BYTE_LIMIT, TerminalHost
from louise.config.model import Config
from louise.permissions.broker import PermissionBroker
from louise.registry import host_notes
from louise.registry.agent_quirks import HISTORY_WAIT, history_after_load
from louise.registry.agents import AgentSupervisor
from louise.registry.attachments import instructions_file
from louise.registry.events import Emitter, SessionAdded, SessionRemoved
from louise.registry.mcp import mcp_servers
from louise.registry.records import (
    MAX_EARLY_SESSIONS,
    MAX_EARLY_UPDATES,
    AgentRuntime,
    LiveSession,
    Opening,
    RegistryError,
    SessionTable,
    describe_error,
    describe_rpc_error,
    session_key,
)
from louise.registry.transcripts import TranscriptWriter
from louise.session import Session, SessionBounds, SessionReplaced
from louise.session.agent_notes import PROGRESS_KINDS
from louise.storage.remembered import Remembered

log = logging.getLogger("louise.registry")

AttachKind = Literal["load", "resume", "reattach"]
COMMANDS_UPDATE = "available_commands_update"


class Sessions:
    """Session creation, attachment, update routing and removal."""

    def __init__(self, table: SessionTable, emitter: Emitter, agents: AgentSupervisor,
                 transcripts: TranscriptWriter, broker: PermissionBroker, config: Config, *,
                 bounds: SessionBounds | None,
                 on_source_changed: Callable[[AgentRuntime], None],
                 remembered: Remembered | None = None) -> None:
        self._table = table
        self._remembered = remembered
        self._emitter = emitter
        self._agents = agents
        self._transcripts = transcripts
        self._broker = broker
        self._config = config
        self._bounds = bounds
        self._on_source_changed = on_source_changed
        self._task_group: TaskGroup | None = None

    def bind(self, task_group: TaskGroup) -> None:
        """The task group session terminals run in (the registry's)."""
        self._task_group = task_group

    # ------------------------------------------------------------------ creating

    def _create(self, runtime: AgentRuntime, acp_id: str, cwd: str) -> LiveSession:
        self._table.refuse_open(runtime, acp_id)  # before anything is made for it
        fs = self._config.fs_for(runtime.name)
        terminal = self._config.terminal_for(runtime.name)
        file_access = FileAccess([cwd, *fs.roots]) if (fs.read or fs.write) else None
        terminals = TerminalHost(cwd, output_byte_limit=terminal.output_byte_limit,
                                 task_group=self._task_group) if terminal.enabled else None
        # The output of a command the agent runs itself is kept as a terminal's would be.
        bounds = replace(self._bounds or SessionBounds(), max_agent_terminal_bytes=min(
            terminal.output_byte_limit, MAX_OUTPUT_BYTE_LIMIT))
        model = Session(session_key(runtime.name, acp_id), runtime.name, cwd, bounds,
                        acp_id=acp_id)
        if self._remembered is not None:  # the person's name for it survives close
            model.rename(self._remembered.name(runtime.name, acp_id) or "")
        live = LiveSession(model, runtime.name, cwd, file_access, terminals,
                           transcript=self._transcripts.open(runtime.name, acp_id))
        self._table.add(runtime, live)
        self._emitter.emit(SessionAdded(live.session_id, live.agent, live.cwd))
        return live

    def _record_attach(self, live: LiveSession, attach: str) -> None:
        self._transcripts.record(live.transcript, {
            "type": "session", "agent": live.agent, "cwd": live.cwd, "sessionId": live.acp_id,
            "attach": attach})

    async def new_session(self, agent: str, cwd: str | None = None) -> Session:
        """Create a session on an Agent.

        An agent's refusal (authentication required, …) raises RegistryError with a message
        for a person (the sign-in methods it offers); the RpcError is its __cause__."""
        runtime = self._table.runtime(agent)
        cwd = self.absolute_cwd(cwd, runtime)
        connection = await self._agents.connection(runtime.name)
        mcp = mcp_servers(self._config, runtime)
        try:
            setup = await connection.new_session(
                cwd, mcp_servers=mcp.servers,
                additional_directories=self.additional_directories(runtime.name, cwd),
                meta=self._config.agent(runtime.name).session_meta)
        except RpcError as exc:
            raise RegistryError(describe_rpc_error(exc, runtime)) from exc
        live = self._create(runtime, setup.session_id, cwd)
        self._record_attach(live, "new")
        self._adopt(runtime, live, setup)
        for note in mcp.notes:
            self._emitter.emit_all(live.model.add_notice("info", note))
        live.instructions = instructions_file(self._config.context.instructions_file, cwd)
        if live.instructions is not None:
            self._emitter.emit_all(live.model.add_notice(
                "info", f"{self._config.context.instructions_file} goes with your first "
                        "prompt (context.instructions_file)"))
        return live.model

    async def open_session(self, agent: str, acp_id: str, cwd: str | None,
                           kind: AttachKind) -> Session:
        """`session/load` or `session/resume` of an agent's session id (`reattach`: load
        where the agent can, else resume): a session not open here is added; an open one
        is attached again (refused while a turn runs). While
        one caller opens a key, another for the same key waits and gets its outcome (the
        same session, or the same error): one attach, one live session."""
        runtime = self._table.runtime(agent)
        key = session_key(runtime.name, acp_id)
        while (pending := self._table.opening.get(key)) is not None:
            await pending.done.wait()
            if pending.session is not None:
                return pending.session
            if pending.error is not None:
                raise RegistryError(pending.error)
            # The first caller was interrupted: this one opens it itself.
        opening = self._table.opening[key] = Opening()
        try:
            opening.session = await self._open(runtime, acp_id, cwd, kind)
            return opening.session
        except RegistryError as exc:
            opening.error = str(exc)
            raise
        finally:
            del self._table.opening[key]
            opening.done.set()

    async def _open(self, runtime: AgentRuntime, acp_id: str, cwd: str | None,
                    kind: AttachKind) -> Session:
        live = self._table.find(runtime.name, acp_id)
        if live is None:
            cwd = self.absolute_cwd(cwd, runtime)
            await self._agents.connection(runtime.name)  # fails before a session is added
            live = self._create(runtime, acp_id, cwd)
        elif live.model.in_turn and not live.model.watching:
            raise RegistryError(f"{live.session_id} is in a turn; cancel it or wait for it "
                                f"before you {kind} it again")
        return await self.attach(live, kind)

    # ------------------------------------------------------------------ the attach path

    async def attach(self, live: LiveSession, kind: AttachKind) -> Session:
        """Attach an existing session to the Agent's (possibly restarted) process.

        `reattach` loads where the agent can, else resumes. Raises RegistryError, with the
        session failed, when the agent cannot or will not attach it."""
        async with live.attach_lock:
            runtime = self._table.runtime(live.agent)
            if kind == "reattach" and live.model.status not in ("error", "starting") \
                    and runtime.connected:
                return live.model  # another caller reattached it meanwhile
            try:
                connection = await self._agents.connection(live.agent)
            except (AcpError, OSError) as exc:
                raise self._failed(live, runtime, kind, exc) from exc
            init = runtime.initialized
            method: Literal["load", "resume"] | None = None
            if init is not None and kind in ("load", "reattach") and init.load_session:
                method = "load"
            elif init is not None and kind in ("resume", "reattach") \
                    and init.session_capability("resume"):
                method = "resume"
            if method is None:
                wanted = {"load": "session/load", "resume": "session/resume",
                          "reattach": "session/load or session/resume"}[kind]
                raise self._failed(live, runtime, kind, RegistryError(
                    f"{live.agent} does not support {wanted}; start a new session"))
            try:
                mcp = mcp_servers(self._config, runtime)
            except RegistryError as exc:
                raise self._failed(live, runtime, kind, exc) from exc
            old = live.model
            self._emitter.emit_all(old.mark_starting())
            # Whatever the agent replays fills a fresh model, unseen until it replaces the
            # old one. A resume replays nothing (per the spec): the old model stays, and
            # the updates it did send (commands, usage) are applied to it.
            fresh = old.fresh()
            fresh.begin_replay()
            live.attaching = fresh
            live.attach_updates = [] if method == "resume" else None
            self._record_attach(live, method)
            directories = self.additional_directories(live.agent, live.cwd)
            # Armed before the request: the history's end can come in the same read as
            # the answer, and be applied before this task runs again.
            late = self._watch_late_history(runtime, live) if method == "load" else None
            try:
                meta = self._config.agent(live.agent).session_meta
                if method == "load":
                    setup = await connection.load_session(
                        live.acp_id, live.cwd, mcp_servers=mcp.servers,
                        additional_directories=directories, meta=meta)
                else:
                    setup = await connection.resume_session(
                        live.acp_id, live.cwd, mcp_servers=mcp.servers,
                        additional_directories=directories, meta=meta)
            except anyio.get_cancelled_exc_class():
                live.attaching = live.attach_updates = live.history_end = None
                self._emitter.emit_all(old.fail(f"session/{method} was interrupted"))
                raise
            except (AcpError, OSError) as exc:
                live.attaching = live.attach_updates = live.history_end = None
                raise self._failed(live, runtime, kind, exc) from exc
            if late is not None:
                await self._late_history(live, late)
            updates, live.attaching, live.attach_updates = live.attach_updates, None, None
            if updates is None or fresh.entries or len(updates) >= MAX_EARLY_UPDATES:
                live.model = fresh
                self._emitter.emit(SessionReplaced(live.session_id))
            else:
                for update in updates:
                    self._emitter.emit_all(old.apply(update))
            self._adopt(runtime, live, setup)
            if kind == "reattach":
                done = "reloaded" if method == "load" else "resumed"
                self._emitter.emit_all(live.model.add_notice(
                    "info", f"the agent restarted; session {done}"))
            else:
                for note in mcp.notes:
                    self._emitter.emit_all(live.model.add_notice("info", note))
            return live.model

    def _watch_late_history(self, runtime: AgentRuntime,
                            live: LiveSession) -> anyio.Event | None:
        """For an agent that streams a loaded session's history after answering
        (gemini-cli): watch for the update that ends it (set by `apply`). None for an
        agent that replays before it answers."""
        init = runtime.initialized
        end = history_after_load(init.agent_info if init is not None else None)
        if end is None:
            return None
        arrived = anyio.Event()
        live.history_end = (end, arrived)
        return arrived

    async def _late_history(self, live: LiveSession, arrived: anyio.Event) -> None:
        """The late history goes on filling the fresh model until the update that ends it
        arrived (perhaps already, with the answer), or HISTORY_WAIT went by."""
        try:
            with anyio.move_on_after(HISTORY_WAIT):
                await arrived.wait()
        finally:
            live.history_end = None

    def _failed(self, live: LiveSession, runtime: AgentRuntime, kind: AttachKind,
                exc: BaseException) -> RegistryError:
        """Fail the session with a clear message; the error to raise."""
        reason = str(exc) if isinstance(exc, RegistryError) else describe_error(exc, runtime)
        message = f"could not {kind} {live.session_id}: {reason}"
        self._emitter.emit_all(live.model.fail(message))
        return RegistryError(message)

    def _adopt(self, runtime: AgentRuntime, live: LiveSession, setup: SessionSetup) -> None:
        model = live.model
        model.prompt_capabilities = {key: value is True for key, value
                                     in runtime.prompt_capabilities().items()
                                     if key in ("image", "audio", "embeddedContext")}
        self._emitter.emit_all(model.apply_setup(setup.modes, setup.config_options,
                                                 setup.models))
        for update in runtime.early.pop(live.acp_id, deque()):
            self.apply(live, update)
        if not model.commands and self._remembered is not None:
            # Until the agent sends its own (a resumed session may never): the last ones
            # it sent, so `/` completion offers them.
            commands = self._remembered.commands(live.agent)
            if commands:
                self._emitter.emit_all(model.apply(parse_update(
                    {"sessionUpdate": COMMANDS_UPDATE, "availableCommands": commands})))
        runtime.observed = True
        self._emitter.emit_all(model.mark_ready())
        if runtime.launch is not None and host_notes.turn_running(setup.raw):
            self._emitter.emit_all(model.watch_turn())  # another window's, at the host

    # ------------------------------------------------------------------ updates

    def on_update(self, runtime: AgentRuntime, acp_id: str, update: ParsedUpdate) -> None:
        live = self._table.find(runtime.name, acp_id)
        if live is None:
            # Before the reply that introduces the session (vibe does this): buffer, bounded.
            queue = runtime.early.get(acp_id)
            if queue is None:
                if len(runtime.early) >= MAX_EARLY_SESSIONS:
                    runtime.early.pop(next(iter(runtime.early)))
                queue = runtime.early[acp_id] = deque(maxlen=MAX_EARLY_UPDATES)
            queue.append(update)
            return
        live.active_at = time.time()
        if update.kind in PROGRESS_KINDS:  # the prompt watchdog's sign of life
            live.last_activity = time.monotonic()
        self.apply(live, update)

    def apply(self, live: LiveSession, update: ParsedUpdate) -> None:
        attaching = live.attaching
        if live.history_end is not None and update.kind == live.history_end[0]:
            live.history_end[1].set()
        if attaching is not None:
            attaching.apply(update)  # shown whole if it replaces the model
            if live.attach_updates is not None and len(live.attach_updates) < MAX_EARLY_UPDATES:
                live.attach_updates.append(update)
        else:
            self._emitter.emit_all(live.model.apply(update))
        self._transcripts.record_update(live.transcript, update.raw)
        if update.kind == COMMANDS_UPDATE and self._remembered is not None \
                and isinstance(commands := update.raw.get("availableCommands"), list):
            valid = [c for c in commands if isinstance(c, dict)]
            if self._remembered.remember_commands(live.agent, valid):
                self._save_remembered()

    # ------------------------------------------------------------------ remembered

    def remember_name(self, live: LiveSession) -> None:
        """The person named (or unnamed) a session: kept for when it is opened again."""
        if self._remembered is not None and \
                self._remembered.remember_name(live.agent, live.acp_id, live.model.name):
            self._save_remembered()

    def with_names(self, agent: str, listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """An agent's session list with the person's names in place of its titles."""
        if self._remembered is None:
            return listed
        out = []
        for info in listed:
            name = self._remembered.name(agent, str(info.get("sessionId")))
            out.append({**info, "title": name} if name else info)
        return out

    def _save_remembered(self) -> None:
        remembered = self._remembered
        if remembered is None:
            return
        if self._task_group is None:
            remembered.save()
        else:
            self._task_group.start_soon(anyio.to_thread.run_sync, remembered.save)

    # ------------------------------------------------------------------ removing

    def fail_all(self, runtime: AgentRuntime, message: str) -> None:
        """The Agent's process is gone: every open session of it fails."""
        for live in runtime.sessions:
            if live.model.status not in ("closed", "error"):
                self._emitter.emit_all(live.model.fail(message))

    async def forget(self, live: LiveSession) -> None:
        """Close the session here: its model, terminals and place in the table."""
        self._emitter.emit_all(live.model.close())
        if live.terminals is not None:
            await live.terminals.release_all()
        runtime = self._table.runtime(live.agent)
        self._table.remove(runtime, live)
        self._emitter.emit(SessionRemoved(live.session_id, live.agent))
        self._on_source_changed(runtime)

    async def list_sessions(self, agent: str, cwd: str | None = None) -> list[dict[str, Any]]:
        connection = await self._agents.connection(agent)
        return [info async for info in connection.list_sessions(cwd)]

    def additional_directories(self, agent: str, cwd: str) -> list[str]:
        """The `fs.roots` that exist (other than the cwd), for `additionalDirectories`:
        where the agent may work besides the cwd, as louise's own file access allows."""
        return [root for root in self._config.fs_for(agent).roots
                if root != cwd and os.path.isdir(root)]

    async def fork_session(self, agent: str, acp_id: str, cwd: str | None) -> Session:
        """`session/fork`, then the new session attached: loaded (its history replayed)
        where the agent can load sessions, else adopted as the fork's reply left it."""
        runtime = self._table.runtime(agent)
        cwd = self.absolute_cwd(cwd, runtime)
        connection = await self._agents.connection(agent)
        mcp = mcp_servers(self._config, runtime)
        try:
            setup = await connection.fork_session(acp_id, cwd, mcp_servers=mcp.servers)
        except RpcError as exc:
            raise RegistryError(describe_rpc_error(exc, runtime)) from exc
        initialized = runtime.initialized
        if initialized is not None and initialized.load_session:
            return await self.open_session(agent, setup.session_id, cwd, "load")
        live = self._create(runtime, setup.session_id, cwd)
        self._record_attach(live, "new")
        self._adopt(runtime, live, setup)
        return live.model

    @staticmethod
    def absolute_cwd(cwd: str | None, runtime: AgentRuntime) -> str:
        chosen = cwd or runtime.command.cwd or os.getcwd()
        path = os.path.abspath(os.path.expanduser(chosen))
        if not os.path.isdir(path):
            raise RegistryError(f"working directory does not exist: {path}")
        return path
