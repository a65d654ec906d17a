"""The session registry: configured Agents → agent processes → live sessions.

One ACP connection per configured Agent, started on first use and shared by that Agent's
sessions. Each session's state lives in a `louise.session.Session`; every change reaches
subscribers as a typed event, in order. Permission requests go through one
`PermissionBroker`. Account limits are observed per Agent (see `louise.limits` and the
contract in docs/account-limits-v1.md) and written to the cross-process cache.

Runs on one anyio event loop: `async with SessionRegistry(config) as registry: ...`.
Nothing here imports pynvim; an editor plugs in through `BufferEditor` and a
`PermissionDecider`. This module holds only the facade, `SessionRegistry`: here it
builds the parts, hands each what it needs, wires the agents' connections to them and
owns the shutdown; the API callers use is inherited from `session_api.py` (sessions,
turns, settings) and `agent_api.py` (Agents' processes, sign-in, limits), which delegate
to the parts. Callers import the rest (events, errors) from the parts' own modules.
Where each behaviour lives: ARCHITECTURE.md.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup

from louise.acp.handlers import ClientHandlers
from louise.acp.process import AgentCommand
from louise.acp.schema import ParsedUpdate
from louise.acp.spawn import EarlyAgent
from louise.config.agents import AgentConfig
from louise.config.host import FrontEndName, attach_launch
from louise.config.model import Config
from louise.permissions.broker import PermissionBroker, PermissionDecider, PermissionRequest
from louise.permissions.rules import PermissionMemory
from louise.registry import host_notes
from louise.registry.agent_api import AgentApi
from louise.registry.agents import AgentSupervisor, ReadPace
from louise.registry.checkpoint_hooks import TurnCheckpoints
from louise.registry.elicitation import AgentElicitations, Elicitor
from louise.registry.events import (
    AgentStatus,
    Emitter,
    Listener,
    PermissionQueueChanged,
    RegistryEvent,
    SessionAdded,
)
from louise.registry.gate import UnaskedGate
from louise.registry.governor import Governor
from louise.registry.limits_observer import LimitsObserver
from louise.registry.records import (
    LOUISE_CLIENT_META,
    AgentRuntime,
    SessionTable,
    session_key,
)
from louise.registry.routing import BufferEditor, FsRouter, TerminalRouter
from louise.registry.session_api import SessionApi
from louise.registry.sessions import Sessions
from louise.registry.settings import SessionSettings
from louise.registry.signin import SignIn, SignInPrompter
from louise.registry.transcripts import TRANSCRIPT_MAX_BYTES, TranscriptWriter
from louise.registry.turn_hooks import TurnHooks
from louise.registry.turn_permissions import TurnPermissions
from louise.registry.turns import Turns
from louise.session import SessionBounds
from louise.storage import paths
from louise.storage.limits_cache import LimitsCache
from louise.storage.remembered import Remembered

log = logging.getLogger("louise.registry")

_DEFAULT: Any = object()
# Of a shutdown's budget, kept for the last transcript records and the fsync after the
# agents are stopped (what the turns wrote is on disk before the agents are asked).
FINAL_WRITE_RESERVE = 0.05


class SessionRegistry(SessionApi, AgentApi):
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
        sign_in: SignInPrompter | None = None,
        elicitor: Elicitor | None = None,
        read_pace: ReadPace | None = None,
        merge_text_chunks: bool = False,
        checkpoints: TurnHooks | None = None,
        park_on_quota: bool = False,
        remembered: Remembered | None = _DEFAULT,
        early_agent: EarlyAgent | None = None,
    ) -> None:
        """`read_pace`: awaited between reads of an agent that streams notifications a
        few at a time (the Neovim engine reads them once per frame); None reads at once.
        `merge_text_chunks`: one message's text chunks read at once reach the session
        model as one (`ClientHandlers.merge_text_chunks`; the engine, whose paced reads
        take a frame's chunks at once). `park_on_quota`: a turn refused for quota waits
        for the reset and goes again (`[limits] park` can turn it off); otherwise its
        `prompt()` raises `QuotaRefused` (the CLI without `--wait`). `checkpoints`: what
        records the workspace around each turn (`louise.checkpoints.Checkpoints`;
        `checkpoint_hooks.py`), or None. `remembered`: sessions' names and each Agent's
        last slash commands kept across sessions (`louise.storage.remembered`), or None.
        `early_agent`: an agent process spawned before louise's modules were loaded
        (`louise.acp.spawn`), taken by the first agent start that spawns exactly it (else
        stopped then; `discard_early_agent` stops one nothing took)."""
        self._merge_text_chunks = merge_text_chunks
        self.config = config
        self.editor = editor
        self.elicitor = elicitor
        self.clock = clock
        self.bounds = bounds
        self.grace_seconds = grace_seconds
        self.limits_cache = LimitsCache() if limits_cache is _DEFAULT else limits_cache
        memory = PermissionMemory() if permission_memory is _DEFAULT else permission_memory
        self.transcripts_dir = (paths.state_dir() / "transcripts"
                                if transcripts_dir is _DEFAULT else transcripts_dir)
        self._emitter = Emitter()
        front_end: FrontEndName = "nvim" if editor is not None else "cli"
        self._table = SessionTable({
            name: AgentRuntime(name, _command(agent),
                               launch=_command_or_none(
                                   attach_launch(config.host, name, agent, front_end)))
            for name, agent in config.agents.items()})
        self.broker = PermissionBroker(
            decider, memory=memory, policy=config.permissions, roots_for=self._roots_for,
            on_change=self._permission_queue_changed)
        self._transcripts = TranscriptWriter(self.transcripts_dir, clock,
                                             max_bytes=TRANSCRIPT_MAX_BYTES)
        self._limits = LimitsObserver(self._table, self._emitter, self.limits_cache, clock)
        self._governor = Governor(self._table, self._emitter, self._limits, self.limits_cache,
                                  config.limits, clock, park=park_on_quota)
        self._agents = AgentSupervisor(
            self._table, self._emitter, self.broker, config, grace_seconds=grace_seconds,
            handlers_for=self._handlers, on_lost=self._on_lost, read_pace=read_pace,
            early_agent=early_agent)
        self._sessions = Sessions(
            self._table, self._emitter, self._agents, self._transcripts, self.broker, config,
            bounds=bounds, on_source_changed=self._limits.source_changed,
            remembered=Remembered() if remembered is _DEFAULT else remembered)
        self.checkpoints = TurnCheckpoints(self._table, self._emitter, self._transcripts,
                                           checkpoints)
        self._permissions = TurnPermissions(self._table, self._emitter, self._transcripts,
                                            self.broker)
        self._turns = Turns(self._table, self._emitter, self._agents, self._sessions,
                            self._transcripts, self._permissions, grace_seconds=grace_seconds,
                            idle_timeout_for=config.prompt_idle_timeout_for,
                            on_prompt_error=self._limits.on_prompt_error,
                            governor=self._governor,
                            checkpoints=self.checkpoints if checkpoints is not None else None)
        self._settings = SessionSettings(self._table, self._emitter, self._agents,
                                         self._sessions, self._transcripts,
                                         on_settings_changed=self._limits.request_refresh)
        self._gate = UnaskedGate(self._permissions, enabled=config.permissions.gate_unasked)
        self._sign_in = SignIn(self._table, self._emitter, self._agents, self._sessions,
                               sign_in)
        self._emitter.on_status(self._limits.on_status)
        if checkpoints is not None:
            self._emitter.subscribe(self._session_opened, (SessionAdded,))
        self._emitter.subscribe(self._agent_started, (AgentStatus,))
        self._task_group: TaskGroup | None = None
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._agents.bind(self._task_group)
        self._sessions.bind(self._task_group)
        self._task_group.start_soon(self._transcripts.run)
        if self.checkpoints.hooks is not None:
            self.checkpoints.hooks.bind(self._task_group)
        await self._limits.start(self._task_group)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        await self.aclose()
        # What still waits for the limits cache's lock gives up now (that update is lost,
        # the file intact): leaving keeps the exit budget, not the lock's 30 s timeout.
        self._limits.abandon()
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
        return await self._task_group.__aexit__(exc_type, exc, tb)

    async def aclose(self, deadline: float | None = None) -> None:
        """Shut down, owning the whole exit budget when given a `deadline` (anyio's clock):
        what must not be lost goes first, the transcripts written and the limits cache
        (with this process's liveness records dropped); then every session is closed (at
        the agent too, `session/close`, where it can) and every agent process stopped
        within what is left, its process group killed by then if it has not gone; last,
        the records of the closing are written and the transcripts made durable. Without
        a deadline each step takes its usual grace."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            agents_by = None
            if deadline is not None:
                agents_by = deadline - min(FINAL_WRITE_RESERVE,
                                           max(0.0, deadline - anyio.current_time()) / 4)
            await self._transcripts.flush(deadline)
            await self._limits.aclose(deadline)
            finished = await self._turns.close_at_agents(agents_by)
            for runtime in self._table.runtimes.values():
                for live in list(runtime.sessions):
                    self._emitter.emit_all(live.model.close())
                    if live.terminals is not None:
                        await live.terminals.__aexit__(None, None, None)
                self.broker.cancel_agent(runtime.name)
            await self._agents.aclose(finished, agents_by)
            if self.checkpoints.hooks is not None:  # the last turn's snapshot, its line
                # Within the exit budget: a snapshot cut short leaves that turn's review
                # incomplete, never a transcript or the cache unwritten.
                with anyio.CancelScope(deadline=math.inf if agents_by is None
                                       else agents_by):
                    await self.checkpoints.hooks.aclose()
            await self._transcripts.aclose(deadline)

    # ------------------------------------------------------------------ wiring

    def _handlers(self, runtime: AgentRuntime) -> ClientHandlers:
        fs = self.config.fs_for(runtime.name)
        terminal = self.config.terminal_for(runtime.name)
        return ClientHandlers(
            merge_text_chunks=self._merge_text_chunks,
            on_update=partial(self._on_update, runtime),  # (no lambda's frame per update)
            request_permission=lambda params: self._permissions.on_permission(runtime, params),
            fs_read=fs.read,
            fs_write=fs.write,
            fs=FsRouter(self._table, runtime.name, self.editor, self._gate)
            if (fs.read or fs.write) else None,
            terminal=TerminalRouter(self._table, runtime.name, self._gate)
            if terminal.enabled else None,
            on_ext_notification=lambda method, params: self._on_ext(runtime, method, params),
            client_meta=LOUISE_CLIENT_META,
            quota=True,
            terminal_auth=self._sign_in.prompter is not None
            and self._sign_in.prompter.terminal,
            elicitation=AgentElicitations(self._table, self._emitter, runtime, self.elicitor)
            if self.elicitor is not None else None,
        )

    async def _on_ext(self, runtime: AgentRuntime, method: str, params: Any) -> None:
        if method == host_notes.PERMISSION_ANSWERED and runtime.launch is not None:
            answered = host_notes.permission_answered(params)
            live = self._table.find(runtime.name, answered.session_id) if answered else None
            if answered is not None and live is not None:
                if answered.tool_call_id is not None and answered.outcome is not None:
                    self._permissions.answered_elsewhere(live, answered.tool_call_id,
                                                         answered.outcome, answered.option_kind)
                self._emitter.emit_all(live.model.add_notice("info", answered.line))
            return
        if method == host_notes.TURN_ENDED and runtime.launch is not None:
            ended = host_notes.turn_ended(params)
            live = self._table.find(runtime.name, ended[0]) if ended else None
            if ended is not None and live is not None:
                self._emitter.emit_all(live.model.add_notice("info", ended[1]))
                self._emitter.emit_all(live.model.end_watched_turn())
            return
        await self._limits.on_ext(runtime, method, params)

    def _on_update(self, runtime: AgentRuntime, acp_id: str, update: ParsedUpdate) -> None:
        if update.kind == host_notes.PROMPT_RELAYED and runtime.launch is not None:
            # The host relays another window's prompt: its turn runs (`_louise/turn_ended`
            # ends it). A session prompting itself is left as it is.
            live = self._table.find(runtime.name, acp_id)
            if live is not None and live.attaching is None:
                self._emitter.emit_all(live.model.watch_turn())
        self._sessions.on_update(runtime, acp_id, update)
        self._limits.on_update(runtime, acp_id, update)  # quota_update, rate-limit `_meta`
        self.checkpoints.on_update(runtime, acp_id, update)  # files its tool calls name
        if update.kind not in ("quota_update", "usage_update"):  # those come with refusals
            self._governor.on_activity(session_key(runtime.name, acp_id))

    def _session_opened(self, event: RegistryEvent) -> None:
        if isinstance(event, SessionAdded):
            self.checkpoints.session_opened(event.session_id, event.cwd)

    def _agent_started(self, event: RegistryEvent) -> None:
        if isinstance(event, AgentStatus) and event.state == "running":
            self._limits.on_agent_running(event.agent)

    def _on_lost(self, runtime: AgentRuntime, message: str) -> None:
        self._sessions.fail_all(runtime, message)
        self._limits.source_changed(runtime)

    def _roots_for(self, request: PermissionRequest) -> list[str]:
        live = self._table.sessions.get(request.session_id)
        roots = list(self.config.fs_for(request.agent).roots)
        return [live.cwd, *roots] if live is not None else [request.workspace, *roots]

    def _permission_queue_changed(self) -> None:
        self._emitter.emit(PermissionQueueChanged(tuple(self.broker.pending())))

    # ------------------------------------------------------------------ events

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Receive every registry event, in order, on the engine loop (must not block).
        After `SessionReplaced`, look the session up again: its model is a new object."""
        return self._emitter.subscribe(listener)


def _command(agent: AgentConfig) -> AgentCommand:
    return AgentCommand(agent.command, tuple(agent.args), dict(agent.env), agent.cwd)


def _command_or_none(agent: AgentConfig | None) -> AgentCommand | None:
    return None if agent is None else _command(agent)
