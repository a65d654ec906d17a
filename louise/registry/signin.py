"""Signing in and out of an Agent: `authenticate` for methods the agent handles, the
agent's own command in an interactive terminal for `terminal` methods (then the agent is
restarted and its open sessions reattached), `logout` where advertised.

The front end supplies a `SignInPrompter`: the person picks the method, and sees and
approves a terminal method's command before it runs (never through a shell). Nothing is
signed in without the person: no prompter, no choice, a refusal, a non-zero exit or an
error all leave the Agent as it was. One sign-in per Agent at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

import anyio

from louise.acp.auth import AuthMethod, AuthMethodError, TerminalInvocation, terminal_invocation
from louise.acp.errors import AcpError, RpcError
from louise.registry.agents import AgentSupervisor
from louise.registry.events import AgentStatus, Emitter, SignInWaiting
from louise.registry.records import AgentRuntime, RegistryError, SessionTable, describe_error
from louise.registry.sessions import Sessions

log = logging.getLogger("louise.registry")

T = TypeVar("T")


class SignInPrompter(Protocol):
    """The front end's part of signing in."""

    @property
    def terminal(self) -> bool:
        """Whether a terminal method's command can run in an interactive terminal here
        (advertised to agents as `auth.terminal`)."""

    async def choose(self, agent: str, methods: Sequence[AuthMethod],
                     reason: str) -> AuthMethod | None:
        """The method the person picks (None: they declined)."""

    async def run_terminal(self, agent: str, method: AuthMethod,
                           invocation: TerminalInvocation) -> int | None:
        """Show the command, and only on the person's say-so run it interactively;
        its exit status, or None when they declined or it could not start."""


def needs_sign_in(exc: BaseException) -> bool:
    """An agent's "authentication required" (-32000), raised as it is or as the cause of
    a RegistryError."""
    seen: BaseException | None = exc
    for _ in range(4):
        if isinstance(seen, RpcError):
            return seen.is_auth_required
        if seen is None:
            return False
        seen = seen.__cause__
    return False


