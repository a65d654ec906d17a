"""Turns: the bounded prompt queue of each session, cancel, close, permission requests.
Prompt content (context chips) is `prompt_content.py`'s; the inactivity watchdog is
`watchdog.py`'s; the session settings a person changes (mode, model, config options,
name) are `settings.py`'s.

Once a cancel is requested, every permission request of that turn is answered `cancelled`
without asking anyone, and one already on screen is withdrawn. Closing a session in a turn
cancels the turn first (`session/cancel`), then closes it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from louise.acp.connection import AgentConnection
from louise.acp.errors import AcpError, ConnectionClosed, RpcError
from louise.limits.cost import TurnCost
from louise.limits.governor import Block
from louise.registry.agents import AgentSupervisor
from louise.registry.attachments import load_attachments
from louise.registry.checkpoint_hooks import TurnCheckpoints
from louise.registry.error_hints import with_hint
from louise.registry.events import Emitter, PromptQueueChanged
from louise.registry.governor import Governor, QuotaRefused
from louise.registry.prompt_content import MAX_CONTEXT_CHIPS, Chip, prompt_blocks
from louise.registry.records import (
    MAX_QUEUED_PROMPTS,
    AgentRuntime,
    LiveSession,
    PromptWithdrawn,
    QueuedPrompt,
    RegistryError,
    SessionTable,
    TurnFailed,
    describe_rpc_error,
)
from louise.registry.sessions import Sessions
from louise.registry.transcripts import TranscriptWriter
from louise.registry.turn_permissions import TurnPermissions
from louise.registry.watchdog import watched_prompt
from louise.session import TurnUsage

log = logging.getLogger("louise.registry")

MAX_QUEUED_TEXT_SHOWN = 2_000
STEER_METHOD = "_session/steering"  # claude-agent-acp's and codex-acp's steering extension
STEERED = "steered"  # what prompt() returns for a prompt that went into the running turn


def refuse_if_closed(live: LiveSession) -> None:
    """A closed or closing session takes no prompt (worded for the person who sent it)."""
    if live.model.status == "closed":
        raise RegistryError("the session is closed")
    if live.model.closing:
        raise RegistryError("the session is closing; it takes no more prompts")


def prompt_text(blocks: Sequence[Mapping[str, Any]]) -> str:
    """The text of a prompt's blocks (what a checkpoint remembers the turn by)."""
    return " ".join(str(b.get("text")) for b in blocks if b.get("type") == "text")


def steering_supported(raw_initialize: Mapping[str, Any]) -> bool:
    """The agent advertises `_session/steering` (top-level `_meta.steering.supported`)."""
    meta = raw_initialize.get("_meta")
    steering = meta.get("steering") if isinstance(meta, dict) else None
    return isinstance(steering, dict) and steering.get("supported") is True


