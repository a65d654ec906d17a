"""The routing between the front ends attached to one agent and that agent. Pure: messages
in, messages out (`Out`), no I/O.

- Ids (`request_ids.RequestIds`): every request a front end sends the agent gets a host
  id (the front ends' ids may collide); every request the agent sends a front end gets
  that front end's own id.
- Sessions: which front ends are attached to which session; every `session/update` goes
  to all of them and into the session's history (`replay.SessionHistory`), replayed once
  to a front end that loads a session the host has live.
- One prompt queue per session: a prompt while one runs waits (bounded) and is sent when
  the previous ends; every front end but its sender sees it as a `user_message_chunk`.
- Permission requests go to every attached front end; the first answer wins, the others
  get `$/cancel_request` and `_louise/permission_answered`. With nobody attached a
  request waits (and is sent, with its age, to the next front end that attaches) unless
  the automatic answer (`auto_answer`, the configured rules) gives one; never allowed
  by default.
- The host's own `_louise/*` methods never come from the agent: dropped (a request is
  answered method-not-found).
- The agent's `fs/*` go to the front end whose prompt runs when it is on this machine and
  offers them (its buffers are the files); otherwise, and for `terminal/*`, the host
  answers them (`Out.to == HOST`).
"""

from __future__ import annotations

from typing import Any

from louise.serve.echo import PromptEcho
from louise.serve.hello import FrontEnd
from louise.serve.questions import DEFAULT_MAX_OPEN, Questions
from louise.serve.records import (
    FrontEndState,
    Queued,
    Session,
    ToAgent,
    with_running,
)
from louise.serve.replay import EarlyUpdates, SessionHistory, user_message_updates
from louise.serve.request_ids import RequestIds
from louise.serve.routing import (
    AGENT,
    CANCEL_REQUEST,
    CANCELLED,
    HOST,
    INTERNAL,
    METHOD_NOT_FOUND,
    NOT_ANSWERED,
    PERMISSION_METHOD,
    REQUEST_CANCELLED,
    TURN_ENDED_METHOD,
    AutoAnswer,
    Message,
    Out,
    is_host_method,
    notification,
)
from louise.serve.routing import error as _error
from louise.serve.routing import result as _result

__all__ = ["AGENT", "CANCELLED", "HOST", "AutoAnswer", "Out", "Router"]

DEFAULT_MAX_QUEUED_PROMPTS = 16
DEFAULT_MAX_PENDING_REQUESTS = 4096
DEFAULT_MAX_SESSIONS = 256


