"""The ACP methods of the demo agent (its entry point is `entry.py`).

Handlers validate params, change session state and return the result; a handler that
must send updates *after* its reply (prompt, set_mode, set_config_option) calls
`req.respond()` itself first. The update orderings copy real agents: updates before
the `session/new` reply (vibe), a `usage_update` after the prompt reply (claude).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from . import catalog, failures, scenarios
from .auth import Credentials
from .limits import READ_METHOD, SAFE_ERROR_MESSAGE, advertisement
from .params import (
    MAX_STEER_TEXT,
    MCP_CAPABILITIES,
    cwd_param,
    mcp_param,
    prompt_text,
    str_param,
)
from .sessions import Session, SessionStore
from .settings import Choice, Knobs, Settings, choose, version
from .storage import SessionFiles, default_directory
from .turn import AgentState, ClientCaps, Turn, TurnCancelled, usage_update
from .wire import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
    Inbound,
    RpcError,
    StdioPeer,
)

log = logging.getLogger("louise.demo_agent")

JsonObject = dict[str, Any]
Handler = Callable[[Inbound], Awaitable[Any]]


STEER_METHOD = "_session/steering"  # as claude-agent-acp and codex-acp have it


class DemoAgent:
    def __init__(self, peer: StdioPeer, settings: Settings) -> None:
        self.peer = peer
        self.settings = settings
        self.client = ClientCaps()
        self.live: set[str] = set()  # sessions made, loaded or resumed by this process
        self.state = AgentState(
            never_answer_new=settings.fail in ("never_answer_new", "never_answer")
        )
        self.state.account.step = settings.quota_step
        if settings.fail == "limits_invalid":
            self.state.account.mode = "invalid"
        elif settings.fail == "limits_error":
            self.state.account.mode = "error"
        files = SessionFiles(default_directory(settings.state_dir))
        self.sessions = SessionStore(
            saved=settings.saved_sessions,
            page_size=settings.page_size,
            cwd=os.getcwd(),
            files=files,
        )
        self.credentials = Credentials(files.directory, settings.auth_required)
        self._handlers: dict[str, Handler] = {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "logout": self.logout,
            "session/new": self.session_new,
            "session/load": self.session_load,
            "session/resume": self.session_resume,
            "session/list": self.session_list,
            "session/close": self.session_close,
            "session/delete": self.session_delete,
            "session/fork": self.session_fork,
            "session/set_mode": self.session_set_mode,
            "session/set_config_option": self.session_set_config_option,
            "session/set_model": self.session_set_model,
            "session/prompt": self.session_prompt,
            READ_METHOD: self.read_limits,
            STEER_METHOD: self.steer,
        }

    # ---- dispatch ---------------------------------------------------------------------

    async def handle(self, req: Inbound) -> Any:
        handler = self._handlers.get(req.method)
        if handler is None or (req.method == "logout" and not self.settings.auth_required) \
                or (req.method == "session/set_model" and not self.settings.legacy_models):
            log.info("unknown request %s: -32601", req.method)
            raise RpcError(METHOD_NOT_FOUND, "Method not found", {"method": req.method})
        if req.method in _SIGNED_IN_ONLY and not self.credentials.signed_in:
            raise RpcError(AUTH_REQUIRED, "Authentication required",
                           {"authMethods": [m["id"] for m in self.credentials.methods(
                               self.client.auth_terminal)]})
        log.debug("request %s", req.method)
        return await handler(req)

    def on_notification(self, method: str, params: JsonObject) -> None:
        if method == "session/cancel":
            session = self.sessions.get(params.get("sessionId"))
            if session is not None and session.turn is not None:
                log.info("session/cancel for %s", session.id)
                session.turn.cancel()
        else:
            log.debug("ignoring notification %s", method)  # unknown ones are ignored

    def _update(self, session: Session, update: JsonObject) -> None:
        self.peer.notify("session/update", {"sessionId": session.id, "update": update})

    def _known(self, params: JsonObject) -> Session:
        session_id = str_param(params, "sessionId")
        session = self.sessions.get(session_id)
        if session is None:
            raise RpcError(RESOURCE_NOT_FOUND, "Session not found", {"sessionId": session_id})
        return session

    def _options(self, session: Session) -> list[JsonObject]:
        return catalog.config_options(session.config, self.settings.legacy_models)

    def _session_state(self, session: Session) -> JsonObject:
        state: JsonObject = {
            "modes": catalog.modes_state(session.mode),
            "configOptions": self._options(session),
        }
        if self.settings.legacy_models:
            state["models"] = catalog.models_state(session.config["model"])
        return state

    # ---- initialize and auth ---------------------------------------------------------------

    async def initialize(self, req: Inbound) -> JsonObject:
        if type(req.params.get("protocolVersion")) is not int:
            raise RpcError(INVALID_PARAMS, "protocolVersion must be an integer")
        self.client = ClientCaps.from_initialize(req.params)
        log.info("initialize: client offers %s", self.client)
        if self.settings.fail == "stderr_flood":
            mb = Knobs(Choice("initialize"), self.settings).number("mb", failures.STDERR_FLOOD_MB)
            failures.flood_stderr(mb)  # before replying: a client that does not drain deadlocks
        capabilities: JsonObject = {
            "loadSession": True,
            "mcpCapabilities": dict(MCP_CAPABILITIES),
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {},
                                    "fork": {}},
            "_meta": advertisement(),
        }
        if self.settings.auth_required:
            capabilities["auth"] = {"logout": {}}
        return {
            "protocolVersion": 1,
            "agentCapabilities": capabilities,
            "authMethods": self.credentials.methods(self.client.auth_terminal),
            # Like claude-agent-acp: `_session/steering` takes a prompt into a running turn.
            "_meta": {"steering": {"supported": True}},
            "agentInfo": {
                "name": catalog.AGENT_NAME,
                "title": catalog.AGENT_TITLE,
                "version": version(),
            },
        }

    async def authenticate(self, req: Inbound) -> JsonObject:
        if not self.settings.auth_required:
            raise RpcError(INVALID_PARAMS,
                           "This agent needs no authentication (authMethods is empty)")
        method = req.params.get("methodId")
        if method == "demo-login":  # the spec forbids authenticate with a terminal method
            raise RpcError(INVALID_PARAMS, "demo-login is a terminal method: run it, "
                           "do not pass it to authenticate")
        if method != "demo-token":
            raise RpcError(INVALID_PARAMS, f"Unknown authentication method {method!r}")
        self.credentials.sign_in()
        log.info("authenticate: signed in with demo-token")
        return {}

    async def logout(self, req: Inbound) -> JsonObject:
        self.credentials.sign_out()
        log.info("logout: signed out")
        return {}

    # ---- sessions -------------------------------------------------------------------------

    async def session_new(self, req: Inbound) -> JsonObject | None:
        cwd = cwd_param(req.params)
        mcp = mcp_param(req.params, required=True)
        if self.state.never_answer_new:
            log.info("session/new: never answering (fail mode)")
            await self.peer.closed.wait()  # $/cancel_request still gets its -32800
            req.never_respond()
            return None
        try:
            session = self.sessions.create(cwd)
        except OverflowError:
            raise RpcError(INTERNAL_ERROR, "Too many sessions") from None
        session.mcp_servers = mcp
        self.live.add(session.id)
        # Like vibe: updates for the new id arrive before the reply that introduces it.
        self._update(session, usage_update(session))
        self._update(
            session,
            {
                "sessionUpdate": "available_commands_update",
                "availableCommands": catalog.AVAILABLE_COMMANDS,
            },
        )
        log.info("session/new: %s in %s", session.id, cwd)
        return {"sessionId": session.id, **self._session_state(session)}

    async def session_load(self, req: Inbound) -> JsonObject:
        session = self._known(req.params)
        session.cwd = cwd_param(req.params)
        session.mcp_servers = mcp_param(req.params, required=True)
        if session.turn is not None:
            raise RpcError(INVALID_PARAMS, "A prompt is running in this session")
        for entry in list(session.history):  # replay everything before the reply
            self._update(session, entry)
        self.live.add(session.id)
        self.sessions.touch(session)
        self.sessions.save(session)
        return self._session_state(session)

    async def session_resume(self, req: Inbound) -> JsonObject:
        session = self._known(req.params)
        session.cwd = cwd_param(req.params)
        session.mcp_servers = mcp_param(req.params, required=False)
        self.sessions.touch(session)  # no replay: the client keeps its own copy
        self.sessions.save(session)
        self.live.add(session.id)
        return self._session_state(session)

    async def session_list(self, req: Inbound) -> JsonObject:
        cwd = req.params.get("cwd")
        cursor = req.params.get("cursor")
        if not (cwd is None or isinstance(cwd, str)) or not (
            cursor is None or isinstance(cursor, str)
        ):
            raise RpcError(INVALID_PARAMS, "cwd and cursor must be strings")
        try:
            sessions, next_cursor = self.sessions.page(cwd, cursor)
        except ValueError:
            raise RpcError(INVALID_PARAMS, "Invalid cursor") from None
        result: JsonObject = {"sessions": [s.info() for s in sessions]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def session_delete(self, req: Inbound) -> JsonObject:
        session_id = str_param(req.params, "sessionId")
        session = self.sessions.get(session_id)
        if session is not None and session.turn is not None:
            raise RpcError(INVALID_PARAMS, "A prompt is running in this session")
        self.sessions.delete(session_id)  # unknown or already deleted: fine, per the spec
        self.live.discard(session_id)
        log.info("session/delete: %s", session_id)
        return {}

    async def session_fork(self, req: Inbound) -> JsonObject:
        source = self._known(req.params)
        if self.settings.fork_live_only and source.id not in self.live:  # as vibe-acp
            raise RpcError(INVALID_PARAMS, f"Session not found: {source.id}")
        cwd = cwd_param(req.params)
        mcp = mcp_param(req.params, required=False)
        try:
            session = self.sessions.fork(source, cwd)
        except OverflowError:
            raise RpcError(INTERNAL_ERROR, "Too many sessions") from None
        session.mcp_servers = mcp
        self.live.add(session.id)
        log.info("session/fork: %s from %s", session.id, source.id)
        return {"sessionId": session.id, **self._session_state(session)}

    async def session_close(self, req: Inbound) -> JsonObject:
        session = self.sessions.get(str_param(req.params, "sessionId"))
        if session is not None and session.turn is not None:
            session.turn.cancel()  # as if session/cancel had arrived
        self.live.discard(str_param(req.params, "sessionId"))
        return {}  # nothing else is held per session: it stays stored and loadable

    async def session_set_mode(self, req: Inbound) -> None:
        session = self._known(req.params)
        mode = str_param(req.params, "modeId")
        if not catalog.is_valid_config_value("mode", mode):
            raise RpcError(INVALID_PARAMS, f"Unknown mode {mode!r}")
        session.set_mode(mode)
        self.sessions.save(session)
        req.respond({})
        self._update(session, {"sessionUpdate": "current_mode_update", "currentModeId": mode})
        self._send_config(session)

    async def session_set_config_option(self, req: Inbound) -> None:
        session = self._known(req.params)
        config_id = str_param(req.params, "configId")
        value = req.params.get("value")
        if not catalog.is_valid_config_value(config_id, value) or not isinstance(value, str) \
                or (config_id == "model" and self.settings.legacy_models):
            raise RpcError(INVALID_PARAMS, f"Invalid value for config option {config_id!r}")
        if config_id == "mode":
            session.set_mode(value)
        else:
            session.config[config_id] = value
        self.sessions.save(session)
        req.respond({"configOptions": self._options(session)})
        if config_id == "mode":
            self._update(session, {"sessionUpdate": "current_mode_update", "currentModeId": value})
        self._send_config(session)

    async def session_set_model(self, req: Inbound) -> JsonObject:
        """The legacy model switch (LOUISE_DEMO_MODELS=legacy), as gemini-cli has it."""
        session = self._known(req.params)
        model = str_param(req.params, "modelId")
        if not catalog.is_valid_config_value("model", model):
            raise RpcError(INVALID_PARAMS, f"Unknown model {model!r}")
        session.config["model"] = model
        self.sessions.save(session)
        return {}

    def _send_config(self, session: Session) -> None:
        self._update(
            session,
            {
                "sessionUpdate": "config_option_update",
                "configOptions": self._options(session),
            },
        )

    # ---- prompt turn ------------------------------------------------------------------------

    async def session_prompt(self, req: Inbound) -> None:
        session = self._known(req.params)
        if session.turn is not None:
            raise RpcError(INVALID_PARAMS, "A prompt is already running in this session")
        text = prompt_text(session, req.params.get("prompt"))
        choice = choose(text, self.settings)
        turn = Turn(self.peer, session, self.client, Knobs(choice, self.settings), text, self.state)
        session.turn = turn
        req.on_cancel = lambda: turn.cancel(by_request=True)
        self.state.account.prompts += 1  # each prompt uses a little of the account
        log.info("session/prompt %s: scenario %s", session.id, choice.scenario)
        try:
            stop = await scenarios.run(turn, choice)
        except TurnCancelled:
            stop = "cancelled"
        finally:
            session.turn = None
        if turn.cancelled.is_set():
            stop = "cancelled"  # a cancel that came after the last await still counts
        if stop == "cancelled":
            turn.fail_open_tool_calls("cancelled")  # answer every tool call left open
        self._finish_turn(req, session, turn, stop)

    def _finish_turn(self, req: Inbound, session: Session, turn: Turn, stop: str) -> None:
        if session.title is None:
            session.title = catalog.session_title(turn.prompt)
            self.sessions.touch(session)
            self._update(
                session,
                {
                    "sessionUpdate": "session_info_update",
                    "title": session.title,
                    "updatedAt": session.updated_at,
                },
            )
        else:
            self.sessions.touch(session)
        # About 4 characters a token; the context holds the whole conversation so far.
        input_tokens = session.used_tokens + len(turn.prompt) // 4
        output_tokens = turn.output_chars // 4
        if turn.by_request:
            req.respond_error(RpcError(REQUEST_CANCELLED, "Request cancelled"))
        elif stop == "cancelled":
            req.respond({"stopReason": stop})  # like claude and codex: no usage then
        else:
            # Like claude-agent-acp and codex-acp: the turn's tokens in the result.
            req.respond({"stopReason": stop, "usage": {
                "totalTokens": input_tokens + output_tokens, "inputTokens": input_tokens,
                "outputTokens": output_tokens, "cachedReadTokens": 0, "cachedWriteTokens": 0}})
        # After the reply, like claude-agent-acp: the context usage, then the account limits.
        spent = (len(turn.prompt) + turn.output_chars) // 4
        session.used_tokens = min(catalog.CONTEXT_WINDOW, session.used_tokens + spent)
        self.sessions.save(session)
        self._update(session, usage_update(session))
        self.state.send_limits_updated(self.peer)

    async def steer(self, req: Inbound) -> JsonObject:
        """`_session/steering`: the prompt's text goes into the running turn (a scenario
        that listens, `slow`, follows it); with no turn running, `promptRequired`."""
        session = self._known(req.params)
        prompt = req.params.get("prompt")
        if not isinstance(prompt, list) or not prompt:
            raise RpcError(INVALID_PARAMS, "steer params require a non-empty prompt array")
        if session.turn is None:
            return {"outcome": "promptRequired", "reason": "noRunningTurn"}
        text = "\n".join(str(b.get("text")) for b in prompt
                         if isinstance(b, dict) and b.get("type") == "text")
        session.turn.steered.append(text[:MAX_STEER_TEXT])
        return {"outcome": "injected"}

    # ---- account limits -----------------------------------------------------------------------

    async def read_limits(self, req: Inbound) -> JsonObject:
        snapshot = self.state.account.current()
        if snapshot is None:
            raise RpcError(INTERNAL_ERROR, SAFE_ERROR_MESSAGE)
        return snapshot


_SIGNED_IN_ONLY = frozenset({"session/new", "session/load", "session/resume", "session/list",
                             "session/delete", "session/fork",
                             "session/prompt"})
