"""A turn's permission requests: the agent's `session/request_permission` (and the gate's
own questions) through the broker, unless the turn was cancelled; what each answer
allowed or refused remembered for the rest of the turn (`live.approvals`, read by the
gate); held until the turn's checkpoint is complete; withdrawn when the turn is cancelled
or the session closes."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from louise.acp.errors import RpcError
from louise.permissions.broker import (
    MalformedPermission,
    PermissionBroker,
    PermissionRequest,
    extract_request,
)
from louise.permissions.rules import agent_key, canonical_workspace
from louise.registry.approvals import Target, absolute_paths, resolved_targets
from louise.registry.events import Emitter
from louise.registry.records import AgentRuntime, LiveSession, SessionTable
from louise.registry.transcripts import TranscriptWriter

log = logging.getLogger("louise.registry")

CANCELLED: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
MAX_UNREADABLE_LOGGED = 5  # malformed permission requests logged per Agent
APPROVAL_KINDS = ("allow_once", "allow_always", "reject_once", "reject_always")
MAX_WITHDRAWN = 64  # requests the session host withdrew, kept for its word on the answer


@dataclass(frozen=True, slots=True)
class _Withdrawn:
    """A permission request withdrawn from the person."""

    live: LiveSession
    request: PermissionRequest
    turn: int
    targets: list[Target]


class TurnPermissions:
    """Asks the broker for the sessions' permission requests (see the module)."""

    def __init__(self, table: SessionTable, emitter: Emitter, transcripts: TranscriptWriter,
                 broker: PermissionBroker) -> None:
        self._table = table
        self._emitter = emitter
        self._transcripts = transcripts
        self._broker = broker
        self._unreadable: dict[str, int] = {}  # per Agent, for the log
        # Through the session host: requests it withdrew here (`$/cancel_request`: another
        # front end answered first), by (session, tool call), until it says what the
        # answer was (`answered_elsewhere`); the newest few only.
        self._withdrawn: OrderedDict[tuple[str, str], _Withdrawn] = OrderedDict()
        # Through the session host: the requests being asked here, by the same key (the
        # host's word on an answer given elsewhere may come before its withdrawal does).
        self._asking: dict[tuple[str, str], tuple[_Withdrawn, anyio.CancelScope]] = {}

    def withdraw(self, live: LiveSession) -> None:
        """The session's turn is cancelled or it closes: its questions go (cancelled)."""
        self._broker.cancel_session(live.session_id)
        for scope in list(live.permission_scopes):
            scope.cancel()

    async def on_permission(self, runtime: AgentRuntime, params: Any) -> Any:
        """`session/request_permission`: through the broker, unless the person already
        cancelled this turn (then `cancelled` at once, nobody asked)."""
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        live = self._table.find(runtime.name, session_id) if isinstance(session_id, str) \
            else None
        if live is None:
            return CANCELLED
        model = live.model
        tool_call = params.get("toolCall")
        known = None
        if isinstance(tool_call, dict) and isinstance(tool_call.get("toolCallId"), str):
            record = model.tool_calls.get(tool_call["toolCallId"])
            if record is not None:
                known = {"toolCallId": record.tool_call_id, "title": record.title,
                         "kind": record.kind, "content": record.content,
                         "locations": record.locations, "rawInput": record.raw_input}
        try:
            request = self.request_for(live, params, known)
        except MalformedPermission as exc:  # the agent is told; nobody is asked
            what = f"a permission request louise cannot read ({exc}); it was refused"
            runtime.note(what)  # for the agent's log (:LouiseLog)
            count = self._unreadable[runtime.name] = \
                self._unreadable.get(runtime.name, 0) + 1
            if count <= MAX_UNREADABLE_LOGGED:  # a flood of them is not a flood of lines
                log.warning("%s sent %s", runtime.name, what)
            raise RpcError.invalid_params(str(exc)) from None
        return await self.ask(live, request)

    def request_for(self, live: LiveSession, params: Mapping[str, Any],
                    known: Mapping[str, Any] | None) -> PermissionRequest:
        """A PermissionRequest of this session from request params (and the tool call the
        session already knows)."""
        runtime = self._table.runtime(live.agent)
        return extract_request(
            self._broker.next_id(), runtime.name,
            agent_key(runtime.command.command, runtime.command.args),
            canonical_workspace(live.cwd), params, known, session_key=live.session_id)

    async def ask(self, live: LiveSession, request: PermissionRequest) -> dict[str, Any]:
        """Decide one request of this session (the agent's, or the gate's own) and return
        the wire outcome; what it allowed or refused is remembered for the rest of the
        turn (`live.approvals`, read by the gate)."""
        # Its files as they are when shown: an approval covers these, not where a link
        # swapped meanwhile leads. (Before the cancel check: this waits on a thread.)
        given = absolute_paths(request.paths, live.cwd)
        targets = await anyio.to_thread.run_sync(resolved_targets, given) if given else []
        model = live.model
        if model.cancel_requested:
            self._record_permission(live, request.title, request.kind,
                                    "cancelled (the turn was cancelled)")
            return CANCELLED
        turn = model.turn
        self._emitter.emit_all(model.permission_pending(request.request_id,
                                                        request.tool_call_id))
        outcome: dict[str, Any] = CANCELLED
        why: str | None = None
        scope = anyio.CancelScope()
        live.permission_scopes.add(scope)
        live.busy += 1  # waiting for a person is not the agent's silence
        asking = self._host_key(live, request)
        if asking is not None:
            self._asking[asking] = (_Withdrawn(live, request, turn, list(targets)), scope)
        try:
            with scope:
                try:
                    outcome, why = await self._broker.ask_explained(request)
                except anyio.get_cancelled_exc_class():
                    self._note_withdrawn(live, request, turn, targets)
                    raise
                finally:
                    if asking is not None:
                        self._asking.pop(asking, None)
                watch = live.turn_watch
                if watch is not None:  # what it allows waits for the snapshot
                    await watch.ready()
                    if request.tool_call_id is not None:
                        watch.asked(request.tool_call_id)
            if scope.cancel_called or model.cancel_requested or model.turn != turn:
                outcome = CANCELLED  # cancelled while it was being decided
            self._remember_answer(live, request, outcome, turn, targets)
            return outcome
        finally:
            live.busy -= 1
            live.touch()
            live.permission_scopes.discard(scope)
            chosen = outcome.get("outcome", {})
            text = (f"selected:{chosen.get('optionId')}" if chosen.get("outcome") == "selected"
                    else "cancelled")
            self._emitter.emit_all(model.permission_settled(request.request_id, text))
            self._record_permission(live, request.title, request.kind, text)
            if why is not None:  # refused without asking: the chat says why, once settled
                self._emitter.emit_all(model.add_notice(
                    "info", f"{' '.join(request.title.split())[:200]}: {why}"))

    def _host_key(self, live: LiveSession, request: PermissionRequest) -> tuple[str, str] | None:
        """The key of a request the session host may answer elsewhere, else None."""
        if self._table.runtime(live.agent).launch is None or request.tool_call_id is None:
            return None  # only the session host answers a request elsewhere
        return (live.session_id, request.tool_call_id)

    def _note_withdrawn(self, live: LiveSession, request: PermissionRequest, turn: int,
                        targets: Sequence[Target]) -> None:
        key = self._host_key(live, request)
        if key is None:
            return
        self._withdrawn[key] = _Withdrawn(live, request, turn, list(targets))
        self._withdrawn.move_to_end(key)
        while len(self._withdrawn) > MAX_WITHDRAWN:
            self._withdrawn.popitem(last=False)

    def answered_elsewhere(self, live: LiveSession, tool_call_id: str,
                           outcome: Mapping[str, Any], option_kind: str | None) -> None:
        """The session host says how another front end answered a request of this
        session's: what that answer allowed or refused counts for this turn as if answered
        here (the gate then does not ask again for the write it allowed). The request is
        the one asked here (still asked: the question goes), or withdrawn before it was
        (the tool call this session knows, with the option's kind the host names)."""
        if self._table.runtime(live.agent).launch is None:
            return  # only the session host answers a request elsewhere
        key = (live.session_id, tool_call_id)
        withdrawn = self._withdrawn.pop(key, None)
        asking = self._asking.pop(key, None)
        if withdrawn is None and asking is not None:
            # Still asked here: the answer is in, so the question goes.
            withdrawn = asking[0]
            asking[1].cancel()
        if withdrawn is None:
            withdrawn = self._from_tool_call(live, tool_call_id, outcome, option_kind)
        if withdrawn is None or withdrawn.live is not live:
            return
        self._remember_answer(live, withdrawn.request, {"outcome": dict(outcome)},
                              withdrawn.turn, withdrawn.targets)

    def _from_tool_call(self, live: LiveSession, tool_call_id: str,
                        outcome: Mapping[str, Any], option_kind: str | None
                        ) -> _Withdrawn | None:
        """A request withdrawn before it was asked here, rebuilt from the tool call this
        session knows (its files resolved now: a few paths, on the loop, so the answer
        counts before the agent's next request is read)."""
        record = live.model.tool_calls.get(tool_call_id)
        if record is None or option_kind not in APPROVAL_KINDS:
            return None
        known = {"toolCallId": record.tool_call_id, "title": record.title,
                 "kind": record.kind, "content": record.content,
                 "locations": record.locations, "rawInput": record.raw_input}
        params = {"sessionId": live.acp_id, "toolCall": {"toolCallId": tool_call_id},
                  "options": [{"optionId": outcome.get("optionId"), "kind": option_kind,
                               "name": option_kind}]}
        try:
            request = self.request_for(live, params, known)
        except MalformedPermission:
            return None
        given = absolute_paths(request.paths, live.cwd)
        return _Withdrawn(live, request, live.model.turn,
                          resolved_targets(given) if given else [])

    def _remember_answer(self, live: LiveSession, request: PermissionRequest,
                         outcome: Mapping[str, Any], turn: int,
                         targets: Sequence[Target]) -> None:
        chosen = outcome.get("outcome")
        if not isinstance(chosen, Mapping) or chosen.get("outcome") != "selected":
            return
        kind = request.kind_of(str(chosen.get("optionId")))
        if kind not in APPROVAL_KINDS:
            return
        if live.model.turn == turn:
            live.approvals.for_turn(turn).record(request, kind.startswith("allow"), targets,
                                                 live.cwd)

    def _record_permission(self, live: LiveSession, title: str, kind: str | None,
                           outcome: str) -> None:
        self._transcripts.record(live.transcript, {"type": "permission", "title": title,
                                                   "kind": kind, "outcome": outcome})
