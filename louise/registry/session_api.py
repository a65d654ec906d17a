"""The registry's API about sessions: opening, listing and closing them, their turns and
prompt queues, their settings, and what a front end looks up of them.

A part of `SessionRegistry` (`louise/registry/__init__.py`, which builds what is declared
here and inherits these methods); the Agents' side of its API is `agent_api.py`. Each
method delegates to the part that owns the behaviour.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from louise.capabilities.terminal import TerminalHost
from louise.config.model import Config
from louise.registry.agent_sessions import (
    AgentListing,
    delete_at_agent,
    fork_at_agent,
    list_at_agent,
    list_everywhere,
)
from louise.registry.agents import AgentSupervisor
from louise.registry.defaults import apply_defaults
from louise.registry.events import Emitter
from louise.registry.person_modes import mode_covers
from louise.registry.prompt_content import Chip
from louise.registry.records import RegistryError, SessionTable
from louise.registry.sessions import Sessions
from louise.registry.settings import SessionSettings
from louise.registry.transcripts import TranscriptWriter
from louise.registry.turns import Turns
from louise.session import Session
from louise.storage import paths


class SessionApi:
    """Sessions, turns and settings; the parts are built by `SessionRegistry`."""

    config: Config
    transcripts_dir: Path | None
    _table: SessionTable
    _emitter: Emitter
    _agents: AgentSupervisor
    _sessions: Sessions
    _turns: Turns
    _settings: SessionSettings
    _transcripts: TranscriptWriter

    # ------------------------------------------------------------------ lookups

    def session(self, session_id: str) -> Session:
        return self._table.live(session_id).model

    def sessions(self, agent: str | None = None) -> list[Session]:
        return [live.model for live in self._table.sessions.values()
                if agent is None or live.agent == agent]

    def terminal_host(self, session_id: str) -> TerminalHost | None:
        return self._table.live(session_id).terminals

    def transcript_path(self, session_id: str) -> Path | None:
        transcript = self._table.live(session_id).transcript
        return transcript.path if transcript is not None else None

    def last_active(self, session_id: str) -> float:
        """When the session was last used: opened, prompted, or an update of the agent's
        (seconds since the epoch)."""
        return self._table.live(session_id).active_at

    async def flush_transcripts(self) -> None:
        """Returns when every transcript record queued so far is written."""
        await self._transcripts.flush()

    def approved_by_mode(self, session_id: str) -> frozenset[str]:
        """What the mode the person picked approves in this session now (`edit`,
        `execute`; empty when the session is not in a mode the person picked)."""
        live = self._table.sessions.get(session_id)
        if live is None or live.person_mode != live.model.current_mode:
            return frozenset()
        return mode_covers(live.person_mode)

    # ------------------------------------------------------------------ opening, closing

    async def new_session(self, agent: str | None = None, cwd: str | None = None) -> Session:
        """Create a session on an Agent (default: the configured default Agent), with the
        Agent's `defaults` (mode, model, thought level) applied."""
        name = agent or self.config.default_agent
        session = await self._sessions.new_session(name, cwd)
        defaults = self.config.agent(name).defaults
        if defaults is not None:
            await apply_defaults(self._table, self._emitter, self._settings, session.session_id,
                                 defaults)
        return self._table.live(session.session_id).model

    async def load_session(self, agent: str, session_id: str, cwd: str | None = None
                           ) -> Session:
        """`session/load` of the agent's session id: its replay of the history fills a
        fresh model (an open session's model is replaced: `SessionReplaced`)."""
        return await self._sessions.open_session(agent, session_id, cwd, "load")

    async def resume_session(self, agent: str, session_id: str, cwd: str | None = None
                             ) -> Session:
        """`session/resume` (no replay; an open session keeps its model)."""
        return await self._sessions.open_session(agent, session_id, cwd, "resume")

    async def reattach(self, session_id: str, cwd: str | None = None) -> Session:
        """A session louise had, after its agent's process died (it is here) or louise's
        own (it is not: it is opened in `cwd`): the one path attaches it where the agent
        can (load, else resume); otherwise the session fails with a clear message."""
        live = self._table.sessions.get(session_id)
        if live is not None:
            return await self._sessions.attach(live, "reattach")
        agent, _, acp_id = session_id.partition(":")
        if not acp_id:
            raise RegistryError(f"unknown session {session_id!r}")
        return await self._sessions.open_session(agent, acp_id, cwd, "reattach")

    async def list_sessions(self, agent: str, cwd: str | None = None) -> list[dict[str, Any]]:
        """The agent's own list (`session/list`), or for an agent that loads sessions but
        cannot list them, the sessions louise recorded for it (`recorded.py`)."""
        return await list_at_agent(await self._agents.connection(agent), self._sessions,
                                   agent, cwd,
                                   self.transcripts_dir or paths.state_dir() / "transcripts")

    async def list_all_sessions(self, cwd: str | None = None,
                                agents: Sequence[str] | None = None,
                                on_listed: Callable[[AgentListing], None] | None = None
                                ) -> list[AgentListing]:
        """The sessions of every configured Agent (or those named), side by side: each
        started only if not running yet; one that cannot list gives its error instead.
        `on_listed` gets each Agent's listing as it ends."""
        names = list(agents) if agents is not None else list(self._table.runtimes)
        timeout = max(self.config.request_timeout * 2, 60.0)  # includes starting it
        return await list_everywhere(self._table, names,
                                     lambda agent: self.list_sessions(agent, cwd), timeout,
                                     on_listed)

    async def delete_session(self, agent: str, acp_id: str) -> None:
        """`session/delete` (only where advertised); one open here is closed first."""
        await delete_at_agent(self._table, await self._agents.connection(agent), agent,
                              acp_id, self._turns.close_session)

    async def fork_session(self, agent: str, acp_id: str, cwd: str | None = None) -> Session:
        """`session/fork` (only where advertised): a new session with the same history."""
        await self._agents.connection(agent)
        return await fork_at_agent(self._table, self._sessions, agent, acp_id, cwd,
                                   self._turns.close_session)

    async def close_session(self, session_id: str) -> None:
        """Close a session (cancelling its turn first), at the agent too where it supports
        `session/close`."""
        await self._turns.close_session(session_id)

    # ------------------------------------------------------------------ turns

    async def prompt(self, session_id: str, prompt: str | Sequence[Mapping[str, Any]],
                     context: Sequence[Chip] = ()) -> str:
        """Run one turn and return its stop reason. `context` chips (buffer, file,
        selection, diagnostics) become content the agent's prompt capabilities allow."""
        return await self._turns.prompt(session_id, prompt, context)

    async def cancel(self, session_id: str) -> None:
        await self._turns.cancel(session_id)

    def edit_queued(self, session_id: str, item_id: int, text: str) -> None:
        """Replace the text of a prompt waiting in the session's queue."""
        self._turns.edit_queued(session_id, item_id, text)

    def remove_queued(self, session_id: str, item_id: int) -> None:
        """Take a prompt off the queue (its `prompt()` raises PromptWithdrawn)."""
        self._turns.remove_queued(session_id, item_id)

    async def send_queued_now(self, session_id: str, item_id: int) -> None:
        """Cancel the running turn and run this queued prompt next."""
        await self._turns.send_queued_now(session_id, item_id)

    async def steer_queued(self, session_id: str, item_id: int) -> None:
        """Send a queued prompt into the running turn, where the agent offers steering
        (its `prompt()` then returns STEERED)."""
        await self._turns.steer_queued(session_id, item_id)

    # ------------------------------------------------------------------ settings

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        await self._settings.set_mode(session_id, mode_id)

    async def set_config_option(self, session_id: str, config_id: str, value: str | bool
                                ) -> None:
        await self._settings.set_config_option(session_id, config_id, value)

    async def set_model(self, session_id: str, model_id: str) -> None:
        """The session's model: its model config option, else the legacy
        `session/set_model` where the agent listed `models`."""
        await self._settings.set_model(session_id, model_id)

    def rename(self, session_id: str, name: str) -> str | None:
        """Name a session (`SessionRenamed`); an empty name clears it. Returns the name."""
        return self._settings.rename(session_id, name)
