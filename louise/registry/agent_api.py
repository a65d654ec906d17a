"""The registry's API about Agents: their processes and connections, sign-in, and
account limits (the governor included).

A part of `SessionRegistry` (`louise/registry/__init__.py`, which builds what is declared
here and inherits these methods); the sessions' side of its API is `session_api.py`.
Each method delegates to the part that owns the behaviour.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from louise import limits as lim
from louise.acp.auth import AuthMethod
from louise.acp.connection import AgentConnection
from louise.registry.agents import AgentSupervisor
from louise.registry.governor import Governor
from louise.registry.limits_observer import LimitsObserver
from louise.registry.records import AgentRuntime, SessionTable
from louise.registry.signin import SignIn
from louise.registry.turns import steering_supported

T = TypeVar("T")


class AgentApi:
    """Agents' processes, sign-in and limits; the parts are built by `SessionRegistry`."""

    _table: SessionTable
    _agents: AgentSupervisor
    _sign_in: SignIn
    _limits: LimitsObserver
    _governor: Governor

    # ------------------------------------------------------------------ processes

    def agent_names(self) -> list[str]:
        return list(self._table.runtimes)

    def runtime(self, agent: str) -> AgentRuntime:
        return self._table.runtime(agent)

    def agent_log(self, agent: str) -> list[str]:
        """The agent's stderr tail and the protocol errors of its connection."""
        return self._agents.agent_log(agent)

    async def connection(self, agent: str) -> AgentConnection:
        """The Agent's live, initialized connection; (re)starts the process when needed."""
        return await self._agents.connection(agent)

    def steering(self, agent: str) -> bool:
        """Whether the Agent's running process takes prompts into a running turn."""
        initialized = self._table.runtime(agent).initialized
        return initialized is not None and steering_supported(initialized.raw)

    def kill_agents(self) -> None:
        """SIGKILL every agent's process group at once, from any thread (it only sends
        signals): for a process that leaves before `aclose` could finish."""
        self._agents.kill_all()

    def discard_early_agent(self) -> None:
        """The agent spawned early (`SessionRegistry(early_agent=…)`), if no agent start took
        it, is stopped: nothing will ask for it now."""
        self._agents.discard_early()

    # ------------------------------------------------------------------ signing in

    async def auth_methods(self, agent: str) -> list[AuthMethod]:
        """The sign-in methods the Agent advertises (starts its process if needed)."""
        return await self._sign_in.methods(agent)

    async def sign_in(self, agent: str, method_id: str | None = None,
                      reason: str = "") -> bool:
        """Sign in to an Agent: `authenticate` for a method the agent handles; a terminal
        method's command (shown to the person and run only on their say-so, through the
        `SignInPrompter`), then a restart. Without `method_id` the person picks. True when
        signed in, False when declined; RegistryError when it failed."""
        return await self._sign_in.sign_in(agent, method_id, reason)

    async def logout(self, agent: str) -> None:
        """`logout` where the Agent advertises it (RegistryError otherwise)."""
        await self._sign_in.logout(agent)

    async def with_sign_in(self, agent: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Run `operation`; if the agent requires authentication (and a prompter is
        there), let the person sign in, then run it once more."""
        return await self._sign_in.retrying(agent, operation)

    # ------------------------------------------------------------------ limits

    def inspect_limits(self, agent: str, now: float | None = None) -> lim.LimitsState:
        """The Agent's limits state by the spec's inspection rules; starts nothing."""
        return self._limits.inspect(agent, now)

    async def refresh_limits(self, agent: str) -> lim.LimitsState:
        """Read the Agent's limits through its first capable live session (see
        `LimitsObserver.refresh`)."""
        return await self._limits.refresh(agent)

    @property
    def governor(self) -> Governor:
        """Budgets, turn costs (`cost_lines`), parked turns (`parked`, `unpark`) and the
        risk of the next turn (`risk`): louise/registry/governor.py."""
        return self._governor

    def unpark(self, session_id: str) -> bool:
        """Undo a park: the parked prompt is not sent again (its `prompt()` raises
        PromptWithdrawn) and the queue behind it goes on. False when not parked."""
        return self._governor.unpark(self._table.live(session_id))

    def limits_pace(self, agent: str) -> lim.PaceHistory | None:
        """The Agent's pace samples this process observed (`render_detail(pace=…)`,
        `lim.pace_alerts`); None before its first fresh figures."""
        self._table.runtime(agent)  # unknown agent: RegistryError
        return self._limits.pace_history(agent)
