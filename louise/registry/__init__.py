"""The session registry: configured Agents → agent processes → live sessions.

One ACP connection per configured Agent, started on first use and shared by that Agent's
sessions. Each session's state lives in a `louise.session.Session`; every change reaches
subscribers as a typed event, in order. Permission requests go through one
`PermissionBroker`. Account limits are observed per Agent (see `louise.limits` and the
contract in docs/account-limits-v1.md) and written to the cross-process cache.

Runs on one anyio event loop: `async with SessionRegistry(config) as registry: ...`.
Nothing here imports pynvim; an editor plugs in through `BufferEditor` and a
`PermissionDecider`. This module holds only the facade, `SessionRegistry`, which builds
the parts and hands each what it needs; callers import the rest (events, errors) from
the parts' own modules. Where each behaviour lives: ARCHITECTURE.md.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
from anyio.abc import TaskGroup

from louise import limits as lim
from louise.acp.auth import AuthMethod
from louise.acp.connection import AgentConnection
from louise.acp.handlers import ClientHandlers
from louise.acp.process import AgentCommand
from louise.acp.schema import ParsedUpdate
from louise.capabilities.terminal import TerminalHost
from louise.config.agents import AgentConfig
from louise.config.host import FrontEndName, attach_launch
from louise.config.model import Config
from louise.permissions.broker import PermissionBroker, PermissionDecider, PermissionRequest
from louise.permissions.rules import PermissionMemory
from louise.registry import host_notes
from louise.registry.agent_sessions import (
    AgentListing,
    delete_at_agent,
    fork_at_agent,
    list_at_agent,
    list_everywhere,
)
from louise.registry.agents import AgentSupervisor, ReadPace
from louise.registry.checkpoint_hooks import TurnCheckpoints
from louise.registry.defaults import apply_defaults
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
from louise.registry.person_modes import mode_covers
from louise.registry.prompt_content import Chip
from louise.registry.records import (
    LOUISE_CLIENT_META,
    AgentRuntime,
    RegistryError,
    SessionTable,
    session_key,
)
from louise.registry.routing import BufferEditor, FsRouter, TerminalRouter
from louise.registry.sessions import Sessions
from louise.registry.settings import SessionSettings
from louise.registry.signin import SignIn, SignInPrompter
from louise.registry.transcripts import TRANSCRIPT_MAX_BYTES, TranscriptWriter
from louise.registry.turn_hooks import TurnHooks
from louise.registry.turn_permissions import TurnPermissions
from louise.registry.turns import Turns, steering_supported
from louise.session import Session, SessionBounds
from louise.storage import paths
from louise.storage.limits_cache import LimitsCache
from louise.storage.remembered import Remembered

log = logging.getLogger("louise.registry")

_DEFAULT: Any = object()
# Of a shutdown's budget, kept for the last transcript records and the fsync after the
# agents are stopped (what the turns wrote is on disk before the agents are asked).
FINAL_WRITE_RESERVE = 0.05
T = TypeVar("T")


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
        sign_in: SignInPrompter | None = None,
        elicitor: Elicitor | None = None,
        read_pace: ReadPace | None = None,
        merge_text_chunks: bool = False,
        checkpoints: TurnHooks | None = None,
        park_on_quota: bool = False,
        remembered: Remembered | None = _DEFAULT,
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
        last slash commands kept across sessions (`louise.storage.remembered`), or None."""
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
            handlers_for=self._handlers, on_lost=self._on_lost, read_pace=read_pace)
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
            self._emitter.subscribe(self._session_opened)
        self._emitter.subscribe(self._agent_started)
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

    def kill_agents(self) -> None:
        """SIGKILL every agent's process group at once, from any thread (it only sends
        signals): for a process that leaves before `aclose` could finish."""
        self._agents.kill_all()

    # ------------------------------------------------------------------ wiring

    def _handlers(self, runtime: AgentRuntime) -> ClientHandlers:
        fs = self.config.fs_for(runtime.name)
        terminal = self.config.terminal_for(runtime.name)
        return ClientHandlers(
            merge_text_chunks=self._merge_text_chunks,
            on_update=lambda sid, update: self._on_update(runtime, sid, update),
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
            return
        await self._limits.on_ext(runtime, method, params)

    def _on_update(self, runtime: AgentRuntime, acp_id: str, update: ParsedUpdate) -> None:
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

    # ------------------------------------------------------------------ queries

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Receive every registry event, in order, on the engine loop (must not block).
        After `SessionReplaced`, look the session up again: its model is a new object."""
        return self._emitter.subscribe(listener)

    def agent_names(self) -> list[str]:
        return list(self._table.runtimes)

    def runtime(self, agent: str) -> AgentRuntime:
        return self._table.runtime(agent)

    def session(self, session_id: str) -> Session:
        return self._table.live(session_id).model

    def sessions(self, agent: str | None = None) -> list[Session]:
        return [live.model for live in self._table.sessions.values()
                if agent is None or live.agent == agent]

    def terminal_host(self, session_id: str) -> TerminalHost | None:
        return self._table.live(session_id).terminals

    def transcript_path(self, session_id: str) -> Path | None:
        transcript = self._table.live(session_id).transcript
        return transcript.path if transcript is not None else None

    async def flush_transcripts(self) -> None:
        """Returns when every transcript record queued so far is written."""
        await self._transcripts.flush()

    def agent_log(self, agent: str) -> list[str]:
        """The agent's stderr tail and the protocol errors of its connection."""
        return self._agents.agent_log(agent)

    # ------------------------------------------------------------------ agents, sessions

    async def connection(self, agent: str) -> AgentConnection:
        """The Agent's live, initialized connection; (re)starts the process when needed."""
        return await self._agents.connection(agent)

    async def new_session(self, agent: str | None = None, cwd: str | None = None) -> Session:
        """Create a session on an Agent (default: the configured default Agent), with the
        Agent's `defaults` (mode, model, thought level) applied."""
        name = agent or self.config.default_agent
        session = await self._sessions.new_session(name, cwd)
        defaults = self.config.agent(name).defaults
        if defaults is not None:
            await apply_defaults(self._table, self._emitter, self._settings, session.session_id,
                                 defaults)
        return self._table.live(session.session_id).model

    async def load_session(self, agent: str, session_id: str, cwd: str | None = None
                           ) -> Session:
        """`session/load` of the agent's session id: its replay of the history fills a
        fresh model (an open session's model is replaced: `SessionReplaced`)."""
        return await self._sessions.open_session(agent, session_id, cwd, "load")

    async def resume_session(self, agent: str, session_id: str, cwd: str | None = None
                             ) -> Session:
        """`session/resume` (no replay; an open session keeps its model)."""
        return await self._sessions.open_session(agent, session_id, cwd, "resume")

    async def reattach(self, session_id: str, cwd: str | None = None) -> Session:
        """A session louise had, after its agent's process died (it is here) or louise's
        own (it is not: it is opened in `cwd`): the one path attaches it where the agent
        can (load, else resume); otherwise the session fails with a clear message."""
        live = self._table.sessions.get(session_id)
        if live is not None:
            return await self._sessions.attach(live, "reattach")
        agent, _, acp_id = session_id.partition(":")
        if not acp_id:
            raise RegistryError(f"unknown session {session_id!r}")
        return await self._sessions.open_session(agent, acp_id, cwd, "reattach")

    def approved_by_mode(self, session_id: str) -> frozenset[str]:
        """What the mode the person picked approves in this session now (`edit`,
        `execute`; empty when the session is not in a mode the person picked)."""
        live = self._table.sessions.get(session_id)
        if live is None or live.person_mode != live.model.current_mode:
            return frozenset()
        return mode_covers(live.person_mode)

    async def list_sessions(self, agent: str, cwd: str | None = None) -> list[dict[str, Any]]:
        """The agent's own list (`session/list`), or for an agent that loads sessions but
        cannot list them, the sessions louise recorded for it (`recorded.py`)."""
        return await list_at_agent(await self.connection(agent), self._sessions, agent, cwd,
                                   self.transcripts_dir or paths.state_dir() / "transcripts")

    async def list_all_sessions(self, cwd: str | None = None,
                                agents: Sequence[str] | None = None,
                                on_listed: Callable[[AgentListing], None] | None = None
                                ) -> list[AgentListing]:
        """The sessions of every configured Agent (or those named), side by side: each
        started only if not running yet; one that cannot list gives its error instead.
        `on_listed` gets each Agent's listing as it ends."""
        names = list(agents) if agents is not None else self.agent_names()
        timeout = max(self.config.request_timeout * 2, 60.0)  # includes starting it
        return await list_everywhere(self._table, names,
                                     lambda agent: self.list_sessions(agent, cwd), timeout,
                                     on_listed)

    async def delete_session(self, agent: str, acp_id: str) -> None:
        """`session/delete` (only where advertised); one open here is closed first."""
        await delete_at_agent(self._table, await self.connection(agent), agent, acp_id,
                              self._turns.close_session)

    async def fork_session(self, agent: str, acp_id: str, cwd: str | None = None) -> Session:
        """`session/fork` (only where advertised): a new session with the same history."""
        await self.connection(agent)
        return await fork_at_agent(self._table, self._sessions, agent, acp_id, cwd,
                                   self._turns.close_session)

    async def close_session(self, session_id: str) -> None:
        """Close a session (cancelling its turn first), at the agent too where it supports
        `session/close`."""
        await self._turns.close_session(session_id)

    # ------------------------------------------------------------------ turns

    async def prompt(self, session_id: str, prompt: str | Sequence[Mapping[str, Any]],
                     context: Sequence[Chip] = ()) -> str:
        """Run one turn and return its stop reason. `context` chips (buffer, file,
        selection, diagnostics) become content the agent's prompt capabilities allow."""
        return await self._turns.prompt(session_id, prompt, context)

    async def cancel(self, session_id: str) -> None:
        await self._turns.cancel(session_id)

    def edit_queued(self, session_id: str, item_id: int, text: str) -> None:
        """Replace the text of a prompt waiting in the session's queue."""
        self._turns.edit_queued(session_id, item_id, text)

    def remove_queued(self, session_id: str, item_id: int) -> None:
        """Take a prompt off the queue (its `prompt()` raises PromptWithdrawn)."""
        self._turns.remove_queued(session_id, item_id)

    async def send_queued_now(self, session_id: str, item_id: int) -> None:
        """Cancel the running turn and run this queued prompt next."""
        await self._turns.send_queued_now(session_id, item_id)

    async def steer_queued(self, session_id: str, item_id: int) -> None:
        """Send a queued prompt into the running turn, where the agent offers steering
        (its `prompt()` then returns STEERED)."""
        await self._turns.steer_queued(session_id, item_id)

    def steering(self, agent: str) -> bool:
        """Whether the Agent's running process takes prompts into a running turn."""
        initialized = self._table.runtime(agent).initialized
        return initialized is not None and steering_supported(initialized.raw)

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        await self._settings.set_mode(session_id, mode_id)

    async def set_config_option(self, session_id: str, config_id: str, value: str | bool
                                ) -> None:
        await self._settings.set_config_option(session_id, config_id, value)

    async def set_model(self, session_id: str, model_id: str) -> None:
        """The session's model: its model config option, else the legacy
        `session/set_model` where the agent listed `models`."""
        await self._settings.set_model(session_id, model_id)

    def rename(self, session_id: str, name: str) -> str | None:
        """Name a session (`SessionRenamed`); an empty name clears it. Returns the name."""
        return self._settings.rename(session_id, name)

    # ------------------------------------------------------------------ signing in

    async def auth_methods(self, agent: str) -> list[AuthMethod]:
        """The sign-in methods the Agent advertises (starts its process if needed)."""
        return await self._sign_in.methods(agent)

    async def sign_in(self, agent: str, method_id: str | None = None,
                      reason: str = "") -> bool:
        """Sign in to an Agent: `authenticate` for a method the agent handles; a terminal
        method's command (shown to the person and run only on their say-so, through the
        `SignInPrompter`), then a restart. Without `method_id` the person picks. True when
        signed in, False when declined; RegistryError when it failed."""
        return await self._sign_in.sign_in(agent, method_id, reason)

    async def logout(self, agent: str) -> None:
        """`logout` where the Agent advertises it (RegistryError otherwise)."""
        await self._sign_in.logout(agent)

    async def with_sign_in(self, agent: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Run `operation`; if the agent requires authentication (and a prompter is
        there), let the person sign in, then run it once more."""
        return await self._sign_in.retrying(agent, operation)

    # ------------------------------------------------------------------ limits

    def inspect_limits(self, agent: str, now: float | None = None) -> lim.LimitsState:
        """The Agent's limits state by the spec's inspection rules; starts nothing."""
        return self._limits.inspect(agent, now)

    async def refresh_limits(self, agent: str) -> lim.LimitsState:
        """Read the Agent's limits through its first capable live session (see
        `LimitsObserver.refresh`)."""
        return await self._limits.refresh(agent)

    @property
    def governor(self) -> Governor:
        """Budgets, turn costs (`cost_lines`), parked turns (`parked`, `unpark`) and the
        risk of the next turn (`risk`): louise/registry/governor.py."""
        return self._governor

    def unpark(self, session_id: str) -> bool:
        """Undo a park: the parked prompt is not sent again (its `prompt()` raises
        PromptWithdrawn) and the queue behind it goes on. False when not parked."""
        return self._governor.unpark(self._table.live(session_id))

    def limits_pace(self, agent: str) -> lim.PaceHistory | None:
        """The Agent's pace samples this process observed (`render_detail(pace=…)`,
        `lim.pace_alerts`); None before its first fresh figures."""
        self._table.runtime(agent)  # unknown agent: RegistryError
        return self._limits.pace_history(agent)


def _command(agent: AgentConfig) -> AgentCommand:
    return AgentCommand(agent.command, tuple(agent.args), dict(agent.env), agent.cwd)


def _command_or_none(agent: AgentConfig | None) -> AgentCommand | None:
    return None if agent is None else _command(agent)
