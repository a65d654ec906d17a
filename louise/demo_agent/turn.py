"""One prompt turn: the vocabulary scenarios are written in.

A scenario is linear code (`await turn.say(...)`, `turn.tool_call(...)`,
`await turn.ask(...)`). Cancellation surfaces as `TurnCancelled` from any `await` on the
turn, so scenarios need no cancel checks of their own; the prompt handler then closes
the tool calls left open and answers `stopReason: "cancelled"`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import catalog
from .limits import UPDATED_METHOD, Account
from .sessions import Session
from .settings import Knobs
from .wire import PeerClosed, StdioPeer

JsonObject = dict[str, Any]

PERMISSION_OPTIONS: list[JsonObject] = [
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
]
_YIELD_EVERY = 16  # chunks streamed between yields when there is no delay
_OPTION_KINDS = {o["optionId"]: o["kind"] for o in PERMISSION_OPTIONS}


class TurnCancelled(Exception):
    """session/cancel, $/cancel_request or session/close arrived, or the client left."""


@dataclass(frozen=True)
class ClientCaps:
    """What the client advertised in `initialize`; we call nothing it did not offer."""

    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False
    auth_terminal: bool = False
    elicitation_form: bool = False
    elicitation_url: bool = False
    plan_operations: bool = False  # `plan`: plan_update and plan_removed (unstable)
    compaction: bool = False  # `session.compaction`: compaction updates (unstable)

    @classmethod
    def from_initialize(cls, params: JsonObject) -> ClientCaps:
        caps = params.get("clientCapabilities")
        caps = caps if isinstance(caps, dict) else {}
        fs = caps.get("fs")
        fs = fs if isinstance(fs, dict) else {}
        auth = caps.get("auth")
        elicitation = caps.get("elicitation")
        elicitation = elicitation if isinstance(elicitation, dict) else {}
        session = caps.get("session")
        session = session if isinstance(session, dict) else {}
        return cls(
            plan_operations=isinstance(caps.get("plan"), dict),
            compaction=isinstance(session.get("compaction"), dict),
            elicitation_form=isinstance(elicitation.get("form"), dict),
            elicitation_url=isinstance(elicitation.get("url"), dict),
            read_text_file=fs.get("readTextFile") is True,
            write_text_file=fs.get("writeTextFile") is True,
            terminal=caps.get("terminal") is True,
            auth_terminal=isinstance(auth, dict) and auth.get("terminal") is True,
        )


@dataclass
class AgentState:
    """Process-wide state a prompt may change: the account and the sticky fail switches."""

    account: Account = field(default_factory=Account)
    never_answer_new: bool = False  # fail mode: session/new never gets a reply

    def send_limits_updated(self, peer: StdioPeer) -> bool:
        """Send the complete snapshot as an `updated` notification (not when reads fail)."""
        snapshot = self.account.current()
        if snapshot is None:
            return False
        peer.notify(UPDATED_METHOD, snapshot)
        return True


def usage_update(session: Session) -> JsonObject:
    return {
        "sessionUpdate": "usage_update",
        "used": session.used_tokens,
        "size": catalog.CONTEXT_WINDOW,
        "cost": {
            "amount": round(session.used_tokens * catalog.USD_PER_TOKEN, 6),
            "currency": "USD",
        },
    }


def text_content(text: str) -> JsonObject:
    """Tool-call content holding a text block."""
    return {"type": "content", "content": {"type": "text", "text": text}}


def word_pieces(text: str, words_per_piece: int = 3) -> list[str]:
    """Split text into streamable pieces of a few words, whitespace kept."""
    words = re.findall(r"\s*\S+\s*", text) or [text]
    return ["".join(words[i : i + words_per_piece]) for i in range(0, len(words), words_per_piece)]


class Turn:
    def __init__(
        self,
        peer: StdioPeer,
        session: Session,
        client: ClientCaps,
        knobs: Knobs,
        prompt: str,
        state: AgentState,
    ) -> None:
        self.peer = peer
        self.state = state
        self.session = session
        self.client = client
        self.knobs = knobs
        self.prompt = prompt
        self.cancelled = asyncio.Event()
        self.by_request = False  # cancelled by $/cancel_request: answer -32800, not a stopReason
        self.output_chars = 0
        self._open_calls: list[str] = []
        self.steered: list[str] = []  # text sent into this turn, for a scenario to read

    # ---- cancellation ---------------------------------------------------------------

    def cancel(self, *, by_request: bool = False) -> None:
        self.by_request = self.by_request or by_request
        self.cancelled.set()

    def check(self) -> None:
        if self.cancelled.is_set():
            raise TurnCancelled

    async def pause(self, delay_ms: float) -> None:
        """Wait `delay_ms` (0 still yields, so cancels get read); raise if cancelled."""
        if delay_ms <= 0:
            await asyncio.sleep(0)
        else:
            with contextlib.suppress(TimeoutError):  # the delay ran out: not cancelled
                await asyncio.wait_for(self.cancelled.wait(), delay_ms / 1000)
        self.check()

    def check_client_alive(self) -> None:
        """For open-ended waits only: after stdin EOF nobody can cancel us any more."""
        if self.peer.closed.is_set():
            raise TurnCancelled

    async def until_cancelled(self) -> None:
        waiters = [asyncio.ensure_future(e.wait()) for e in (self.cancelled, self.peer.closed)]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        raise TurnCancelled

    # ---- updates ----------------------------------------------------------------------

    def update(self, update: JsonObject) -> None:
        self.peer.notify("session/update", {"sessionId": self.session.id, "update": update})
        self.session.record(update)

    def new_message_id(self) -> str:
        self.session.next_message += 1
        return f"{self.session.id}-m{self.session.next_message}"

    def chunk(self, text: str, message_id: str, kind: str = "agent_message_chunk") -> None:
        self.output_chars += len(text)
        self.update(
            {
                "sessionUpdate": kind,
                "messageId": message_id,
                "content": {"type": "text", "text": text},
            }
        )

    async def stream(
        self, pieces: Iterable[str], *, delay_ms: float, kind: str = "agent_message_chunk"
    ) -> None:
        """Send pieces as chunks of one message (one messageId), pausing between them."""
        message_id = self.new_message_id()
        for count, piece in enumerate(pieces, 1):
            self.check()
            self.chunk(piece, message_id, kind)
            # Without a delay, yield every few chunks only: enough to read a cancel
            # promptly, without one event-loop step per chunk.
            if delay_ms > 0 or count % _YIELD_EVERY == 0:
                await self.pause(delay_ms)
        await self.pause(0)

    async def say(self, text: str, *, delay_ms: float = 0) -> None:
        await self.stream(word_pieces(text), delay_ms=delay_ms)

    async def think(self, text: str, *, delay_ms: float = 0) -> None:
        await self.stream(word_pieces(text), delay_ms=delay_ms, kind="agent_thought_chunk")

    def plan(self, entries: list[tuple[str, str]], priority: str = "medium") -> None:
        """The complete plan: (content, status) pairs."""
        self.update(
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": content, "priority": priority, "status": status}
                    for content, status in entries
                ],
            }
        )

    # ---- tool calls -------------------------------------------------------------------

    def tool_call(self, title: str, kind: str, **fields: Any) -> str:
        self.session.next_tool_call += 1
        call_id = f"{self.session.id}-call-{self.session.next_tool_call}"
        update: JsonObject = {
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": title,
            "kind": kind,
            "status": "pending",
        }
        update.update(fields)
        self.update(update)
        self._open_calls.append(call_id)
        return call_id

    def tool_update(self, call_id: str, **fields: Any) -> None:
        """Send only the changed fields (`content` and `locations` replace the lists)."""
        self.update({"sessionUpdate": "tool_call_update", "toolCallId": call_id, **fields})
        if fields.get("status") in ("completed", "failed") and call_id in self._open_calls:
            self._open_calls.remove(call_id)

    def fail_open_tool_calls(self, reason: str) -> None:
        # v1 has no "cancelled" tool status; failed plus a reason is the closest.
        for call_id in list(self._open_calls):
            self.tool_update(call_id, status="failed", rawOutput={"reason": reason})

    def path(self, relative: str) -> str:
        """An absolute path (ACP requires them) inside the session's cwd."""
        return relative if os.path.isabs(relative) else os.path.join(self.session.cwd, relative)

    # ---- requests to the client ----------------------------------------------------------

    async def ask(self, method: str, params: JsonObject, *, even_if_cancelled: bool = False) -> Any:
        """Call the client and wait for its answer, unless the turn is cancelled first.

        RpcError from the client passes through. `even_if_cancelled` is for clean-up
        after a cancel (releasing a terminal), which must still be waited for.
        """
        if not even_if_cancelled:
            self.check()
        request_id, reply = self.peer.start_request(
            method, {"sessionId": self.session.id, **params}
        )
        try:
            if even_if_cancelled:
                return await reply
            cancel = asyncio.ensure_future(self.cancelled.wait())
            try:
                await asyncio.wait([reply, cancel], return_when=asyncio.FIRST_COMPLETED)
            finally:
                cancel.cancel()
            if not reply.done():
                # Withdraw the question so the client can close its dialog; it may still
                # answer, and that late answer is ignored.
                self.peer.abandon(request_id)
                raise TurnCancelled
            return reply.result()
        except PeerClosed:
            raise TurnCancelled from None
        finally:
            self.peer.forget(request_id)

    async def permission(self, call_id: str, title: str, kind: str) -> str:
        """Ask before acting: "allow", "reject" or "cancelled". Anything odd rejects."""
        remembered = self.session.always.get(kind)
        if remembered is not None:
            return remembered
        result = await self.ask(
            "session/request_permission",
            {
                "toolCall": {
                    "toolCallId": call_id,
                    "title": title,
                    "kind": kind,
                    "status": "pending",
                },
                "options": PERMISSION_OPTIONS,
            },
        )
        outcome = result.get("outcome") if isinstance(result, dict) else None
        if not isinstance(outcome, dict):
            return "reject"  # fail closed
        if outcome.get("outcome") == "cancelled":
            return "cancelled"
        option_id = outcome.get("optionId")
        if outcome.get("outcome") != "selected" or not isinstance(option_id, str):
            return "reject"
        option_kind = _OPTION_KINDS.get(option_id)
        if option_kind is None:
            return "reject"
        decision = "allow" if option_kind.startswith("allow") else "reject"
        if option_kind == "allow_always":
            # As claude-agent-acp and codex-acp do ("Always Allow", "Approve for session"):
            # an allow is remembered; a refusal is not, the client remembers it (and says
            # so) when it offered "always reject".
            self.session.always[kind] = decision
        return decision
