"""An agent's `elicitation/create`: the person answers a form, or consents to open a URL,
through the front end's `Elicitor`; `elicitation/complete` ends a URL one.

Fails closed, like permissions: a cancelled turn, a closed session, the agent exiting, an
error or a form louise cannot show all answer `cancel`; a form's answers are checked
against its schema before they go back (asked again, at most MAX_FORM_ATTEMPTS times).
Waiting on the person is not the agent's silence (the prompt watchdog pauses). Only the
modes the front end can show are advertised; a request for another one is invalid params.

The request's parsing and its URL checks (`louise.acp.elicitation`, `louise.acp.urls`) are
imported with an agent's first request, not at the start: few turns ask.
"""

from __future__ import annotations

import logging
import sys
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from louise.acp.errors import RpcError
from louise.registry.events import Emitter
from louise.registry.records import AgentRuntime, LiveSession, SessionTable
from louise.storage import code_cache

if TYPE_CHECKING:
    from louise.acp.elicitation import ElicitationRequest, UrlRefused

log = logging.getLogger("louise.registry")

REQUEST_MODULE = "louise.acp.elicitation"
MAX_FORM_ATTEMPTS = 3
MAX_OPEN_URLS = 32
CANCEL: dict[str, Any] = {"action": "cancel"}


class Elicitor(Protocol):
    """The front end's part: it shows the agent's name and message, and lets the person
    review, decline or cancel."""

    @property
    def form(self) -> bool: ...

    @property
    def url(self) -> bool: ...

    async def ask_form(self, agent: str, request: ElicitationRequest,
                       answers: Mapping[str, Any], problems: list[str]
                       ) -> tuple[str, dict[str, Any] | None]:
        """(`accept` with the answers, `decline` or `cancel`); `answers` and `problems`
        hold a previous attempt's answers and what was wrong with them."""

    async def ask_url(self, agent: str, request: ElicitationRequest) -> str:
        """`accept` (the person consented and the URL was opened), `decline` or
        `cancel`."""

    def url_completed(self, agent: str, request: ElicitationRequest) -> None:
        """The agent says the URL interaction finished."""

    def url_refused(self, agent: str, reason: str) -> None:
        """louise refused a URL the agent asked the person to visit, outside a session
        (e.g. while signing in): say so and why."""


class AgentElicitations:
    """One Agent connection's `ElicitationHandler`."""

    def __init__(self, table: SessionTable, emitter: Emitter, runtime: AgentRuntime,
                 elicitor: Elicitor) -> None:
        self._table = table
        self._emitter = emitter
        self._runtime = runtime
        self._elicitor = elicitor
        self._open_urls: OrderedDict[str, ElicitationRequest] = OrderedDict()

    @property
    def form(self) -> bool:
        return self._elicitor.form

    @property
    def url(self) -> bool:
        return self._elicitor.url

    async def create(self, params: Mapping[str, Any]) -> dict[str, Any]:
        if REQUEST_MODULE not in sys.modules:
            # The first request: imported off the loop, with the compiled methods kept
            # (storage/code_cache.py).
            await anyio.to_thread.run_sync(code_cache.import_module, REQUEST_MODULE)
        from louise.acp.elicitation import ElicitationError, UrlRefused, parse_request

        agent = self._runtime.name
        try:
            request = parse_request(dict(params))
        except ElicitationError as exc:
            if "type louise cannot show" in str(exc):
                log.info("%s: elicitation declined: %s", agent, exc)
                return CANCEL
            if isinstance(exc, UrlRefused):
                self._refused(agent, params.get("sessionId"), exc)
            raise RpcError.invalid_params(str(exc)) from None
        if (request.mode == "form" and not self.form) or (request.mode == "url"
                                                          and not self.url):
            raise RpcError.invalid_params(f"{request.mode} elicitation was not advertised")
        live = None
        if request.session_id is not None:
            live = self._table.find(agent, request.session_id)
            if live is None:
                raise RpcError.invalid_params(f"unknown sessionId {request.session_id!r}")
            if live.model.cancel_requested or live.model.closing \
                    or live.model.status in ("closed", "error"):
                return CANCEL
        return await self._ask(agent, live, request)

    def _refused(self, agent: str, session_id: Any, exc: UrlRefused) -> None:
        """The person hears of a URL louise would not offer to open (the agent gets the
        reason as its error)."""
        text = f"louise did not offer to open a page {agent} asked you to visit: {exc}"
        log.info("%s", text)
        live = self._table.find(agent, session_id) if isinstance(session_id, str) else None
        if live is not None:
            self._emitter.emit_all(live.model.add_notice("info", text))
        else:
            self._elicitor.url_refused(agent, str(exc))

    async def _ask(self, agent: str, live: LiveSession | None,
                   request: ElicitationRequest) -> dict[str, Any]:
        scope = anyio.CancelScope()
        turn = live.model.turn if live is not None else None
        if live is not None:
            live.permission_scopes.add(scope)  # a cancel of the turn withdraws it
            live.busy += 1  # the person's time is not the agent's silence
        result: dict[str, Any] = CANCEL
        try:
            with scope:
                if request.mode == "form":
                    result = await self._form(agent, request)
                else:
                    result = await self._url(agent, live, request)
            if live is not None and (scope.cancel_called or live.model.cancel_requested
                                     or live.model.turn != turn):
                result = CANCEL
        finally:
            if live is not None:
                live.busy -= 1
                live.touch()
                live.permission_scopes.discard(scope)
                self._note(live, request, result)
        return result

    async def _form(self, agent: str, request: ElicitationRequest) -> dict[str, Any]:
        from louise.acp.elicitation import check_content

        answers: Mapping[str, Any] = {}
        problems: list[str] = []
        for _ in range(MAX_FORM_ATTEMPTS):
            action, content = await self._elicitor.ask_form(agent, request, answers, problems)
            if action != "accept":
                return {"action": action if action == "decline" else "cancel"}
            checked, problems = check_content(request.fields, content)
            if not problems:
                return {"action": "accept", "content": checked}
            answers = content or {}
        return CANCEL

    async def _url(self, agent: str, live: LiveSession | None,
                   request: ElicitationRequest) -> dict[str, Any]:
        action = await self._elicitor.ask_url(agent, request)
        if action != "accept":
            return {"action": action if action == "decline" else "cancel"}
        assert request.elicitation_id is not None
        self._open_urls[request.elicitation_id] = request
        while len(self._open_urls) > MAX_OPEN_URLS:
            self._open_urls.popitem(last=False)
        return {"action": "accept"}

    def _note(self, live: LiveSession, request: ElicitationRequest,
              result: Mapping[str, Any]) -> None:
        what = {"accept": "answered", "decline": "declined", "cancel": "cancelled"}.get(
            str(result.get("action")), "cancelled")
        if request.mode == "url" and what == "answered":
            text = f"{live.agent} asked you to visit {request.host}: opened; waiting for it " \
                   "to finish"
        else:
            asked = " ".join(request.message.split())[:200] or "a question"
            text = f"{live.agent} asked: {asked} ({what})"
        self._emitter.emit_all(live.model.add_notice("info", text))

    async def complete(self, elicitation_id: str) -> None:
        """Unknown or already completed ids are ignored (the spec says so)."""
        request = self._open_urls.pop(elicitation_id, None)
        if request is None:
            return
        self._elicitor.url_completed(self._runtime.name, request)
        live = self._table.find(self._runtime.name, request.session_id) \
            if request.session_id is not None else None
        if live is not None:
            self._emitter.emit_all(live.model.add_notice(
                "info", f"{live.agent}: the visit to {request.host} is finished"))
