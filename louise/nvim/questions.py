"""Questions for the person in Neovim that an agent's request or a command waits on:
which sign-in method, whether to run a sign-in command in a terminal (and how it ended),
an agent's elicitation form or URL.

As with permissions, Python never asks Neovim a blocking question: the question goes out
in a frame (the outbox's `ask` slot, `lua/louise/ask.lua` shows it) and the answer comes
back as the `answer` command. Everything fails closed: a full slot, too many open
questions, a frame that failed to show it, or a question withdrawn all answer None
(declined), never a default "yes".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from louise.acp.auth import AuthMethod, TerminalInvocation
from louise.nvim.screen import Screen

if TYPE_CHECKING:  # imported with an agent's first elicitation (registry/elicitation.py)
    from louise.acp.elicitation import ElicitationRequest

log = logging.getLogger("louise.nvim")

MAX_OPEN_QUESTIONS = 32
# What a one-line prompt shows of an agent's strings: its method name, its message to the
# person, the URL (the host and the warnings come first, whole).
MAX_SHOWN_NAME = 80
MAX_SHOWN_MESSAGE = 200
MAX_SHOWN_URL = 300


@dataclass
class _Pending:
    """A question shown to the person, until answered."""

    answered: anyio.Event = field(default_factory=anyio.Event)
    value: Any = None


class Questions:
    """Open questions by id; `ask` waits for the person's answer."""

    def __init__(self, screen: Screen) -> None:
        self._screen = screen
        self._pending: dict[int, _Pending] = {}
        self._ids = 0

    @property
    def open(self) -> int:
        return len(self._pending)

    async def ask(self, kind: str, data: dict[str, Any]) -> Any:
        """Show a question of `kind` and return the answer (None: declined or lost)."""
        if len(self._pending) >= MAX_OPEN_QUESTIONS:
            self._screen.notify("louise: too many questions wait for an answer; declined one",
                                "warn")
            return None
        self._ids += 1
        ident = self._ids
        pending = self._pending[ident] = _Pending()
        try:
            if not self._screen.outbox.ask.put({**data, "id": ident, "kind": kind}):
                return None
            self._screen.mark()
            await pending.answered.wait()
            return pending.value
        finally:
            self._pending.pop(ident, None)

    def answer(self, ident: int, value: Any) -> None:
        pending = self._pending.get(ident)
        if pending is not None and not pending.answered.is_set():
            pending.value = value
            pending.answered.set()

    def decline(self, idents: Sequence[int]) -> None:
        """Questions whose frame failed to show: declined (fail closed)."""
        for ident in idents:
            self.answer(ident, None)


def _clip(text: str, limit: int) -> str:
    """`text` for a one-line prompt: cut at `limit` characters, with `…` where it was."""
    return text if len(text) <= limit else text[:limit] + "…"


def method_item(method: AuthMethod) -> dict[str, Any]:
    return {"id": method.id, "name": method.name, "description": method.description,
            "kind": method.kind}


class NvimSignIn:
    """The registry's `SignInPrompter` in Neovim: methods in a picker; a terminal method's
    command shown, and run in a Neovim terminal (argv, never a shell) only on the person's
    say-so."""

    terminal = True

    def __init__(self, questions: Questions) -> None:
        self.questions = questions

    async def choose(self, agent: str, methods: Sequence[AuthMethod],
                     reason: str) -> AuthMethod | None:
        answer = await self.questions.ask("signin_method", {
            "agent": agent, "reason": reason[:500],
            "methods": [method_item(m) for m in methods]})
        return next((m for m in methods if m.id == answer), None) \
            if isinstance(answer, str) else None

    async def run_terminal(self, agent: str, method: AuthMethod,
                           invocation: TerminalInvocation) -> int | None:
        shown = invocation.shown()
        answer = await self.questions.ask("signin_terminal", {
            "agent": agent, "method": _clip(method.name, MAX_SHOWN_NAME),
            "command": shown.text, "whole": list(shown.whole),
            "argv": list(invocation.argv), "env": dict(invocation.env),
            "cwd": invocation.cwd})
        # The exit status of the command, or None when declined or it could not start.
        return answer if isinstance(answer, int) and not isinstance(answer, bool) else None


def _action(value: Any) -> str:
    return value if value in ("accept", "decline", "cancel") else "cancel"


class NvimElicitor:
    """The registry's `Elicitor` in Neovim: a form asked field by field
    (`vim.ui.input`/`vim.ui.select`) with a review before it is sent; a URL shown whole,
    with its host, and opened (`vim.ui.open`) only on the person's say-so."""

    form = True
    url = True

    def __init__(self, screen: Screen, questions: Questions) -> None:
        self._screen = screen
        self.questions = questions

    async def ask_form(self, agent: str, request: ElicitationRequest,
                       answers: Mapping[str, Any], problems: list[str]
                       ) -> tuple[str, dict[str, Any] | None]:
        answer = await self.questions.ask("elicitation_form", {
            "agent": agent, "message": request.message, "title": request.title,
            "fields": [f.to_wire() for f in request.fields],
            "answers": dict(answers), "problems": problems[:20]})
        if not isinstance(answer, dict):
            return "cancel", None
        content = answer.get("content")
        return _action(answer.get("action")), content if isinstance(content, dict) else {}

    async def ask_url(self, agent: str, request: ElicitationRequest) -> str:
        url = request.url or ""
        message = " ".join(request.message.split())
        shown_url = url if len(url) <= MAX_SHOWN_URL else \
            f"{url[:MAX_SHOWN_URL]}… [shortened: the address is {len(url):,} characters]"
        cut = shown_url != url or len(message) > MAX_SHOWN_MESSAGE
        answer = await self.questions.ask("elicitation_url", {
            "agent": agent, "message": _clip(message, MAX_SHOWN_MESSAGE), "url": url,
            "shown_url": shown_url, "host": request.host, "warnings": list(request.warnings),
            "whole": [f"{agent} asks you to visit {request.host}:", request.message, "", url]
            if cut else []})
        return _action(answer)

    def url_completed(self, agent: str, request: ElicitationRequest) -> None:
        self._screen.notify(f"louise: {agent}: the visit to {request.host} is finished")

    def url_refused(self, agent: str, reason: str) -> None:
        self._screen.notify(f"louise: did not offer to open a page {agent} asked you to "
                            f"visit: {reason}", "warn")
