"""The engine inside Neovim's louise process: the registry on its own loop (`host.py`),
commands in from Lua (`commands.py`), UI work out through the typed outbox
(`outbox.py`), one awaited frame at a time (`frames.py`).

This module wires them together and turns registry events into UI work: chat edits (via
the renderer), limits labels and alerts (`limits_ui.py`), agent terminals, permission
prompts (`permissions.py`) and fs conflicts. Nothing here calls pynvim directly: Neovim
is reached only through `UiBridge`.
"""

from __future__ import annotations

import gc
import logging
import os
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from louise import limits as lim
from louise import paths
from louise.broker import PermissionRequest, QueueView
from louise.checkpoints.service import Checkpoints
from louise.client_terminal import (
    MAX_OUTPUT_BYTE_LIMIT,
    ExitStatus,
    TerminalCreated,
    TerminalEvent,
    TerminalExited,
    TerminalOutput,
)
from louise.config import (
    LOUISELM_TOP_KEYS,
    Config,
    ConfigError,
    load_config,
    load_config_mapping,
)
from louise.file_changes import MAX_REVIEW_BYTES, FileChange, proposed_change, read_for_review
from louise.nvim.bridge import UiBridge
from louise.nvim.commands import Commands, status_for
from louise.nvim.frames import FrameLoop
from louise.nvim.host import EXIT_BUDGET_SECONDS, STOP_SLACK_SECONDS, EngineHost
from louise.nvim.limits_ui import LABEL_TICK_SECONDS as LABEL_TICK_SECONDS
from louise.nvim.limits_ui import LimitsUi
from louise.nvim.limits_ui import alert_thresholds as alert_thresholds
from louise.nvim.outbox import (
    MAX_PENDING_CONFLICTS,
    FsConflict,
    Notification,
    OpenChat,
    Outbox,
)
from louise.nvim.permissions import NvimDecider
from louise.nvim.permissions import PendingPermission as PendingPermission
from louise.nvim.permissions import permission_view as permission_view
from louise.nvim.questions import NvimElicitor, NvimSignIn, Questions
from louise.nvim.render import ChatRenderer
from louise.nvim.review import ReviewUi
from louise.nvim.terminals import DEFAULT_TERMINAL_BACKLOG_BYTES
from louise.registry import (
    AgentStatus,
    LimitsChanged,
    PermissionQueueChanged,
    PromptQueueChanged,
    RegistryError,
    RegistryEvent,
    SessionAdded,
    SessionParked,
    SessionRegistry,
    SessionReplaced,
    SessionUnparked,
)
from louise.session import (
    Event,
    MessageChunk,
    Session,
    TerminalReported,
    ToolCallChanged,
    TurnEnded,
)

log = logging.getLogger("louise.nvim")

MAX_RESYNCS_IN_A_ROW = 2  # a frame that keeps failing must not loop full renders
ENGINE_KEYS = ("agents", "default_agent", "permissions", "fs", "terminal", "request_timeout",
               "prompt_idle_timeout", "mcp_servers", "checkpoints",
               "limits")
CONFLICT_CHOICES = ("buffer", "overwrite", "refuse")
LOOKING_KINDS = frozenset({"read", "search", "fetch", "think"})  # tool calls that change nothing


def engine_config(opts: Mapping[str, Any] | None) -> Config:
    """`setup{}` engine options when given (validated whole), else config.toml. LouiseLM's
    top-level settings come along (to be named in `Config.warnings`, then ignored)."""
    chosen = {k: v for k, v in (opts or {}).items() if k in ENGINE_KEYS}
    if chosen:
        louiselm = {k: v for k, v in (opts or {}).items() if k in LOUISELM_TOP_KEYS}
        return load_config_mapping({**chosen, **louiselm})
    return load_config()


