"""The router's id mapping, both ways. Pure: every request a front end (or the host
itself) sends the agent gets a host id, since the front ends' own ids may collide; every
request the agent sends one front end gets that front end's next id. Each table is kept
until the answer comes, the asker leaves or the agent withdraws the request."""

from __future__ import annotations

import itertools
from typing import Any

from louise.serve.records import FrontEndState, ToAgent, ToFrontEnd
from louise.serve.routing import AGENT, CANCEL_REQUEST, NOT_ANSWERED, Message, Out, notification
from louise.serve.routing import error as _error


class RequestIds:
    def __init__(self) -> None:
        self._to_agent: dict[int, ToAgent] = {}
        self._to_front_end: dict[tuple[int, int], ToFrontEnd] = {}
        self._host_ids = itertools.count(1)

    # -- requests at the agent ---------------------------------------------------------

    def at_agent(self) -> int:
        """How many requests are at the agent, waiting for its answer."""
        return len(self._to_agent)

    def to_agent(self, pending: ToAgent, message: Message) -> tuple[int, Out]:
        """`message` to the agent under a new host id; its answer comes back to
        `answer_from_agent` with that id."""
        host_id = next(self._host_ids)
        self._to_agent[host_id] = pending
        return host_id, Out(AGENT, {**message, "id": host_id})

    def answer_from_agent(self, host_id: Any) -> ToAgent | None:
        """The request an agent's answer is for (no longer pending), or None."""
        return self._to_agent.pop(host_id, None) if isinstance(host_id, int) else None

    def find(self, front_end: int, original_id: Any) -> tuple[int, ToAgent] | None:
        """A front end's request at the agent, by the front end's id: its host id and
        record (None once answered)."""
        for host_id, pending in self._to_agent.items():
            if pending.front_end == front_end and pending.original_id == original_id:
                return host_id, pending
        return None

    def may_create_session(self) -> bool:
        """Whether a request that may answer with a new session is at the agent."""
        return any(p.method not in ("session/prompt", "initialize")
                   for p in self._to_agent.values())

    # -- the agent's requests at front ends --------------------------------------------

    def to_front_end(self, front_end: int, state: FrontEndState, message: Message,
                     session_id: Any) -> Out:
        fe_id = next(state.next_id)
        self._to_front_end[(front_end, fe_id)] = ToFrontEnd(
            message["id"], session_id if isinstance(session_id, str) else None)
        return Out(front_end, {**message, "id": fe_id})

    def answer_from_front_end(self, front_end: int, message: Message) -> Out | None:
        """A front end's answer to the agent's request, under the agent's id; None for
        an answer to nothing asked."""
        asked = self._to_front_end.pop((front_end, message["id"]), None)
        if asked is None:
            return None
        answer = {k: v for k, v in message.items() if k != "id"}
        return Out(AGENT, {**answer, "id": asked.agent_id})

    def withdrawn_by_agent(self, agent_id: Any) -> list[Out]:
        """The agent no longer wants an answer: the front end asked is told."""
        outs: list[Out] = []
        for key, asked in list(self._to_front_end.items()):
            if asked.agent_id == agent_id:
                del self._to_front_end[key]
                outs.append(Out(key[0], notification(CANCEL_REQUEST, {"requestId": key[1]})))
        return outs

    # -- endings -----------------------------------------------------------------------

    def front_end_gone(self, front_end: int) -> list[Out]:
        """Its requests at the agent go on unanswered; the agent's requests to it fail."""
        for pending in self._to_agent.values():
            if pending.front_end == front_end:
                pending.front_end = None
        outs: list[Out] = []
        for key in [key for key in self._to_front_end if key[0] == front_end]:
            asked = self._to_front_end.pop(key)
            outs.append(Out(AGENT, _error(asked.agent_id, NOT_ANSWERED,
                                          "the window that was asked closed")))
        return outs

    def agent_gone(self) -> list[ToAgent]:
        """Every request that was at the agent (forgotten)."""
        pending = list(self._to_agent.values())
        self._to_agent.clear()
        return pending
