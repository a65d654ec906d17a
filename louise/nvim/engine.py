"""The engine inside Neovim's louise process: the composition root. It builds the registry
on its own loop (`host.py`) and the parts that turn its events into UI work, hands each
part the narrow things it needs (the registry, the screen, the renderer), routes registry
events to them, and answers a frame Neovim could not apply. No part imports this module.

The parts: `commands.py` (commands in from Lua), `chats.py` (chats shown, current, gone),
`render.py` (chat edits), `limits_ui.py`, `permissions.py`, `questions.py`,
`fs_conflicts.py`, `agent_terminals.py`, `prompt_queues.py`, `follow_files.py`,
`review.py`, `editor.py`; UI work goes out through the outbox (`screen.py`), one awaited
frame at a time (`frames.py`). Nothing here calls pynvim: Neovim is reached only through
`UiBridge`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import anyio

from louise.checkpoints.service import Checkpoints
from louise.config.loading import load_config_mapping
from louise.config.louiselm import warnings_message
from louise.config.problems import ConfigError
from louise.nvim import collector, early_agent
from louise.nvim.agent_terminals import AgentTerminals
from louise.nvim.bridge import LuaCaller
from louise.nvim.chat_status import status_for
from louise.nvim.chats import Chats
from louise.nvim.commands import Commands
from louise.nvim.editor import NvimEditor
from louise.nvim.engine_options import ENGINE_KEYS, default_agent_named, engine_config
from louise.nvim.follow_files import FileFollower
from louise.nvim.frames import FrameLoop
from louise.nvim.fs_conflicts import FsConflicts
from louise.nvim.host import EXIT_BUDGET_SECONDS, STOP_SLACK_SECONDS, EngineHost
from louise.nvim.limits_ui import LimitsUi
from louise.nvim.outbox import Outbox
from louise.nvim.permissions import NvimDecider
from louise.nvim.prompt_queues import PromptQueues
from louise.nvim.questions import NvimElicitor, NvimSignIn, Questions
from louise.nvim.render import ChatRenderer
from louise.nvim.review import ReviewUi
from louise.nvim.screen import Screen
from louise.registry import SessionRegistry
from louise.registry.events import (
    AgentStatus,
    LimitsChanged,
    PermissionQueueChanged,
    PromptQueueChanged,
    RegistryEvent,
    SessionAdded,
    SessionParked,
    SessionUnparked,
    SignInWaiting,
)
from louise.registry.records import RegistryError
from louise.session import (
    Event,
    MessageChunk,
    Session,
    SessionReplaced,
    TerminalReported,
    ToolCallChanged,
    TurnEnded,
)

log = logging.getLogger("louise.nvim")

MAX_RESYNCS_IN_A_ROW = 2  # a frame that keeps failing must not loop full renders
# The commands an agent may be started early for (lua/louise/engine.lua's early_agent).
EARLY_AGENT_COMMANDS = ("chat", "new")


class Engine:
    """Owns the registry, the outbox, the frame loop and the parts. `start()` from the
    pynvim thread; `submit()` forwards Lua's commands. The parts are built on the engine
    loop once the configuration is read (`_main`)."""

    def __init__(self, bridge: LuaCaller, opts: Mapping[str, Any] | None = None) -> None:
        self.bridge = bridge
        self.opts = dict(opts or {})
        self._alerts = self.opts.pop("alerts", True)  # setup{alerts = …}
        self.host = EngineHost()
        self.outbox = Outbox()
        self.renderer = ChatRenderer(self.lookup)
        self.frames = FrameLoop(bridge, self.renderer, self.outbox, self._status_for,
                                self._frame_failed)
        self.screen = Screen(self.outbox, self.frames.mark)
        self.registry: SessionRegistry | None = None
        self._stop_at: float | None = None  # the stop's deadline (time.monotonic())
        self._signing_in: dict[str, bool] = {}  # agent -> a sign-in under way (resync)
        # Until the first command that opens a chat is done, an agent started early (at
        # the process's start, early_agent.py) may be taken by it; then it is stopped.
        self._early_offered = False
        # Built in `_main`, on the engine loop:
        self.questions: Questions
        self.conflicts: FsConflicts
        self.decider: NvimDecider
        self.limits: LimitsUi
        self.chats: Chats
        self.terminals: AgentTerminals
        self.prompt_queues: PromptQueues
        self.follower: FileFollower
        self.review: ReviewUi
        self.commands: Commands

    # ------------------------------------------------------------------ thread

    def start(self) -> None:
        if not self.host.start(self._main):
            log.error("the engine did not start")

    def stop(self, deadline: float | None = None) -> None:
        """From another thread: stop by `deadline` (`time.monotonic()`; default: the exit
        budget from now). The registry's teardown owns the budget (`aclose(deadline)`);
        whatever agent is still there after it is killed, never left behind."""
        if deadline is None:
            deadline = time.monotonic() + EXIT_BUDGET_SECONDS
        self._stop_at = deadline
        self.host.stop(max(0.0, deadline - time.monotonic()) + STOP_SLACK_SECONDS)
        if self.registry is not None:
            self.registry.kill_agents()

    def submit(self, command: str, args: Mapping[str, Any]) -> None:
        """From the pynvim thread: run a command on the engine loop, never blocking."""
        if not self.host.submit(self._run_command, command, dict(args)):
            log.debug("engine stopped; dropped %s", command)

    async def _run_command(self, command: str, args: dict[str, Any]) -> None:
        try:
            await self.commands.run(command, args)
        finally:
            if self._early_offered and command in EARLY_AGENT_COMMANDS:
                # The command the agent was started early for is done: it took it, or
                # nothing will.
                self._early_offered = False
                if self.registry is not None:
                    self.registry.discard_early_agent()

    async def _main(self) -> None:
        registry = self._build()
        collector.engine_configured()
        async with registry:
            async with anyio.create_task_group() as tg:
                registry.subscribe(self._on_event)
                serve = getattr(self.bridge, "serve", None)
                if serve is not None:
                    await tg.start(serve)  # the engine's own channel to Neovim, if it can
                tg.start_soon(self.frames.run)
                tg.start_soon(self.limits.ticks)
                self.limits.push_all_labels()
                self.host.ready()
                await self.host.stopped()
                tg.cancel_scope.cancel()  # no more frames: Neovim is on its way out
            stop_at = self._stop_at  # on the engine loop's clock (anyio's) below
            await registry.aclose(None if stop_at is None else
                                  anyio.current_time() + stop_at - time.monotonic())

    def _build(self) -> SessionRegistry:
        """The configuration (a bad one says why and leaves the demo agent), the registry,
        and every part, each handed what it needs."""
        screen = self.screen
        try:
            config = engine_config(self.opts)
        except ConfigError as exc:
            config = load_config_mapping({})
            screen.notify(f"louise: configuration error; using only the demo agent.\n{exc}",
                          "error")
            early_agent.stop_started()  # a bad configuration starts nothing it names
        if config.host.enabled:  # agents are `louise attach` then, not what was started
            early_agent.stop_started()
        if config.host.enabled and config.host.via is not None:
            # The agents' files are on the far host: Neovim's buffers are not those files.
            screen.notify("louise: agents run through host_via on another machine: its "
                          "files are not Neovim's buffers (buffer-backed file access is off)",
                          "info")
        if config.warnings:
            source = "setup{}" if any(k in ENGINE_KEYS for k in self.opts) else "config.toml"
            screen.notify(warnings_message(config.warnings, source), "warn")
        checkpoints = Checkpoints(config.checkpoints) if config.checkpoints.enabled else None
        self.questions = Questions(screen)
        self.conflicts = FsConflicts(screen, self._agent_of)
        editor = NvimEditor(self.bridge, self.conflicts)
        self.decider = NvimDecider(screen, editor.buffer_text)
        early = early_agent.take_started()
        self._early_offered = early is not None
        registry = self.registry = SessionRegistry(
            config, decider=self.decider, editor=editor, sign_in=NvimSignIn(self.questions),
            elicitor=NvimElicitor(screen, self.questions), read_pace=self.frames.read_slot,
            merge_text_chunks=True, checkpoints=checkpoints, park_on_quota=True,
            early_agent=early)
        self.limits = LimitsUi(screen, registry, self._alerts)
        self.chats = Chats(screen, self.renderer, registry)
        self.terminals = AgentTerminals(screen, self.renderer, registry)
        self.prompt_queues = PromptQueues(screen, self.lookup, registry.steering)
        self.follower = FileFollower(screen, self.lookup)
        self.review = ReviewUi(screen, registry, checkpoints)
        self.commands = Commands(registry, screen, self.chats, limits=self.limits,
                                 review=self.review, decider=self.decider,
                                 questions=self.questions, conflicts=self.conflicts,
                                 default_named=default_agent_named(self.opts))
        return registry

    # ------------------------------------------------------------------ for the parts

    def notify(self, message: str, level: str = "info") -> None:
        self.screen.notify(message, level)

    def lookup(self, key: str) -> Session | None:
        if self.registry is None:
            return None
        try:
            return self.registry.session(key)
        except RegistryError:
            return None

    def _agent_of(self, key: str) -> str | None:
        session = self.lookup(key)
        return session.agent if session is not None else None

    def _status_for(self, session: Session) -> dict[str, Any]:
        """The chat header: `status_for`, and a parked turn's wait (the winbar shows it)."""
        status = status_for(session)
        approves = self.registry.approved_by_mode(session.session_id) \
            if self.registry is not None else frozenset()
        if approves:  # the person's pick of an auto-edit (or auto-everything) mode
            status["approves"] = " and ".join(
                {"edit": "edits", "execute": "commands"}[kind] for kind in sorted(approves))
        parked = self.limits.parked.get(session.session_id)
        if parked is not None:
            status["parked"] = parked
        return status

    # ------------------------------------------------------------------ events

    def _on_event(self, event: RegistryEvent) -> None:
        if type(event) is MessageChunk:  # the streaming hot path: nothing else applies
            self.renderer.on_event(event)
            if self.renderer.dirty:
                self.frames.mark()
            return
        if isinstance(event, PromptQueueChanged):
            self.prompt_queues.changed(event)
        if isinstance(event, Event):
            if isinstance(event, SessionReplaced):  # a reload: render the new model whole
                chat = self.renderer.chats.get(event.session_id)
                if chat is not None and chat.attached:
                    self.renderer.attach(event.session_id)
            self.renderer.on_event(event)
            if self.renderer.dirty:
                self.frames.mark()
            if isinstance(event, ToolCallChanged | TurnEnded):
                self.follower.on_event(event)
            elif isinstance(event, TerminalReported):
                self.terminals.on_agent_terminal(event)
            if isinstance(event, SessionAdded):
                self.terminals.session_added(event.session_id)
        if isinstance(event, SessionParked | SessionUnparked):
            self.limits.parked_changed(event)
        elif isinstance(event, LimitsChanged):
            self.limits.changed(event)
        elif isinstance(event, PermissionQueueChanged):
            self.outbox.permission_count.put(len(event.pending))
            self.frames.mark()
        elif isinstance(event, SignInWaiting):
            self._signing_in[event.agent] = event.waiting
            self.outbox.signin.put(event.agent, event.waiting)
            self.frames.mark()
        elif isinstance(event, AgentStatus) and event.state in ("exited", "failed"):
            if self.host.running:
                # One line: the stderr tail is in the chat and in :LouiseLog (a long
                # message would stop the editor at a hit-enter prompt).
                self.notify(f"louise: {event.headline()} (:LouiseLog shows its stderr)",
                            "warn")

    # ------------------------------------------------------------------ failed frames

    def _frame_failed(self, failed: frozenset[str], sent: dict[str, Any]) -> None:
        """Lua could not apply part of a frame (it told the person once). Questions that
        may not have reached the person fail closed; everything else is sent again whole."""
        resync = self.frames.failures_in_a_row <= MAX_RESYNCS_IN_A_ROW
        if "fs_conflict" in failed:
            self.conflicts.refuse(int(item["id"]) for item in sent.get("fs_conflict") or [])
        if "ask" in failed:  # a question that may not have been shown is declined
            self.questions.decline([int(item["id"]) for item in sent.get("ask") or []])
        shown = sent.get("permission")
        if "permission" in failed and isinstance(shown, dict):
            self.decider.failed_to_show(int(shown["id"]), shown_again=resync)
        if resync:
            self.resync()

    def resync(self) -> None:
        """Neovim lost (part of) a frame: send every shown chat whole, every header, every
        label, the permission prompt and the prompt queues again."""
        self.renderer.rerender()
        self.limits.resend()
        self.outbox.permission.resend()
        self.outbox.permission_count.resend()
        self.prompt_queues.resend()
        for agent, waiting in self._signing_in.items():
            self.outbox.signin.put(agent, waiting)
        self.frames.mark()