class Router:
    """One agent and the front ends attached to it. `initialize_result` is the agent's
    answer to the host's own `initialize`, given to every front end that initializes."""

    def __init__(self, *, auto_answer: AutoAnswer | None = None,
                 max_queued_prompts: int = DEFAULT_MAX_QUEUED_PROMPTS,
                 max_pending_permissions: int = DEFAULT_MAX_OPEN,
                 max_pending_requests: int = DEFAULT_MAX_PENDING_REQUESTS,
                 history_bytes: int | None = None) -> None:
        self.initialize_result: dict[str, Any] | None = None
        self._max_queued = max_queued_prompts
        self._max_requests = max_pending_requests
        self._history_bytes = history_bytes
        self._front_ends: dict[int, FrontEndState] = {}
        self._sessions: dict[str, Session] = {}
        self._ids = RequestIds()
        self._questions = Questions(self._next_front_end_id, self._who,
                                    auto_answer=auto_answer,
                                    max_open=max_pending_permissions)
        self._early = EarlyUpdates()

    # -- what the host asks ------------------------------------------------------------

    def working(self) -> bool:
        """Whether any session has a turn running or queued, or a question open."""
        return bool(self._questions) or any(
            session.running is not None or session.queue for session in self._sessions.values())

    def session_cwd(self, session_id: Any) -> str | None:
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        return session.cwd if session is not None else None

    def history(self, session_id: str) -> SessionHistory | None:
        session = self._sessions.get(session_id)
        return session.history if session is not None else None

    def host_request(self, method: str, params: dict[str, Any]) -> tuple[int, Out]:
        """A request of the host's own to the agent (its `initialize`); its answer comes
        back as `Out(HOST, answer)`."""
        return self._ids.to_agent(ToAgent(None, None, method, None),
                                  {"jsonrpc": "2.0", "method": method, "params": params})

    # -- front ends coming and going ---------------------------------------------------

    def attach(self, front_end: int, info: FrontEnd) -> None:
        self._front_ends[front_end] = FrontEndState(info)

    def detach(self, front_end: int) -> list[Out]:
        """The front end is gone: its sessions keep going, its open questions stay open
        for the others (or the next), the agent's other requests to it fail."""
        if self._front_ends.pop(front_end, None) is None:
            return []
        outs: list[Out] = []
        for session in self._sessions.values():
            if front_end in session.front_ends:
                session.front_ends.remove(front_end)
            session.loading = [(fe, rid) for fe, rid in session.loading if fe != front_end]
            if session.running_front_end == front_end:
                session.running_front_end = None
            for queued in session.queue:
                if queued.front_end == front_end:
                    queued.front_end = None
        outs += self._ids.front_end_gone(front_end)
        self._questions.forget_front_end(front_end)
        return outs

    # -- from a front end --------------------------------------------------------------

    def from_front_end(self, front_end: int, message: Message, now: float) -> list[Out]:
        state = self._front_ends.get(front_end)
        if state is None:
            return []
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                return self._front_end_request(front_end, state, message, method, now)
            return self._front_end_notification(front_end, message, method)
        if "id" in message and ("result" in message or "error" in message):
            return self._front_end_answer(front_end, message)
        return []

    def _front_end_request(self, front_end: int, state: FrontEndState, message: Message,
                           method: str, now: float) -> list[Out]:
        request_id = message["id"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            caps = params.get("clientCapabilities")
            state.capabilities = caps if isinstance(caps, dict) else {}
            if self.initialize_result is None:
                return [Out(front_end, _error(request_id, INTERNAL, "the agent is not ready"))]
            return [Out(front_end, _result(request_id, self.initialize_result))]
        session_id = params.get("sessionId")
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if method in ("session/load", "session/resume") and session is not None:
            return self._attach_live(front_end, session, request_id, method, now)
        if self._ids.at_agent() >= self._max_requests:
            return [Out(front_end, _error(request_id, INTERNAL, "too many requests at once"))]
        if method == "session/prompt" and session is not None:
            return self._prompt(front_end, session, message, now)
        if method == "session/close" and session is not None:
            closed = self._close(front_end, session, request_id)
            if closed is not None:
                return closed
        if method in ("session/load", "session/resume") and isinstance(session_id, str):
            session = self._new_session(session_id, params.get("cwd"))
            session.front_ends.append(front_end)
        cwd = params.get("cwd")
        return [self._forward(front_end, message, method,
                              session_id if isinstance(session_id, str) else None,
                              cwd if isinstance(cwd, str) else None)]

    def _forward(self, front_end: int, message: Message, method: str,
                 session_id: str | None, cwd: str | None) -> Out:
        return self._ids.to_agent(ToAgent(front_end, message["id"], method, session_id, cwd),
                                  message)[1]

    def _new_session(self, session_id: str, cwd: Any) -> Session:
        if len(self._sessions) >= DEFAULT_MAX_SESSIONS:
            # The oldest session nobody looks at and nothing runs in is forgotten here (the
            # agent keeps it: a later load asks the agent again).
            for old_id, old in self._sessions.items():
                if (not old.front_ends and old.running is None and not old.queue
                        and not self._questions.in_session(old_id)):
                    del self._sessions[old_id]
                    break
        history = (SessionHistory() if self._history_bytes is None
                   else SessionHistory(self._history_bytes))
        session = Session(session_id, cwd if isinstance(cwd, str) else None, history)
        self._sessions[session_id] = session
        return session

    def _attach_live(self, front_end: int, session: Session, request_id: Any,
                     method: str, now: float) -> list[Out]:
        """A session the host has: its history once (for a load), then live updates, its
        open questions with their age; answered at once, or with the agent's load."""
        outs: list[Out] = []
        if front_end not in session.front_ends:
            if method == "session/load":
                outs += [Out(front_end, update) for update in session.history.replay(
                    session.session_id)]
            session.front_ends.append(front_end)
        if session.live:
            outs.append(Out(front_end, _result(request_id, with_running(session))))
            outs += self._questions.resend_to(front_end, session.session_id, now)
        else:
            session.loading.append((front_end, request_id))
        return outs

    def _close(self, front_end: int, session: Session, request_id: Any) -> list[Out] | None:
        """A front end closing a session leaves it; the agent closes it only when nobody
        else is attached and nothing runs or waits there (None: forward the close)."""
        if front_end in session.front_ends:
            session.front_ends.remove(front_end)
        self._questions.forget_front_end(front_end, session.session_id)
        if (session.front_ends or session.running is not None or session.queue
                or self._questions.in_session(session.session_id)):
            return [Out(front_end, _result(request_id, {}))]
        del self._sessions[session.session_id]
        return None

    def _prompt(self, front_end: int, session: Session, message: Message,
                now: float) -> list[Out]:
        if front_end not in session.front_ends:
            session.front_ends.append(front_end)
        if session.running is None:
            return self._send_prompt(session, Queued(front_end, message["id"], message))
        if len(session.queue) >= self._max_queued:
            return [Out(front_end, _error(message["id"], NOT_ANSWERED,
                                          f"{self._max_queued} prompts are already waiting "
                                          "in this session; try again when one has run"))]
        session.queue.append(Queued(front_end, message["id"], message))
        return []

    def _send_prompt(self, session: Session, queued: Queued) -> list[Out]:
        host_id, sent = self._ids.to_agent(ToAgent(queued.front_end, queued.original_id,
                                                   "session/prompt", session.session_id),
                                           queued.message)
        session.running = host_id
        session.running_front_end = queued.front_end
        params = queued.message.get("params")
        prompt = params.get("prompt") if isinstance(params, dict) else None
        session.echo = PromptEcho.of(prompt)
        updates = user_message_updates(prompt)
        outs: list[Out] = []
        for update in updates:
            session.history.record(update)
            note = {"jsonrpc": "2.0", "method": "session/update",
                    "params": {"sessionId": session.session_id, "update": update}}
            outs += [Out(fe, note) for fe in session.front_ends if fe != queued.front_end]
        outs.append(sent)
        return outs

    def _front_end_notification(self, front_end: int, message: Message,
                                method: str) -> list[Out]:
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == CANCEL_REQUEST:
            return self._cancel_request(front_end, message, params)
        outs = [Out(AGENT, message)]
        if method == "session/cancel":
            # The turn ends cancelled: its open questions are answered so, for everyone.
            outs += self._questions.cancel_session(params.get("sessionId"), front_end)
        return outs

    def _cancel_request(self, front_end: int, message: Message,
                        params: dict[str, Any]) -> list[Out]:
        """A front end no longer waits for an answer: a prompt still in the queue leaves
        it (ended `cancelled`); a running prompt's turn goes on for the others (ACP stops a
        turn with `session/cancel`), its answer no longer goes to this front end; any other
        request at the agent is cancelled there."""
        wanted = params.get("requestId")
        for session in self._sessions.values():
            for queued in session.queue:
                if queued.front_end == front_end and queued.original_id == wanted:
                    session.queue.remove(queued)
                    return [Out(front_end, _result(wanted, {"stopReason": "cancelled"}))]
        found = self._ids.find(front_end, wanted)
        if found is None:
            return []
        host_id, pending = found
        if pending.method == "session/prompt":
            pending.front_end = None  # its end comes as `_louise/turn_ended`, as to others
            return [Out(front_end, _error(wanted, REQUEST_CANCELLED,
                                          "no longer waited for; the turn goes on"))]
        return [Out(AGENT, {**message, "params": {**params, "requestId": host_id}})]

    def _front_end_answer(self, front_end: int, message: Message) -> list[Out]:
        if not isinstance(message["id"], int):
            return []
        answered = self._questions.answer_from(front_end, message)
        if answered is not None:
            return answered
        answer = self._ids.answer_from_front_end(front_end, message)
        return [] if answer is None else [answer]

    def _next_front_end_id(self, front_end: int) -> int:
        return next(self._front_ends[front_end].next_id)

    def _who(self, front_end: int | None) -> str:
        state = self._front_ends.get(front_end) if front_end is not None else None
        if state is None:
            return "louise serve (configured rules)" if front_end is None else "a closed window"
        pid = f" (pid {state.info.pid})" if state.info.pid else ""
        return {"nvim": "Neovim", "cli": "louise chat"}.get(state.info.name,
                                                             "an ACP client") + pid

    # -- from the agent ----------------------------------------------------------------

    def from_agent(self, message: Message, now: float) -> list[Out]:
        method = message.get("method")
        if is_host_method(method):
            # A forgery of the host's own word (say an answer "from another window"):
            # never passed on; a request is told there is no such method.
            if "id" not in message:
                return []
            return [Out(AGENT, _error(message["id"], METHOD_NOT_FOUND,
                                      f"louise serve has no method {method!r} for agents"))]
        if isinstance(method, str):
            if "id" in message:
                return self._agent_request(message, method, now)
            return self._agent_notification(message, method)
        if "id" in message and ("result" in message or "error" in message):
            return self._agent_answer(message, now)
        return []

    def _agent_answer(self, message: Message, now: float) -> list[Out]:
        host_id = message["id"]
        pending = self._ids.answer_from_agent(host_id)
        if pending is None:
            return []
        if pending.front_end is None and pending.original_id is None:
            return [Out(HOST, message)]  # the host's own request
        outs: list[Out] = []
        result = message.get("result")
        if pending.method == "session/new" and isinstance(result, dict):
            outs += self._created(pending, result)
        elif (isinstance(result, dict) and isinstance(result.get("sessionId"), str)
              and result["sessionId"] not in self._sessions
              and pending.method not in ("session/load", "session/resume")):
            outs += self._created(pending, result)  # a fork, or any other new session
        elif pending.method in ("session/load", "session/resume") and pending.session_id:
            outs += self._loaded(pending, message, now)
        elif pending.method == "session/prompt" and pending.session_id:
            outs += self._turn_ended(pending.session_id, host_id, pending.front_end, message)
        if pending.front_end is not None:
            outs.insert(0, Out(pending.front_end, {**message, "id": pending.original_id}))
        return outs

    def _created(self, pending: ToAgent, result: dict[str, Any]) -> list[Out]:
        session_id = result.get("sessionId")
        if not isinstance(session_id, str):
            return []
        session = self._sessions.get(session_id) or self._new_session(session_id, pending.cwd)
        session.live = True
        session.setup_result = {k: v for k, v in result.items() if k != "sessionId"}
        if pending.front_end is not None and pending.front_end not in session.front_ends:
            session.front_ends.append(pending.front_end)
        outs: list[Out] = []
        for early in self._early.take(session_id):
            outs += self._deliver(session, early)
        return outs

    def _loaded(self, pending: ToAgent, message: Message, now: float) -> list[Out]:
        session = self._sessions.get(pending.session_id or "")
        if session is None:
            return []
        waiting, session.loading = session.loading, []
        result = message.get("result")
        if isinstance(result, dict):
            session.live = True
            session.setup_result = dict(result)
            outs = [Out(fe, _result(rid, result)) for fe, rid in waiting]
            for fe in session.front_ends:
                outs += self._questions.resend_to(fe, session.session_id, now)
            return outs
        outs = [Out(fe, {**message, "id": rid}) for fe, rid in waiting]
        if not session.live and session.running is None:
            del self._sessions[session.session_id]  # the agent does not have it
        return outs

    def _turn_ended(self, session_id: str, host_id: int, sender: int | None,
                    answer: Message) -> list[Out]:
        """The turn's end, told to the session's other front ends (ACP has no word for
        it: they did not send the prompt), then the next queued prompt."""
        session = self._sessions.get(session_id)
        if session is None or session.running != host_id:
            return []
        session.running = None
        session.running_front_end = None
        session.echo = None
        value = answer.get("result")
        stop = value.get("stopReason") if isinstance(value, dict) else None
        ended = notification(TURN_ENDED_METHOD, {"sessionId": session_id,
                                                 "stopReason": stop or "error"})
        outs = [Out(fe, ended) for fe in session.front_ends if fe != sender]
        if session.queue:
            outs += self._send_prompt(session, session.queue.popleft())
        return outs

    def _agent_notification(self, message: Message, method: str) -> list[Out]:
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == CANCEL_REQUEST:
            return self._agent_withdrew(params.get("requestId"))
        session_id = params.get("sessionId")
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is not None:
            return self._deliver(session, message)
        if isinstance(session_id, str):
            if self._ids.may_create_session():  # kept for the answer on its way
                self._early.keep(session_id, message)
            return []
        return [Out(fe, message) for fe in self._front_ends]  # e.g. the account limits

    def _deliver(self, session: Session, message: Message) -> list[Out]:
        params = message.get("params")
        if message.get("method") == "session/update" and isinstance(params, dict):
            update = params.get("update")
            if isinstance(update, dict) and update.get("sessionUpdate") == "user_message_chunk" \
                    and session.echo is not None:
                if session.echo.takes(update):  # shown to the others and kept already
                    sender = session.running_front_end
                    return [Out(sender, message)] if sender in session.front_ends else []
                session.echo = None
            session.history.record(update)
            if isinstance(update, dict) and update.get("sessionUpdate") in (
                    "tool_call", "tool_call_update"):
                session.note_tool_call(update)
        return [Out(fe, message) for fe in session.front_ends]

    def _agent_withdrew(self, agent_id: Any) -> list[Out]:
        return self._questions.withdrawn_by_agent(agent_id) + self._ids.withdrawn_by_agent(
            agent_id)

    def _agent_request(self, message: Message, method: str, now: float) -> list[Out]:
        agent_id = message["id"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        session_id = params.get("sessionId")
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if method == PERMISSION_METHOD:
            if session is None:
                return [Out(AGENT, _result(agent_id, CANCELLED))]
            call = params.get("toolCall")
            call_id = call.get("toolCallId") if isinstance(call, dict) else None
            known = session.tool_calls.get(call_id) if isinstance(call_id, str) else None
            return self._questions.ask(agent_id, session.session_id, session.cwd,
                                       session.front_ends, params, now, known)
        if method.startswith("terminal/"):
            return [Out(HOST, message)]
        if method.startswith("fs/"):
            owner = session.running_front_end if session is not None else None
            state = self._front_ends.get(owner) if owner is not None else None
            if owner is None or state is None or not state.offers_fs(method):
                return [Out(HOST, message)]
            return [self._ids.to_front_end(owner, state, message, session_id)]
        # Anything else (a sign-in, a form): the window whose prompt runs, else any
        # window on that session, else no one.
        candidates = ([] if session is None else
                      [fe for fe in [session.running_front_end, *session.front_ends]
                       if fe is not None and fe in self._front_ends])
        if not candidates:
            return [Out(AGENT, _error(agent_id, NOT_ANSWERED,
                                      "no window is attached to this session to answer"))]
        fe = candidates[0]
        return [self._ids.to_front_end(fe, self._front_ends[fe], message, session_id)]

    def expire_permissions(self, now: float, max_wait: float) -> list[Out]:
        """Questions that waited longer than `max_wait` are cancelled (never allowed)."""
        return self._questions.expire(now, max_wait)

    def agent_gone(self) -> list[Out]:
        """The agent exited: every request a front end has at it fails."""
        outs = [Out(pending.front_end, _error(pending.original_id, INTERNAL,
                                              "the agent exited"))
                for pending in self._ids.agent_gone() if pending.front_end is not None]
        for session in self._sessions.values():
            outs += [Out(q.front_end, _error(q.original_id, INTERNAL, "the agent exited"))
                     for q in session.queue if q.front_end is not None]
            outs += [Out(fe, _error(rid, INTERNAL, "the agent exited"))
                     for fe, rid in session.loading]
        self._sessions.clear()
        self._questions.clear()
        self._early.clear()
        return outs