def default_agent_named(opts: Mapping[str, Any] | None) -> bool:
    """Whether the person named `default_agent` (setup{} or config.toml), rather than
    louise picking the first Agent: then :LouiseChat uses it without asking."""
    chosen = {k: v for k, v in (opts or {}).items() if k in ENGINE_KEYS}
    if chosen:
        return isinstance(chosen.get("default_agent"), str)
    try:
        data = tomllib.loads(paths.config_file().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(data.get("default_agent"), str)


@dataclass
class PendingConflict:
    answered: anyio.Event = field(default_factory=anyio.Event)
    choice: str = "refuse"


class Engine:
    """Owns the registry, the outbox and the frame loop. `start()` from the pynvim
    thread; `submit()` forwards Lua's commands."""

    def __init__(self, bridge: UiBridge, opts: Mapping[str, Any] | None = None) -> None:
        self.bridge = bridge
        self.opts = dict(opts or {})
        self.limits = LimitsUi(self, self.opts.pop("alerts", True))  # setup{alerts = …}
        self.config: Config | None = None
        self.registry: SessionRegistry | None = None
        self.host = EngineHost()
        self.outbox = Outbox()
        self.outbox.terminals.limit_for = self._terminal_backlog
        self.outbox.terminals.on_release = self._terminal_released
        self.renderer = ChatRenderer(self.lookup)
        self.frames = FrameLoop(bridge, self.renderer, self.outbox, self._status_for,
                                self._frame_failed)
        self.parked: dict[str, str] = {}  # session key -> "parked until 17:02 (…)"
        self.decider = NvimDecider(self)
        self.questions = Questions(self)
        self.commands = Commands(self)
        self.checkpoints: Checkpoints | None = None  # what :LouiseReview/:LouiseUndo read
        self.review = ReviewUi(self)
        self._current: dict[str, str] = {}  # agent -> last focused session key
        self._last_key: str | None = None
        self._conflicts: dict[int, PendingConflict] = {}
        self._prompt_queues: dict[str, dict[str, Any]] = {}  # shown queues, for a resync
        self._conflict_ids = 0
        self._permission_failures: dict[int, int] = {}
        self.limits_view: str | None = None  # the Agent whose limits view is open
        self.default_named = False  # default_agent named by the person (see _main)
        self._stop_at: float | None = None  # the stop's deadline (time.monotonic())

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
        if not self.host.submit(self.commands.run, command, dict(args)):
            log.debug("engine stopped; dropped %s", command)

    async def _main(self) -> None:
        try:
            self.config = engine_config(self.opts)
        except ConfigError as exc:
            self.config = load_config_mapping({})
            self.notify(f"louise: configuration error; using only the demo agent.\n{exc}",
                        "error")
        if self.config.warnings:
            source = "setup{}" if any(k in ENGINE_KEYS for k in self.opts) else "config.toml"
            self.notify("louise: " + "\n".join(w.render(source) for w in self.config.warnings),
                        "warn")
        self.default_named = default_agent_named(self.opts)
        from louise.nvim.editor import NvimEditor

        if self.config.checkpoints.enabled:
            self.checkpoints = Checkpoints(self.config.checkpoints)

        self.registry = SessionRegistry(self.config, decider=self.decider,
                                        editor=NvimEditor(self),
                                        sign_in=NvimSignIn(self.questions),
                                        elicitor=NvimElicitor(self, self.questions),
                                        read_pace=self.frames.read_turn,
                                        merge_text_chunks=True,
                                        checkpoints=self.checkpoints, park_on_quota=True)
        # What is imported and configured by now lives as long as the process: out of the
        # collector's way. Each full collection walked all of it (pydantic's schemas
        # first): a third of louise's CPU in a 10,000-chunk burst (bench/stream.py). No
        # collection first: it took 20-35 ms of the first chat's start, for the little
        # garbage the imports leave.
        gc.freeze()
        async with self.registry:
            async with anyio.create_task_group() as tg:
                self.registry.subscribe(self._on_event)
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
            await self.registry.aclose(None if stop_at is None else
                                       anyio.current_time() + stop_at - time.monotonic())

    # ------------------------------------------------------------------ for commands

    def mark(self) -> None:
        self.frames.mark()

    def notify(self, message: str, level: str = "info") -> None:
        self.outbox.notify.put(Notification(message, level))  # bounded per frame
        self.mark()

    def lookup(self, key: str) -> Session | None:
        if self.registry is None:
            return None
        try:
            return self.registry.session(key)
        except RegistryError:
            return None

    def last_session(self) -> Session | None:
        return self.lookup(self._last_key) if self._last_key is not None else None

    def current_session(self, agent: str) -> Session | None:
        key = self._current.get(agent)
        return self.lookup(key) if key is not None else None

    def forget(self, key: str) -> None:
        """A session closed: "last" and "current" fall back to the newest other open one
        (so :LouiseChat reopens it instead of starting a new session)."""
        if self.registry is None:
            return
        others = [s for s in self.registry.sessions()
                  if s.session_id != key and s.status != "closed"]
        if self._last_key == key:
            self._last_key = others[-1].session_id if others else None
        for agent, current in list(self._current.items()):
            if current == key:
                mine = [s for s in others if s.agent == agent]
                if mine:
                    self._current[agent] = mine[-1].session_id
                else:
                    del self._current[agent]

    def open(self, session: Session, focus: bool = True) -> None:
        self._current[session.agent] = session.session_id
        self._last_key = session.session_id
        self.outbox.open.put(OpenChat(session.session_id, session.agent, focus))
        self.renderer.attach(session.session_id)
        self.mark()

    def resync(self) -> None:
        """Neovim lost (part of) a frame: send every shown chat whole, every header, every
        label and the permission prompt again."""
        self.renderer.rerender()
        self.limits.labels.clear()
        self.limits.push_all_labels()
        self.outbox.permission.resend()
        self.outbox.queue.resend()
        for key, queue in self._prompt_queues.items():
            self.outbox.prompt_queue.put(key, queue)
        self.mark()

    def _status_for(self, session: Session) -> dict[str, Any]:
        """The chat header: `status_for`, and a parked turn's wait (the winbar shows it)."""
        status = status_for(session)
        parked = self.parked.get(session.session_id)
        if parked is not None:
            status["parked"] = parked
        return status

    # ------------------------------------------------------------------ events

    def _on_event(self, event: RegistryEvent) -> None:
        if type(event) is MessageChunk:  # the streaming hot path: nothing else applies
            self.renderer.on_event(event)
            if self.renderer.dirty:
                self.mark()
            return
        if isinstance(event, PromptQueueChanged):
            self._prompt_queue(event)
        if isinstance(event, Event):
            if isinstance(event, SessionReplaced):  # a reload: render the new model whole
                chat = self.renderer.chats.get(event.session_id)
                if chat is not None and chat.attached:
                    self.renderer.attach(event.session_id)
            self.renderer.on_event(event)
            if self.renderer.dirty:
                self.mark()
            if isinstance(event, ToolCallChanged | TurnEnded):
                self._follow_files(event)
            elif isinstance(event, TerminalReported):
                self._on_agent_terminal(event)
            if isinstance(event, SessionAdded) and self.registry is not None:
                host = self.registry.terminal_host(event.session_id)
                if host is not None:
                    key = event.session_id
                    host.subscribe(lambda e: self._on_terminal(key, e), replay=False)
        if isinstance(event, SessionParked | SessionUnparked):
            self.limits.parked(event)
        elif isinstance(event, LimitsChanged):
            self.limits.push_label(event.agent, event.state)
            self.limits.alert(event.agent, event.state)
            if event.agent == self.limits_view:
                self.show_limits(event.agent, event.state)
        elif isinstance(event, PermissionQueueChanged):
            self.outbox.queue.put(len(event.pending))
            self.mark()
        elif isinstance(event, AgentStatus) and event.state in ("exited", "failed"):
            if self.registry is not None and self.host.running:
                # One line: the stderr tail is in the chat and in :LouiseLog (a long
                # message would stop the editor at a hit-enter prompt).
                first = event.message.strip().split("\n", 1)[0][:200]
                self.notify(f"louise: {event.agent} {event.state}: {first} (:LouiseLog shows "
                            "its stderr)", "warn")

    def _follow_files(self, event: ToolCallChanged | TurnEnded) -> None:
        """Agents write files themselves and say so in their tool calls: once a tool call
        that names files is done, and at the end of each turn, the buffers of those files
        follow them (`fs.reload`: a clean buffer reloads, unsaved edits are asked about).
        A turn that ran commands may have changed any file: every buffer is checked."""
        session = self.lookup(event.session_id)
        if session is None:
            return
        if isinstance(event, ToolCallChanged):
            record = session.tool_calls.get(event.tool_call_id)
            if record is None or "status" not in event.changed or not record.finished:
                return
            records = [record]
        else:
            records = session.turn_tool_calls()
            if any(r.kind == "execute" for r in records):
                self.outbox.reloads.put_everything()
                self.mark()
                return
        for record in records:
            if record.kind in LOOKING_KINDS:
                continue
            for path in record.file_paths():
                self.outbox.reloads.put(os.path.join(session.cwd, path), session.agent)
        if self.outbox.reloads.pending:
            self.mark()

    def _on_agent_terminal(self, event: TerminalReported) -> None:
        """A terminal the agent runs itself shows as louise's own do (its output in a
        terminal buffer, its exit on the tool line)."""
        key, terminal_id = event.session_id, event.terminal_id
        if event.command is not None:
            self._on_terminal(key, TerminalCreated(terminal_id, event.command, (), ""))
        if event.data:
            self._on_terminal(key, TerminalOutput(
                terminal_id, event.data.encode("utf-8", "replace"), event.data))
        if event.exited and (event.exit_code is not None or event.signal is not None):
            self._on_terminal(key, TerminalExited(terminal_id,
                                                  ExitStatus(event.exit_code, event.signal)))

    def _prompt_queue(self, event: PromptQueueChanged) -> None:
        """A session's queued prompts, and whether its agent takes steering."""
        session = self.lookup(event.session_id)
        steer = session is not None and self.registry is not None \
            and self.registry.steering(session.agent)
        queue = {"items": list(event.items), "steer": steer}
        if event.items:
            self._prompt_queues[event.session_id] = queue
        else:
            self._prompt_queues.pop(event.session_id, None)
        self.outbox.prompt_queue.put(event.session_id, queue)
        self.mark()

    def _on_terminal(self, key: str, event: TerminalEvent) -> None:
        """Agent terminals mirror into Neovim terminal buffers, filtered, in bounded slices
        per frame (at most the agent's terminal output limit waits for the screen), a
        bounded number per chat (terminals.py)."""
        terminals, terminal_id = self.outbox.terminals, event.terminal_id
        if isinstance(event, TerminalCreated):
            terminals.created(key, terminal_id, " ".join([event.command, *event.args]))
        elif isinstance(event, TerminalOutput):
            terminals.output(key, terminal_id, event.text)
        elif isinstance(event, TerminalExited):
            code, signal = event.status.exit_code, event.status.signal
            text = f"exit {code}" if code is not None else f"signal {signal}"
            self.renderer.terminal_exited(key, terminal_id, text)
            terminals.exited(key, terminal_id, event.status.to_wire())
        self.mark()

    def _terminal_released(self, key: str, terminal_id: str) -> None:
        """An old terminal left Neovim (the chat keeps only its newest): its tool line
        says so."""
        self.renderer.terminal_released(key, terminal_id)
        self.mark()

    def _terminal_backlog(self, key: str) -> int:
        """How much of a terminal's output may wait for the screen: its Agent's terminal
        output limit (what the agent itself may read back), within the host's maximum."""
        session = self.lookup(key)
        if self.config is None or session is None:
            return DEFAULT_TERMINAL_BACKLOG_BYTES
        limit = self.config.terminal_for(session.agent).output_byte_limit
        return min(limit, MAX_OUTPUT_BYTE_LIMIT)

    # ------------------------------------------------------------------ limits view

    def has_live_session(self, agent: str) -> bool:
        """Whether a session of the Agent runs (a limits read has somewhere to go)."""
        return self.limits.has_live_session(agent)

    def show_limits(self, agent: str, state: lim.LimitsState, open_view: bool = False) -> None:
        """The limits view's content; `open_view` opens it (else only an open view of
        that Agent changes)."""
        self.limits.show(agent, state, open_view)

    # ------------------------------------------------------------------ permissions

    def show_permission(self, request: PermissionRequest, queue: QueueView,
                        changes: Sequence[FileChange] = ()) -> None:
        self.outbox.permission.show(request.request_id,
                                    permission_view(request, queue, changes))
        self.mark()

    async def review_changes(self, request: PermissionRequest) -> list[FileChange]:
        """Each file of the request as a whole file before and after the edit, put onto
        what the person has now: the loaded buffer (unsaved edits included), else the
        disk."""
        from louise.nvim.editor import NvimEditor

        editor = self.registry.editor if self.registry is not None else None
        changes = []
        for item in request.diffs:
            path = str(item.get("path") or "")
            if path and not os.path.isabs(path):
                path = os.path.join(request.workspace, path)
            current: str | None = None
            in_buffer = False
            if isinstance(editor, NvimEditor) and os.path.isabs(path):
                buffer = await editor.buffer_text(Path(path))
                if buffer is not None:
                    in_buffer = True
                    current = buffer if len(buffer) <= MAX_REVIEW_BYTES else None
            if not in_buffer:
                current = await anyio.to_thread.run_sync(read_for_review, path)
            changes.append(proposed_change({**item, "path": path}, current))
        return changes

    def close_permission(self, request_id: int) -> None:
        """Answered, cancelled or gone: off the screen (unless a newer one is on it)."""
        self._permission_failures.pop(request_id, None)
        self.outbox.permission.settle(request_id)
        self.mark()

    # ------------------------------------------------------------------ fs conflicts

    async def ask_conflict(self, path: Path, session_id: str,
                           reason: str = "modified") -> str:
        """A write to a buffer with unsaved edits, or whose file changed on disk since it
        was read (`reason`, fs.lua's state): the person chooses (notification out,
        notification back; never a blocking request). Every question is delivered (the
        outbox queues them); past the bound the write is refused, never left waiting."""
        if len(self._conflicts) >= MAX_PENDING_CONFLICTS:
            self.notify(f"louise: too many writes wait for an answer; refused {path}", "warn")
            return "refuse"
        self._conflict_ids += 1
        ident = self._conflict_ids
        pending = self._conflicts[ident] = PendingConflict()
        session = self.lookup(session_id)
        self.outbox.fs_conflicts.put(FsConflict(ident, str(path),
                                                session.agent if session else "agent", reason))
        self.mark()
        try:
            await pending.answered.wait()
            return pending.choice
        finally:
            self._conflicts.pop(ident, None)

    def answer_conflict(self, ident: int, choice: str) -> None:
        pending = self._conflicts.get(ident)
        if pending is not None and not pending.answered.is_set():
            pending.choice = choice if choice in CONFLICT_CHOICES else "refuse"
            pending.answered.set()

    # ------------------------------------------------------------------ failed frames

    def _frame_failed(self, failed: frozenset[str], sent: dict[str, Any]) -> None:
        """Lua could not apply part of a frame (it told the person once). Questions that
        may not have reached the person fail closed; everything else is sent again whole."""
        resync = self.frames.failures_in_a_row <= MAX_RESYNCS_IN_A_ROW
        if "fs_conflict" in failed:
            for item in sent.get("fs_conflict") or []:
                self.answer_conflict(int(item["id"]), "refuse")
        if "ask" in failed:  # a question that may not have been shown is declined
            self.questions.decline([int(item["id"]) for item in sent.get("ask") or []])
        shown = sent.get("permission")
        if "permission" in failed and isinstance(shown, dict):
            ident = int(shown["id"])
            count = self._permission_failures[ident] = self._permission_failures.get(ident, 0) + 1
            if count > 1 or not resync:
                self.notify("louise: the permission request could not be shown; it was "
                            "cancelled", "error")
                self.decider.answer(ident, None)
                # Off the screen now, not once the decider's task gets to it: the resync
                # below would otherwise show it a third time.
                self.close_permission(ident)
        if resync:
            self.resync()
