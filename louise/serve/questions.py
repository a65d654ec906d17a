"""The agent's permission requests open at the host (pure): sent to every front end
attached to the session; the first answer wins and the others get `$/cancel_request` and
`_louise/permission_answered` (who answered, and what); a window that withdraws (answers
`cancelled`) leaves it to the others. With nobody attached a request waits, to be sent
with its age (`_meta.louise`: `askedAt`, `waitedSeconds`) to the next front end that
attaches, unless the automatic answer (the configured rules) gives one; past the
longest wait it is cancelled, never allowed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from louise.serve.routing import (
    AGENT,
    ANSWERED_METHOD,
    CANCEL_REQUEST,
    CANCELLED,
    PERMISSION_METHOD,
    AutoAnswer,
    Message,
    Out,
    notification,
    result,
)

DEFAULT_MAX_OPEN = 64


@dataclass(slots=True)
class _Question:
    agent_id: Any
    session_id: str
    params: dict[str, Any]
    asked_at: float
    held_by: dict[int, int] = field(default_factory=dict)  # front end -> its request id


class Questions:
    """`next_id(front_end)` gives a front end's next request id; `who(front_end)` words
    who answered (None: the configured rules, or nobody)."""

    def __init__(self, next_id: Callable[[int], int], who: Callable[[int | None], str], *,
                 auto_answer: AutoAnswer | None = None,
                 max_open: int = DEFAULT_MAX_OPEN) -> None:
        self._next_id = next_id
        self._who = who
        self._auto_answer = auto_answer
        self._max_open = max_open
        self._open: dict[Any, _Question] = {}  # by the agent's request id

    def __bool__(self) -> bool:
        return bool(self._open)

    def in_session(self, session_id: str) -> bool:
        return any(q.session_id == session_id for q in self._open.values())

    def ask(self, agent_id: Any, session_id: str, cwd: str | None,
            front_ends: Iterable[int], params: dict[str, Any], now: float,
            known_tool_call: dict[str, Any] | None = None) -> list[Out]:
        if len(self._open) >= self._max_open or agent_id in self._open:
            return [Out(AGENT, result(agent_id, CANCELLED))]
        question = _Question(agent_id, session_id, params, now)
        self._open[agent_id] = question
        attached = list(front_ends)
        if not attached and self._auto_answer is not None:
            answer = self._auto_answer(params, cwd, known_tool_call)
            if answer is not None:
                return self.answer(agent_id, answer, None)
        return [self._send(fe, question, now, resent=False) for fe in attached]

    def _send(self, front_end: int, question: _Question, now: float, *,
              resent: bool) -> Out:
        fe_id = self._next_id(front_end)
        question.held_by[front_end] = fe_id
        params = question.params
        if resent:
            meta = params.get("_meta")
            meta = dict(meta) if isinstance(meta, dict) else {}
            meta["louise"] = {"askedAt": question.asked_at,
                              "waitedSeconds": max(0, int(now - question.asked_at))}
            params = {**params, "_meta": meta}
        return Out(front_end, {"jsonrpc": "2.0", "id": fe_id, "method": PERMISSION_METHOD,
                               "params": params})

    def resend_to(self, front_end: int, session_id: str, now: float) -> list[Out]:
        """The questions waiting in a session, for a front end that attached to it."""
        return [self._send(front_end, q, now, resent=True) for q in self._open.values()
                if q.session_id == session_id and front_end not in q.held_by]

    def answer_from(self, front_end: int, message: Message) -> list[Out] | None:
        """A front end's answer to one of its questions; None when it answers none."""
        found = next(((agent_id, question) for agent_id, question in self._open.items()
                      if question.held_by.get(front_end) == message["id"]), None)
        if found is None:
            return None
        agent_id, question = found
        value = message.get("result")
        outcome = value.get("outcome") if isinstance(value, dict) else None
        withdrawn = not isinstance(outcome, dict) or outcome.get("outcome") != "selected"
        if withdrawn and len(question.held_by) > 1:
            # One window gave up on it (its chat closed): the others still hold it.
            del question.held_by[front_end]
            return []
        chosen = value if not withdrawn and isinstance(value, dict) else CANCELLED
        return self.answer(agent_id, chosen, front_end)

    def answer(self, agent_id: Any, value: dict[str, Any], by: int | None) -> list[Out]:
        question = self._open.pop(agent_id)
        outs = [Out(AGENT, result(agent_id, value))]
        outcome = value.get("outcome", CANCELLED["outcome"])
        answered: dict[str, Any] = {
            "sessionId": question.session_id, "toolCallId": _tool_call_id(question.params),
            "outcome": outcome, "by": self._who(by)}
        option = _option(question.params, outcome)
        if option is not None:
            answered["optionKind"] = option.get("kind")
            answered["optionName"] = option.get("name")
        for fe, fe_id in question.held_by.items():
            if fe != by:
                outs.append(Out(fe, notification(CANCEL_REQUEST, {"requestId": fe_id})))
                outs.append(Out(fe, notification(ANSWERED_METHOD, answered)))
        return outs

    def cancel_session(self, session_id: Any, by: int) -> list[Out]:
        """The session's turn was cancelled: its questions are answered so."""
        outs: list[Out] = []
        for agent_id, question in list(self._open.items()):
            if question.session_id == session_id:
                outs += self.answer(agent_id, CANCELLED, by)
        return outs

    def withdrawn_by_agent(self, agent_id: Any) -> list[Out]:
        question = self._open.pop(agent_id, None)
        if question is None:
            return []
        return [Out(fe, notification(CANCEL_REQUEST, {"requestId": fe_id}))
                for fe, fe_id in question.held_by.items()]

    def forget_front_end(self, front_end: int, session_id: str | None = None) -> None:
        """The front end is gone (from `session_id`, or from all): not asked any more."""
        for question in self._open.values():
            if session_id is None or question.session_id == session_id:
                question.held_by.pop(front_end, None)

    def expire(self, now: float, max_wait: float) -> list[Out]:
        outs: list[Out] = []
        for agent_id, question in list(self._open.items()):
            if now - question.asked_at > max_wait:
                outs += self.answer(agent_id, CANCELLED, None)
        return outs

    def clear(self) -> None:
        self._open.clear()


def _tool_call_id(params: dict[str, Any]) -> Any:
    call = params.get("toolCall")
    return call.get("toolCallId") if isinstance(call, dict) else None


def _option(params: dict[str, Any], outcome: Any) -> dict[str, Any] | None:
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return None
    for option in params.get("options") or []:
        if isinstance(option, dict) and option.get("optionId") == outcome.get("optionId"):
            return option
    return None
