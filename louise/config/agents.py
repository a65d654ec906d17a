"""`[agents.<name>]`: how to start each Agent's ACP process and its own settings, as louise
holds them once valid (checked by `schema/agents.py`); the bundled demo agent every
configuration has."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from louise.config.problems import ConfigProblem
from louise.config.sections import FsOverride, McpServerConfig, TerminalOverride

DEMO_AGENT_NAME = "demo"
MAX_META_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentDefaults:
    """Settings applied to every new session of an Agent, each matched against what the
    agent offers (a value's id, else its name): its mode, model and thought level."""

    mode: str | None = None
    model: str | None = None
    thought_level: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOptions:
    """`agents.<name>.options` (LouiseLM's shape): `_meta` (held as `meta`), sent as it is
    in the `_meta` of session/new, session/load and session/resume (e.g.
    claude-agent-acp's `{ claudeCode = { options = { maxThinkingTokens = 8000 } } }`)."""

    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    """One configured Agent: how to start its ACP process (shell-free) and its overrides.

    A LouiseLM Agent works as it is: its `provider` routes or prefix map become the
    provider names, its `options._meta` goes with every session setup, and the LouiseLM
    settings louise has no use for are ignored with a warning each
    (`LOUISELM_AGENT_KEYS`)."""

    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    provider: str | None = None
    fs: FsOverride | None = None
    terminal: TerminalOverride | None = None
    prompt_idle_timeout: float | None = None
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    defaults: AgentDefaults | None = None
    options: AgentOptions | None = None

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]

    @property
    def session_meta(self) -> dict[str, Any]:
        """The `_meta` of this Agent's session setups (empty: none is sent)."""
        return dict(self.options.meta) if self.options is not None else {}


def demo_agent_argv() -> list[str]:
    """The bundled demo agent, run with this very interpreter. `-P` keeps the current
    directory (a repository that may hold its own `louise/`) off the import path."""
    return [os.path.abspath(sys.executable), "-P", "-m", "louise.demo_agent"]


def demo_agent_config() -> AgentConfig:
    command, *args = demo_agent_argv()
    return AgentConfig(command=command, args=args)


def default_agent_problem(name: str, known: list[str]) -> ConfigProblem | None:
    if name in known:
        return None
    known = list(dict.fromkeys(known))
    hint = f"name one of the configured Agents: {', '.join(known)}"
    import difflib  # on a mistake only: not with the engine's start

    close = difflib.get_close_matches(name, known, n=1)
    if close:
        hint = f"did you mean {close[0]!r}? Known Agents: {', '.join(known)}"
    return ConfigProblem("default_agent", f"unknown Agent {name!r}", hint)


def resolve_command(agent: AgentConfig) -> str | None:
    """Where the agent's command would be found, or None.

    Uses the agent's own PATH when its env sets one, as spawning it would.
    """
    command = agent.command
    if os.sep in command or (os.altsep and os.altsep in command):
        base = agent.cwd if agent.cwd and not os.path.isabs(command) else None
        candidate = os.path.join(base, command) if base else command
        ok = os.path.isfile(candidate) and os.access(candidate, os.X_OK)
        return os.path.abspath(candidate) if ok else None
    import shutil  # with bz2 and lzma: for inspect and health, not the engine's start

    return shutil.which(command, path=agent.env.get("PATH"))
