"""An Agent's sessions as the agent keeps them: listed, every configured Agent at once
(`:LouiseResume`: each Agent's own `session/list`, or the sessions louise recorded for
an Agent that loads sessions but cannot list them, side by side, each started only if it
is not running yet; one that cannot list, not found, authentication required, no
`session/list`, gives its error in place of its sessions; bounded: sessions per Agent,
and time), forked and deleted (where the agent advertises it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from louise.acp.connection import AgentConnection
from louise.acp.errors import AcpError
from louise.registry.recorded import recorded_sessions
from louise.registry.records import RegistryError, SessionTable, describe_error
from louise.registry.sessions import Sessions
from louise.session import Session

Close = Callable[[str], Awaitable[None]]  # closes a session here (and at the agent)

MAX_SESSIONS_PER_AGENT = 200


@dataclass(frozen=True, slots=True)
class AgentListing:
    """One Agent's sessions, or why there are none; what can be done with them."""

    agent: str
    sessions: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    can_load: bool = False
    can_resume: bool = False
    can_fork: bool = False
    can_delete: bool = False


async def list_at_agent(connection: AgentConnection, sessions: Sessions, agent: str,
                        cwd: str | None, transcripts_dir: Path) -> list[dict[str, Any]]:
    """The agent's own `session/list`; for an agent that loads sessions but cannot list
    them (gemini-cli), the sessions louise recorded for it from its transcripts."""
    init = connection.initialized
    if init is not None and init.load_session and not init.session_capability("list"):
        listed = await anyio.to_thread.run_sync(recorded_sessions, transcripts_dir, agent, cwd)
    else:
        listed = await sessions.list_sessions(agent, cwd)
    return sessions.with_names(agent, listed)  # the person's names, not the agent's titles


async def list_everywhere(table: SessionTable, agents: list[str],
                          list_one: Callable[[str], Awaitable[list[dict[str, Any]]]],
                          timeout: float,
                          on_listed: Callable[[AgentListing], None] | None = None
                          ) -> list[AgentListing]:
    """Every Agent's listing, in the order given (concurrently, each within `timeout`);
    `on_listed` gets each one as it ends (what a person waiting is told)."""
    results: dict[str, AgentListing] = {}

    async def one(agent: str) -> None:
        try:
            await listing(agent)
        finally:
            if on_listed is not None and agent in results:
                on_listed(results[agent])

    async def listing(agent: str) -> None:
        runtime = table.runtime(agent)
        try:
            with anyio.fail_after(timeout):
                sessions = await list_one(agent)
        except TimeoutError:
            results[agent] = AgentListing(agent, error=f"{agent} did not list its sessions "
                                          f"within {timeout:g} s")
            return
        except (AcpError, OSError) as exc:
            message = describe_error(exc, runtime) if not str(exc).startswith(agent) \
                else str(exc)
            results[agent] = AgentListing(agent, error=message.splitlines()[0][:300])
            return
        init = runtime.initialized
        results[agent] = AgentListing(
            agent, sessions=[s for s in sessions if isinstance(s.get("sessionId"), str)]
            [:MAX_SESSIONS_PER_AGENT],
            can_load=init is not None and init.load_session,
            can_resume=init is not None and init.session_capability("resume"),
            can_fork=init is not None and init.session_capability("fork"),
            can_delete=init is not None and init.session_capability("delete"))

    async with anyio.create_task_group() as tg:
        for agent in agents:
            tg.start_soon(one, agent)
    return [results[agent] for agent in agents]


async def delete_at_agent(table: SessionTable, connection: AgentConnection, agent: str,
                          acp_id: str, close: Close) -> None:
    """`session/delete` of one of the Agent's sessions (only where advertised); one open
    here is closed first."""
    runtime = table.runtime(agent)
    if runtime.initialized is None or not runtime.initialized.session_capability("delete"):
        raise RegistryError(f"{agent} does not support deleting sessions")
    live = table.find(agent, acp_id)
    if live is not None:
        await close(live.session_id)
    try:
        await connection.delete_session(acp_id)
    except AcpError as exc:
        raise RegistryError(f"could not delete the session: "
                            f"{describe_error(exc, runtime)}") from exc


async def fork_at_agent(table: SessionTable, sessions: Sessions, agent: str, acp_id: str,
                        cwd: str | None, close: Close) -> Session:
    """`session/fork` (only where advertised, the Agent started): a new session with the
    same history, opened (loaded where the agent can)."""
    runtime = table.runtime(agent)
    if runtime.initialized is None or not runtime.initialized.session_capability("fork"):
        raise RegistryError(f"{agent} does not support forking sessions")
    try:
        return await sessions.fork_session(agent, acp_id, cwd)
    except RegistryError:
        if not runtime.initialized.load_session or table.find(agent, acp_id):
            raise
    # Some agents (vibe) fork only a session they hold: load it (no chat), fork, close it.
    source = await sessions.open_session(agent, acp_id, cwd, "load")
    try:
        return await sessions.fork_session(agent, acp_id, cwd)
    finally:
        await close(source.session_id)
