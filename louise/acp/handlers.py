"""The client side of an ACP connection's agent→client traffic: what the caller handles
(`ClientHandlers`, the handler protocols, and the `clientCapabilities` they advertise) and
`Dispatcher`, which routes the agent's requests and notifications to them. What the
caller does not handle is neither advertised nor answered with anything but `-32601`.
Permission requests fail closed: no handler, a handler error or a cancelled request all
answer `cancelled` (or `-32800`), never an allow.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from louise.acp.errors import RpcError
from louise.acp.rpc_events import Notification
from louise.acp.schema import ParsedUpdate, parse_update

# The connection's logger: the dispatch is part of the connection, and logs as it.
log = logging.getLogger("louise.acp.connection")

CANCELLED_OUTCOME: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}

# Called in arrival order; may be a plain function (cheaper per chunk) or a coroutine one.
UpdateCallback = Callable[[str, ParsedUpdate], Awaitable[None] | None]
JsonHandler = Callable[[Any], Awaitable[Any]]


class FileSystemHandler(Protocol):
    async def read_text_file(self, params: Mapping[str, Any]) -> Any: ...
    async def write_text_file(self, params: Mapping[str, Any]) -> Any: ...


class TerminalHandler(Protocol):
    async def create(self, params: Mapping[str, Any]) -> Any: ...
    async def output(self, params: Mapping[str, Any]) -> Any: ...
    async def wait_for_exit(self, params: Mapping[str, Any]) -> Any: ...
    async def kill(self, params: Mapping[str, Any]) -> Any: ...
    async def release(self, params: Mapping[str, Any]) -> Any: ...


class ElicitationHandler(Protocol):
    """`elicitation/create` and `elicitation/complete` (advertised modes only)."""

    @property
    def form(self) -> bool: ...

    @property
    def url(self) -> bool: ...

    async def create(self, params: Mapping[str, Any]) -> dict[str, Any]: ...

    async def complete(self, elicitation_id: str) -> None: ...



@dataclass
class ClientHandlers:
    """What the caller handles. Omitted parts are not advertised and answer -32601."""

    on_update: UpdateCallback | None = None
    request_permission: JsonHandler | None = None
    fs_read: bool = False
    fs_write: bool = False
    fs: FileSystemHandler | None = None
    terminal: TerminalHandler | None = None
    on_ext_notification: Callable[[str, Any], Awaitable[None]] | None = None
    ext_requests: Mapping[str, JsonHandler] = field(default_factory=dict)
    client_meta: Mapping[str, Any] | None = None  # goes to clientCapabilities._meta
    boolean_config_options: bool = True
    # `auth.terminal`: the caller can run the agent's own command in an interactive
    # terminal for a `terminal` sign-in method (only when it really can).
    terminal_auth: bool = False
    elicitation: ElicitationHandler | None = None
    # One message's text chunks read at once go to `on_update` as one (`merge_chunks`):
    # for a caller that shows a read's worth at once anyway (the Neovim engine). Off, every
    # chunk arrives as the agent sent it.
    merge_text_chunks: bool = False
    # `session.quota` (the ACP Quotas RFD, v1): the caller takes `quota_update` session
    # updates (through `on_update`), so the agent may send them.
    quota: bool = False

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {
            "fs": {
                "readTextFile": self.fs is not None and self.fs_read,
                "writeTextFile": self.fs is not None and self.fs_write,
            },
            "terminal": self.terminal is not None,
        }
        if self.terminal_auth:
            caps["auth"] = {"terminal": True}
        if self.elicitation is not None and (self.elicitation.form or self.elicitation.url):
            modes: dict[str, Any] = {}
            if self.elicitation.form:
                modes["form"] = {}
            if self.elicitation.url:
                modes["url"] = {}
            caps["elicitation"] = modes
        session: dict[str, Any] = {}
        if self.boolean_config_options:
            session["configOptions"] = {"boolean": {}}
        if self.on_update is not None:
            # The unstable updates the session model shows (louise/session/unstable.py):
            # ID-addressed plans, context compactions, and notices (which need no
            # capability in the schema; claude-agent-acp sends them only on `notices`).
            caps["plan"] = {}
            session["compaction"] = {}
            session["notices"] = {}
            if self.quota:
                session["quota"] = {}
        if session:
            caps["session"] = session
        if self.client_meta:
            caps["_meta"] = dict(self.client_meta)
        return caps


_MESSAGE_CHUNK = "agent_message_chunk"
_THOUGHT_CHUNK = "agent_thought_chunk"
_MISSING = object()


def _chunk_of(event: Notification) -> tuple[str, str, Any, str] | None:
    """(sessionId, kind, messageId, text) of a plain text chunk of the agent; None for
    anything else (a chunk with annotations or `_meta` is kept as it came). Read once per
    streamed chunk: the cheapest refusals first, and the update's keys counted rather
    than compared as a set (`sessionUpdate` and `content` are there once matched, so a
    third key can only be `messageId`)."""
    params = event.params
    if type(params) is not dict or len(params) != 2 or event.method != "session/update":
        return None
    update = params.get("update")
    if type(update) is not dict:
        return None
    kind = update.get("sessionUpdate")
    if kind != _MESSAGE_CHUNK and kind != _THOUGHT_CHUNK:
        return None
    content = update.get("content")
    if type(content) is not dict or len(content) != 2:
        return None
    text = content.get("text")
    if type(text) is not str or content.get("type") != "text":
        return None
    keys = len(update)
    if keys == 2:
        message_id = None
    elif keys == 3:
        message_id = update.get("messageId", _MISSING)
        if message_id is not None and type(message_id) is not str:  # (or not there)
            return None
    else:
        return None
    session_id = params.get("sessionId")
    if type(session_id) is not str:
        return None
    return session_id, kind, message_id, text


def _merged(key: tuple[str, str, Any], texts: list[str]) -> Notification:
    update: dict[str, Any] = {"sessionUpdate": key[1],
                              "content": {"type": "text", "text": "".join(texts)}}
    if key[2] is not None:
        update["messageId"] = key[2]
    return Notification("session/update", {"sessionId": key[0], "update": update})


def merge_chunks(events: list[Notification]) -> list[Notification]:
    """Consecutive text chunks of one message read at once, as one chunk: the session model,
    the transcript and the renderer then work once per read, not once per chunk (a burst
    of 10,000 chunks comes in ~40 reads). Everything else keeps its place and order."""
    if len(events) < 2:
        return events
    out: list[Notification] = []
    first: Notification | None = None  # the run's first chunk (kept as it came if alone)
    texts: list[str] = []
    key: tuple[str, str, Any] | None = None
    for event in events:
        chunk = _chunk_of(event)
        if chunk is not None:
            session_id, kind, message_id, text = chunk
            if key is not None and key[0] == session_id and key[1] == kind \
                    and key[2] == message_id:
                texts.append(text)
                continue
        if first is not None:  # the run ends
            assert key is not None
            out.append(first if len(texts) == 1 else _merged(key, texts))
            texts = []
        if chunk is None:
            first = key = None
            out.append(event)
        else:
            first = event
            key = chunk[:3]
            texts.append(chunk[3])
    if first is not None:
        assert key is not None
        out.append(first if len(texts) == 1 else _merged(key, texts))
    return out


class Dispatcher:
    """Routes inbound traffic of one connection (its agent's `name`, for the log) to its
    ClientHandlers."""

    def __init__(self, handlers: ClientHandlers, name: str) -> None:
        self.handlers = handlers
        self.name = name

    def coalesce(self, events: list[Notification]) -> list[Notification]:
        if self.handlers.merge_text_chunks:
            return merge_chunks(events)
        return events

    async def handle_notification(self, method: str, params: Any) -> None:
        rest = self.notify_now(method, params)
        if rest is not None:
            await rest

    def notify_now(self, method: str, params: Any) -> Awaitable[None] | None:
        """`handle_notification` as far as it goes without waiting: None when it is done,
        else what is left to await (an async callback's). A streamed chunk's update is
        handled here whole, in whichever task read it (`JsonRpcPeer`'s pulled reads)."""
        handlers = self.handlers
        if method == "session/update":
            if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str):
                log.warning("%s: session/update without a sessionId", self.name)
                return None
            if handlers.on_update is not None:
                # An async callback's awaitable; a plain one saves a coroutine.
                return handlers.on_update(params["sessionId"], parse_update(params.get("update")))
            return None
        if method == "elicitation/complete" and handlers.elicitation is not None:
            ident = params.get("elicitationId") if isinstance(params, dict) else None
            if isinstance(ident, str):
                return handlers.elicitation.complete(ident)
            return None
        if method.startswith("_") and handlers.on_ext_notification is not None:
            return handlers.on_ext_notification(method, params)
        log.debug("%s: ignored notification %.100s", self.name, method)
        return None

    async def handle_request(self, method: str, params: Any) -> Any:
        handlers = self.handlers
        if method == "session/request_permission":
            return await self._permission(params)
        if method == "elicitation/create" and handlers.elicitation is not None:
            return await self._elicitation(handlers.elicitation, params)
        if not isinstance(params, dict):
            if method.startswith("_") and method in handlers.ext_requests:
                return await handlers.ext_requests[method](params)
            raise RpcError.invalid_params("params must be an object")
        fs = handlers.fs
        if method == "fs/read_text_file" and fs is not None and handlers.fs_read:
            return await fs.read_text_file(params)
        if method == "fs/write_text_file" and fs is not None and handlers.fs_write:
            result = await fs.write_text_file(params)
            return {} if result is None else result
        terminal = handlers.terminal
        if terminal is not None and method.startswith("terminal/"):
            operation = {
                "terminal/create": terminal.create,
                "terminal/output": terminal.output,
                "terminal/wait_for_exit": terminal.wait_for_exit,
                "terminal/kill": terminal.kill,
                "terminal/release": terminal.release,
            }.get(method)
            if operation is not None:
                result = await operation(params)
                return {} if result is None else result
        if method in handlers.ext_requests:
            return await handlers.ext_requests[method](params)
        raise RpcError.method_not_found(method)

    async def _permission(self, params: Any) -> Any:
        handler = self.handlers.request_permission
        if handler is None or not isinstance(params, dict):
            return CANCELLED_OUTCOME
        try:
            result = await handler(params)
        except (RpcError, anyio.get_cancelled_exc_class()):
            raise
        except Exception:
            log.exception("%s: permission handler failed; answering cancelled",
                          self.name)
            return CANCELLED_OUTCOME
        return result if _valid_outcome(result, params) else CANCELLED_OUTCOME


    async def _elicitation(self, handler: ElicitationHandler, params: Any) -> Any:
        """Only `accept` (with content, for a form), `decline` or `cancel` leave louise; a
        handler that fails answers `cancel`."""
        if not isinstance(params, dict):
            raise RpcError.invalid_params("params must be an object")
        try:
            result = await handler.create(params)
        except (RpcError, anyio.get_cancelled_exc_class()):
            raise
        except Exception:
            log.exception("%s: elicitation handler failed; answering cancel",
                          self.name)
            return {"action": "cancel"}
        action = result.get("action") if isinstance(result, dict) else None
        if action == "accept":
            content = result.get("content")
            return {"action": "accept", "content": content} if isinstance(content, dict) \
                else {"action": "accept"}
        return {"action": action if action in ("decline", "cancel") else "cancel"}


def _valid_outcome(result: Any, params: Mapping[str, Any]) -> bool:
    """Only a well-formed outcome naming one of the offered options may leave louise."""
    if not isinstance(result, dict):
        return False
    outcome = result.get("outcome")
    if not isinstance(outcome, dict):
        return False
    if outcome.get("outcome") == "cancelled":
        return True
    if outcome.get("outcome") != "selected":
        return False
    options = params.get("options")
    chosen = outcome.get("optionId")
    return isinstance(chosen, str) and isinstance(options, list) and any(
        isinstance(o, dict) and o.get("optionId") == chosen for o in options)
