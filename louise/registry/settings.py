"""The session settings a person changes: mode, model, config options, name. Split out
of `turns.py` (module size rule)."""

from __future__ import annotations

from collections.abc import Callable

from louise.acp.errors import RpcError
from louise.acp.schema import ParsedUpdate
from louise.registry.agents import AgentSupervisor
from louise.registry.events import Emitter
from louise.registry.records import LiveSession, RegistryError, SessionTable
from louise.registry.sessions import Sessions
from louise.registry.transcripts import TranscriptWriter
from louise.session.model import LEGACY_MODE, LEGACY_MODEL


class SessionSettings:
    """Mode, model, config options and name of a session."""

    def __init__(self, table: SessionTable, emitter: Emitter, agents: AgentSupervisor,
                 sessions: Sessions, transcripts: TranscriptWriter, *,
                 on_settings_changed: Callable[[str], None] | None = None) -> None:
        self._table = table
        self._emitter = emitter
        self._agents = agents
        self._sessions = sessions
        self._transcripts = transcripts
        # Limits: a model or mode change re-reads them.
        self._on_settings_changed = on_settings_changed

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        live = self._table.live(session_id)
        connection = await self._agents.connection(live.agent)
        try:
            await connection.set_mode(live.acp_id, mode_id)
        except RpcError as exc:
            raise refused(live, "mode", mode_id, exc) from exc
        live.person_mode = mode_id
        self._sessions.apply(live, ParsedUpdate(
            "current_mode_update", {"sessionUpdate": "current_mode_update",
                                    "currentModeId": mode_id}, None))
        self._settings_changed(live)

    async def set_model(self, session_id: str, model_id: str) -> None:
        """The model: through its config option where the agent has one, else the legacy
        `session/set_model` (only for a session whose setup listed `models`)."""
        live = self._table.live(session_id)
        option = live.model.model_option_id
        if option is None:
            raise RegistryError(f"{live.agent} offers no model choice")
        if option != LEGACY_MODEL:
            await self.set_config_option(session_id, option, model_id)
            return
        if not any(m["modelId"] == model_id for m in live.model.models):
            raise RegistryError(f"{live.agent} offers no model {model_id!r}")
        connection = await self._agents.connection(live.agent)
        await connection.set_model(live.acp_id, model_id)
        self._emitter.emit_all(live.model.set_current_model(model_id))
        self._settings_changed(live)

    async def set_config_option(self, session_id: str, config_id: str, value: str | bool
                                ) -> None:
        if config_id == LEGACY_MODEL and isinstance(value, str):
            await self.set_model(session_id, value)
            return
        if config_id == LEGACY_MODE and isinstance(value, str):
            await self.set_mode(session_id, value)
            return
        live = self._table.live(session_id)
        connection = await self._agents.connection(live.agent)
        option = next((o for o in live.model.config_options if o.get("id") == config_id), {})
        try:
            options = await connection.set_config_option(live.acp_id, config_id, value)
        except RpcError as exc:
            raise refused(live, str(option.get("name") or config_id).lower(), value,
                          exc) from exc
        if option.get("category") == "mode" and isinstance(value, str):
            live.person_mode = value
        self._sessions.apply(live, ParsedUpdate(
            "config_option_update", {"sessionUpdate": "config_option_update",
                                     "configOptions": options}, None))
        self._settings_changed(live)

    def _settings_changed(self, live: LiveSession) -> None:
        """A model or mode change may change which limits apply: read them again."""
        if self._on_settings_changed is not None:
            self._on_settings_changed(live.agent)

    def rename(self, session_id: str, name: str) -> str | None:
        """The person's name for a session (whitespace folded; empty clears); returns it."""
        live = self._table.live(session_id)
        self._emitter.emit_all(live.model.rename(name))
        self._transcripts.record(live.transcript, {"type": "rename", "name": live.model.name})
        self._sessions.remember_name(live)
        return live.model.name


def refused(live: LiveSession, what: str, value: object, exc: RpcError) -> RegistryError:
    """The agent refused a setting: what, and why in its own words (`RpcError.reason`:
    gemini-cli's "Internal error" carries its reason in `data.details`)."""
    return RegistryError(f"{live.agent} did not set the {what} to {value}: {exc.reason}")