class SignIn:
    """Sign-in and logout of each Agent (see the module docstring)."""

    def __init__(self, table: SessionTable, emitter: Emitter, agents: AgentSupervisor,
                 sessions: Sessions, prompter: SignInPrompter | None) -> None:
        self._table = table
        self._emitter = emitter
        self._agents = agents
        self._sessions = sessions
        self.prompter = prompter
        self._locks: dict[str, anyio.Lock] = {}
        self._signed_in: dict[str, int] = {}  # agent -> sign-ins done (a waiter's check)
        self._under_way: dict[str, int] = {}  # agent -> sign-ins started and not over

    def waiting(self, agent: str) -> bool:
        """Whether a sign-in to the Agent is under way (the person asked, or waited on)."""
        return self._under_way.get(agent, 0) > 0

    async def methods(self, agent: str) -> list[AuthMethod]:
        """The methods the Agent advertises (its process is started if needed)."""
        await self._agents.connection(agent)
        initialized = self._table.runtime(agent).initialized
        return initialized.methods if initialized is not None else []

    async def sign_in(self, agent: str, method_id: str | None = None, reason: str = "") -> bool:
        """Sign in with the method named, else the one the person picks. True when signed
        in; False when the person declined. Raises RegistryError when it failed."""
        lock = self._locks.setdefault(agent, anyio.Lock())
        before = self._signed_in.get(agent, 0)
        self._under_way[agent] = self._under_way.get(agent, 0) + 1
        if self._under_way[agent] == 1:
            self._emitter.emit(SignInWaiting(agent, True))
        try:
            async with lock:
                if method_id is None and self._signed_in.get(agent, 0) != before:
                    return True  # someone else signed in while this caller waited
                done = await self._sign_in(agent, method_id, reason)
                if done:
                    self._signed_in[agent] = self._signed_in.get(agent, 0) + 1
                return done
        finally:
            self._under_way[agent] -= 1
            if not self._under_way[agent]:
                del self._under_way[agent]
                self._emitter.emit(SignInWaiting(agent, False))

    async def _sign_in(self, agent: str, method_id: str | None, reason: str) -> bool:
        runtime = self._table.runtime(agent)
        methods = await self.methods(agent)
        usable = [m for m in methods if m.usable]
        if method_id is not None:
            method = next((m for m in methods if m.id == method_id), None)
            if method is None:
                offered = ", ".join(m.id for m in methods) or "none"
                raise RegistryError(f"{agent} offers no sign-in method {method_id!r} "
                                    f"(it offers: {offered})")
            if not method.usable:
                raise RegistryError(f"{agent}: {method.name!r} is a {method.type!r} method, "
                                    "which louise does not know how to run")
        else:
            if not usable:
                raise RegistryError(self._no_methods(runtime, methods))
            if self.prompter is None:
                raise RegistryError(f"{agent}: nobody here to choose a sign-in method")
            chosen = await self.prompter.choose(agent, usable, reason)
            if chosen is None:
                return False
            method = chosen
        if method.kind == "terminal":
            return await self._terminal(runtime, method)
        connection = await self._agents.connection(agent)
        try:
            await connection.authenticate(method.id)
        except AcpError as exc:
            raise RegistryError(f"signing in to {agent} with {method.name!r} failed: "
                                f"{describe_error(exc, runtime)}") from exc
        self._emitter.emit(AgentStatus(agent, "running", f"signed in ({method.name})"))
        return True

    def _no_methods(self, runtime: AgentRuntime, methods: Sequence[AuthMethod]) -> str:
        if methods:
            kinds = ", ".join(sorted({m.type for m in methods}))
            return (f"{runtime.name} offers only sign-in methods louise cannot run ({kinds}); "
                    "sign in with the agent's own tool")
        if self.prompter is not None and not self.prompter.terminal:
            return (f"{runtime.name} offers no sign-in method here (some agents offer theirs "
                    "only to clients that can run a terminal); sign in with the agent's own "
                    "tool")
        return f"{runtime.name} offers no sign-in method; sign in with the agent's own tool"

    async def _terminal(self, runtime: AgentRuntime, method: AuthMethod) -> bool:
        if self.prompter is None or not self.prompter.terminal:
            raise RegistryError(f"{runtime.name}: {method.name!r} runs in a terminal, and "
                                "there is none here")
        command = runtime.command
        try:
            invocation = terminal_invocation(method, command.command, command.args,
                                             command.env, command.cwd, runtime.name)
        except AuthMethodError as exc:
            raise RegistryError(f"{runtime.name}: {exc}") from None
        status = await self.prompter.run_terminal(runtime.name, method, invocation)
        if status is None:
            return False
        if status != 0:
            raise RegistryError(f"signing in to {runtime.name} with {method.name!r} failed: "
                                f"the command exited with status {status}")
        # Per the spec: the agent is started again so it reads its new credentials.
        await self.restart(runtime.name, "signed in")
        return True

    async def restart(self, agent: str, why: str) -> None:
        """Restart the Agent's process and reattach its open sessions (load or resume);
        a session that cannot be reattached shows why."""
        runtime = self._table.runtime(agent)
        await self._agents.restart(agent, why)
        for live in list(runtime.sessions):
            if live.model.status == "closed":
                continue
            try:
                await self._sessions.attach(live, "reattach")
            except RegistryError as exc:
                log.info("%s: %s", agent, exc)

    async def logout(self, agent: str) -> None:
        """`logout` (only where the Agent advertises it). Its sessions may need a new
        sign-in afterwards: their next request that fails says so."""
        connection = await self._agents.connection(agent)
        runtime = self._table.runtime(agent)
        initialized = runtime.initialized
        if initialized is None or not initialized.logout_supported:
            raise RegistryError(f"{agent} does not support logout")
        try:
            await connection.logout()
        except AcpError as exc:
            raise RegistryError(f"logging out of {agent} failed: "
                                f"{describe_error(exc, runtime)}") from exc
        self._emitter.emit(AgentStatus(agent, "running", "signed out"))

    async def retrying(self, agent: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Run `operation`; when the agent answers "authentication required" and a
        prompter is there, sign in (the person choosing) and run it once more."""
        try:
            return await operation()
        except AcpError as exc:
            if not needs_sign_in(exc) or self.prompter is None:
                raise
            reason = str(exc)
            if not await self.sign_in(agent, reason=reason):
                raise
        return await operation()