class Turns:
    """Prompting, cancelling and closing sessions (their permission requests withdrawn)."""

    def __init__(self, table: SessionTable, emitter: Emitter, agents: AgentSupervisor,
                 sessions: Sessions, transcripts: TranscriptWriter,
                 permissions: TurnPermissions,
                 *, grace_seconds: float,
                 idle_timeout_for: Callable[[str], float] = lambda agent: 0.0,
                 on_prompt_error: Callable[[AgentRuntime, RpcError], Block | None] | None = None,
                 governor: Governor | None = None,
                 checkpoints: TurnCheckpoints | None = None) -> None:
        self._table = table
        self._emitter = emitter
        self._agents = agents
        self._sessions = sessions
        self._transcripts = transcripts
        self._permissions = permissions
        self._grace_seconds = grace_seconds
        self._idle_timeout_for = idle_timeout_for
        self._on_prompt_error = on_prompt_error  # limits: a refused turn may be a rate limit
        self._governor = governor  # budgets, a turn's quota cost, parking at a limit
        self._checkpoints = checkpoints

    # ------------------------------------------------------------------ prompts

    async def prompt(self, session_id: str, prompt: str | Sequence[Mapping[str, Any]],
                     context: Sequence[Chip] = ()) -> str:
        """Run one turn and return its stop reason. A prompt sent while a turn runs waits
        in the session's visible queue (bounded, `PromptQueueChanged`): it may be edited,
        removed (PromptWithdrawn), sent now, or steered into the running turn (then
        `STEERED` is returned).

        A session in `error` after its agent died is reattached first where possible; when
        that fails, RegistryError says why (and the session shows it)."""
        live = self._table.live(session_id)
        refuse_if_closed(live)
        live.active_at = time.time()
        if live.turn_running or live.queue:
            item = await self._wait_in_queue(live, prompt, context)
            if item.state == "steered":
                return STEERED
            prompt, context = item.prompt, item.context  # as edited while it waited
        else:
            live.turn_running = True
        try:
            if self._governor is None:
                return await self._run_turn(live, prompt, context)
            # Parked at a limit, it goes again at the reset, holding its place in the queue.
            return await self._governor.run(live, lambda: self._run_turn(live, prompt, context))
        finally:
            self._next_turn(live)

    async def _wait_in_queue(self, live: LiveSession, prompt: str | Sequence[Mapping[str, Any]],
                             context: Sequence[Chip]) -> QueuedPrompt:
        if len(live.queue) >= MAX_QUEUED_PROMPTS:
            raise RegistryError(f"{MAX_QUEUED_PROMPTS} prompts already wait on this session")
        live.queue_ids += 1
        item = QueuedPrompt(live.queue_ids, prompt, list(context))
        live.queue.append(item)
        self._queue_changed(live)
        try:
            await item.ready.wait()
        except BaseException:
            if item.state == "running":  # handed the turn, then cancelled: pass it on
                self._next_turn(live)
            elif item in live.queue:
                live.queue.remove(item)
                self._queue_changed(live)
            raise
        if item.state == "removed":
            raise PromptWithdrawn("the prompt was removed from the queue")
        return item

    def _next_turn(self, live: LiveSession) -> None:
        """The turn is over: hand it to the first queued prompt (it runs next, whoever
        else calls prompt() meanwhile), else nobody. A prompt being steered is passed
        over: the agent's answer decides whether it already went into the turn."""
        live.turn_running = False
        item = next((item for item in live.queue if item.state == "queued"), None)
        if item is not None:
            live.queue.remove(item)
            item.state = "running"
            live.turn_running = True
            item.ready.set()
            self._queue_changed(live)

    def _queue_changed(self, live: LiveSession) -> None:
        self._emitter.emit(PromptQueueChanged(live.session_id, tuple(
            {"id": item.id, "text": item.text[:MAX_QUEUED_TEXT_SHOWN],
             "context": len(item.context)} for item in live.queue)))

    def _queued(self, session_id: str, item_id: int) -> tuple[LiveSession, QueuedPrompt]:
        live = self._table.live(session_id)
        item = next((i for i in live.queue if i.id == item_id), None)
        if item is None:
            raise RegistryError("that prompt is no longer queued (it ran or was removed)")
        if item.state == "steering":
            raise RegistryError("that prompt is being sent into the running turn")
        return live, item

    def edit_queued(self, session_id: str, item_id: int, text: str) -> None:
        """Replace a queued prompt's text (its context chips stay)."""
        live, item = self._queued(session_id, item_id)
        if not text.strip():
            raise RegistryError("an empty prompt: remove it instead")
        item.prompt = text
        self._queue_changed(live)

    def remove_queued(self, session_id: str, item_id: int) -> None:
        """Take a prompt off the queue; its prompt() raises PromptWithdrawn."""
        live, item = self._queued(session_id, item_id)
        live.queue.remove(item)
        item.state = "removed"
        item.ready.set()
        self._queue_changed(live)

    async def send_queued_now(self, session_id: str, item_id: int) -> None:
        """Run a queued prompt next: first in the queue, and the running turn cancelled."""
        live, item = self._queued(session_id, item_id)
        live.queue.remove(item)
        live.queue.insert(0, item)
        self._queue_changed(live)
        await self.cancel(session_id)

    async def steer_queued(self, session_id: str, item_id: int) -> None:
        """Send a queued prompt into the running turn (`_session/steering`, where the agent
        advertises it). While the request is in flight the prompt is not handed the next
        turn; if the agent does not take it, it stays queued, and runs next if the turn
        ended meanwhile. Either way it runs once: in that turn, or as its own."""
        live, item = self._queued(session_id, item_id)
        runtime = self._table.runtime(live.agent)
        if runtime.initialized is None or not steering_supported(runtime.initialized.raw):
            raise RegistryError(f"{live.agent} does not take prompts into a running turn")
        if not live.model.in_turn:
            raise RegistryError("no turn is running; it is sent next as it is")
        item.state = "steering"
        outcome: Any = None
        try:
            capabilities = runtime.prompt_capabilities()
            context = await load_attachments(item.context[:MAX_CONTEXT_CHIPS], capabilities)
            blocks = prompt_blocks(item.prompt, context, capabilities)
            connection = await self._agents.connection(live.agent)
            result = await connection.ext_request(STEER_METHOD, {
                "sessionId": live.acp_id, "prompt": blocks,
                "_meta": {"steering": {"idleBehavior": "promptRequired"}}})
            outcome = result.get("outcome") if isinstance(result, dict) else None
        finally:
            if outcome != "injected" and item.state == "steering":  # back in line
                item.state = "queued" if item in live.queue else "removed"
                if not live.turn_running:  # the turn ended meanwhile: it is next
                    self._next_turn(live)
        if outcome != "injected":
            then = {"queued": "it stays queued", "running": "it is sent now as it is"
                    }.get(item.state, "it was withdrawn")
            raise RegistryError(f"{live.agent} did not take it into the turn "
                                f"({str(outcome)[:40]}); {then}")
        if item.state != "steering":
            return  # withdrawn meanwhile (its session closes)
        live.queue.remove(item)
        self._queue_changed(live)
        if not live.turn_running:  # the turn ended meanwhile: the next prompt's turn
            self._next_turn(live)
        item.state = "steered"
        item.ready.set()
        self._emitter.emit_all(live.model.add_steered(blocks))
        for block in blocks:  # in the transcript as the person's words within the turn
            self._transcripts.record_update(live.transcript, {
                "sessionUpdate": "user_message_chunk", "content": block})

    def withdraw_queue(self, live: LiveSession) -> None:
        """The session closes: every queued prompt is withdrawn."""
        for item in list(live.queue):
            item.state = "removed"
            item.ready.set()
        if live.queue:
            live.queue.clear()
            self._queue_changed(live)

    async def _run_turn(self, live: LiveSession, prompt: str | Sequence[Mapping[str, Any]],
                        context: Sequence[Chip]) -> str:
        runtime = self._table.runtime(live.agent)
        refuse_if_closed(live)
        if live.model.status == "error" or not runtime.connected:
            await self._sessions.attach(live, "reattach")
        model = live.model  # after a reload, a fresh one
        # Another window's turn runs at the session host: this prompt waits in the
        # host's queue behind it, and this session shows its own turn from here on.
        self._emitter.emit_all(model.end_watched_turn())
        if model.status != "ready":
            raise RegistryError(f"{live.session_id} is {model.status}; it takes prompts "
                                "when ready")
        connection = await self._agents.connection(live.agent)
        governor = self._governor
        if governor is not None:
            await governor.check_budget(live)
        capabilities = runtime.prompt_capabilities()
        if live.instructions is not None:  # a new session's first prompt
            context = [{"kind": "file", "path": live.instructions}, *context]
            live.instructions = None
        context = await load_attachments(context[:MAX_CONTEXT_CHIPS], capabilities)
        blocks = prompt_blocks(prompt, context, capabilities)
        if governor is not None:
            governor.turn_began(live)
        self._emitter.emit_all(model.begin_turn(blocks))
        for chip in context:
            if chip.get("problem"):
                name = os.path.basename(str(chip.get("path") or "")) or "an image"
                self._emitter.emit_all(model.add_notice(
                    "info", f"{name} was not sent: {chip['problem']}"))
        self._transcripts.record(live.transcript, {"type": "prompt", "prompt": blocks})
        live.no_turn_running = anyio.Event()
        if self._checkpoints is not None:  # under way before the agent has the prompt
            await self._checkpoints.start(live, prompt_text(blocks))
        try:
            return await self._prompt_agent(live, runtime, connection, blocks)
        finally:
            if self._checkpoints is not None:
                self._checkpoints.end(live, model.last_stop_reason or "error")

    async def _prompt_agent(self, live: LiveSession, runtime: AgentRuntime,
                            connection: AgentConnection, blocks: list[dict[str, Any]]) -> str:
        """`session/prompt` and its end: the turn's end line, its transcript record."""
        model = live.model
        governor = self._governor
        idle_timeout = self._idle_timeout_for(live.agent)
        cost: TurnCost | None = None
        try:
            result, idle = await watched_prompt(
                live, connection, blocks, idle_timeout, cancel=self.cancel,
                grace_seconds=self._grace_seconds)
        except ConnectionClosed as exc:
            self._emitter.emit_all(model.end_turn(None, str(exc), connection_lost=True))
            self._record_end(live, "error", str(exc))
            raise
        except RpcError as exc:
            block = self._on_prompt_error(runtime, exc) if self._on_prompt_error else None
            message = describe_rpc_error(exc, runtime)
            self._emitter.emit_all(model.end_turn(None, message))
            reason = model.last_stop_reason or "error"
            self._record_end(live, reason, message)
            if reason == "cancelled":
                return reason
            if block is not None:
                raise QuotaRefused(message, block) from exc
            raise TurnFailed(message) from exc
        finally:
            live.no_turn_running.set()
            if governor is not None:
                cost = governor.turn_ended(live)
        if idle:
            # Notes of the agent's own state (codex's "Reconnecting... 2/5") are not
            # progress: the last one says why the turn got nowhere.
            note = model.agent_note
            said = f" (its last note: {note})" if note else ""
            message = with_hint(
                f"{live.agent} made no progress for {idle_timeout:g} s{said}, so louise "
                "cancelled the turn (prompt_idle_timeout; 0 turns this off)", live.agent)
            self._emitter.emit_all(model.end_turn(None, message, timed_out=True))
            self._record_end(live, "error", message)
            raise TurnFailed(message)
        stop_reason = result.get("stopReason")
        reason = stop_reason if isinstance(stop_reason, str) else "end_turn"
        usage = TurnUsage.from_prompt_result(result)
        quota = cost.text() if cost is not None else None
        self._emitter.emit_all(model.end_turn(reason, usage=usage, quota=quota))
        self._record_end(live, model.last_stop_reason or reason, usage=usage, cost=cost)
        return model.last_stop_reason or reason

    def _record_end(self, live: LiveSession, reason: str, error: str | None = None, *,
                    usage: TurnUsage | None = None, cost: TurnCost | None = None) -> None:
        entry: dict[str, Any] = {"type": "turn_end", "stopReason": reason}
        if error is not None:
            entry["error"] = error
        if usage is not None:
            entry["usage"] = usage.to_record()
        if cost is not None:
            entry["quota"] = cost.to_record()
        self._transcripts.record(live.transcript, entry)

    async def cancel(self, session_id: str) -> None:
        """Cancel per spec: session/cancel, every pending permission → cancelled, unfinished
        tool calls marked cancelled; the turn ends on the prompt's reply."""
        live = self._table.live(session_id)
        if self._governor is not None and self._governor.unpark(live, "cancelled"):
            return
        events = live.model.request_cancel()
        if not events:
            return
        self._emitter.emit_all(events)
        self._permissions.withdraw(live)
        runtime = self._table.runtime(live.agent)
        if runtime.connection is not None and runtime.connection.is_open:
            try:
                await runtime.connection.cancel(live.acp_id)
            except AcpError as exc:
                log.info("%s: session/cancel not sent: %s", live.agent, exc)

    async def close_session(self, session_id: str) -> None:
        """Close a session here, and at the agent where it supports `session/close`. A turn
        in flight is cancelled first (and given the grace period to end), so an agent
        without `session/close` does not run on into a dead session."""
        live = self._table.live(session_id)
        runtime = self._table.runtime(live.agent)
        self._emitter.emit_all(live.model.begin_close())  # no new turn from here on
        if self._governor is not None:
            self._governor.unpark(live, "cancelled")
        self.withdraw_queue(live)
        # Another window's turn is not this window's to cancel by leaving.
        self._emitter.emit_all(live.model.end_watched_turn())
        if live.model.in_turn:
            await self.cancel(session_id)
            with anyio.move_on_after(self._grace_seconds):
                await live.no_turn_running.wait()
        self._permissions.withdraw(live)
        connection = runtime.connection
        if connection is not None and connection.is_open and runtime.initialized is not None \
                and runtime.initialized.session_capability("close"):
            try:
                await connection.close_session(live.acp_id)
            except AcpError as exc:
                log.info("%s: session/close failed: %s", live.agent, exc)
        await self._sessions.forget(live)

    async def close_at_agents(self, deadline: float | None = None) -> frozenset[str]:
        """On shutdown: `session/close` for every open session, at every agent that has it
        (concurrently, each bounded by the grace period and the `deadline`, anyio's clock).
        Returns the Agents left with nothing to finish: every session closed at the agent
        (none in a turn)."""
        finished: set[str] = set()

        async def close_all(runtime: AgentRuntime) -> None:
            if runtime.launch is not None:
                # Through the session host: leaving is a detach, its sessions (and a turn
                # under way) go on there; nothing to close.
                finished.add(runtime.name)
                return
            connection = runtime.connection
            sessions = [live for live in runtime.sessions
                        if live.model.status not in ("closed", "error")]
            if any(live.model.in_turn for live in sessions):
                return
            closable = runtime.initialized is not None \
                and runtime.initialized.session_capability("close")
            if sessions and not closable:
                return
            closed = 0
            bound = anyio.current_time() + self._grace_seconds
            with anyio.CancelScope(deadline=bound if deadline is None else min(bound, deadline)):
                for live in sessions:
                    assert connection is not None
                    try:
                        await connection.close_session(live.acp_id)
                    except AcpError as exc:
                        log.info("%s: session/close failed: %s", live.agent, exc)
                        return
                    closed += 1
            if closed == len(sessions):
                finished.add(runtime.name)

        async with anyio.create_task_group() as tg:
            for runtime in self._table.runtimes.values():
                if runtime.connection is not None and runtime.connection.is_open:
                    tg.start_soon(close_all, runtime)
        return frozenset(finished)
