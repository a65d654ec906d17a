"""Sessions of every configured Agent at once (`:LouiseResume`): each Agent's own list
(`session/list`), the Agents listed side by side, each started only if it is not running
yet, and one that cannot list (not found, authentication required, no `session/list`)
gives its error in place of its sessions. Bounded: sessions per Agent, and time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from louise.acp.errors import AcpError
from louise.registry.records import SessionTable, describe_error

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


async def list_everywhere(table: SessionTable, agents: list[str],
                          list_one: Callable[[str], Awaitable[list[dict[str, Any]]]],
                          timeout: float) -> list[AgentListing]:
    """Every Agent's listing, in the order given (concurrently, each within `timeout`)."""
    results: dict[str, AgentListing] = {}

    async def one(agent: str) -> None:
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
