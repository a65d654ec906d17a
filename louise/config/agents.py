"""`[agents.<name>]`: how to start each Agent's ACP process and its own settings; the
bundled demo agent every configuration has."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
from typing import Any

from pydantic import Field, StrictFloat, StrictStr, field_validator

from louise.config.fields import ConfigModel, EnvMap, expand_absolute, lua_empty_table, seconds
from louise.config.louiselm import provider_name
from louise.config.problems import ConfigProblem, custom_error
from louise.config.sections import FsOverride, McpServers, TerminalOverride

DEMO_AGENT_NAME = "demo"


class AgentDefaults(ConfigModel):
    """Settings applied to every new session of an Agent, each matched against what the
    agent offers (a value's id, else its name): its mode, model and thought level."""

    mode: StrictStr | None = None
    model: StrictStr | None = None
    thought_level: StrictStr | None = None


MAX_META_BYTES = 64 * 1024


class AgentOptions(ConfigModel):
    """`agents.<name>.options` (LouiseLM's shape): `_meta`, sent as it is in the `_meta`
    of session/new, session/load and session/resume (e.g. claude-agent-acp's
    `{ claudeCode = { options = { maxThinkingTokens = 8000 } } }`)."""

    meta: dict[StrictStr, Any] = Field(default_factory=dict, alias="_meta")

    @field_validator("meta", mode="before")
    @classmethod
    def _meta_json(cls, value: Any) -> Any:
        value = lua_empty_table(value)
        try:
            encoded = json.dumps(value, allow_nan=False, ensure_ascii=False)
        except (TypeError, ValueError):
            raise custom_error("_meta must hold only tables, strings, numbers and booleans",
                               "e.g. _meta = { claudeCode = { options = { "
                               "maxThinkingTokens = 8000 } } }") from None
        if len(encoded.encode()) > MAX_META_BYTES:
            raise custom_error(f"_meta is larger than {MAX_META_BYTES // 1024} KiB",
                               "keep only the settings the agent reads")
        return value


class AgentConfig(ConfigModel):
    """One configured Agent: how to start its ACP process (shell-free) and its overrides.

    A LouiseLM Agent works as it is: its `provider` routes or prefix map become the
    provider names, its `options._meta` goes with every session setup, and the LouiseLM
    settings louise has no use for are ignored with a warning each
    (`LOUISELM_AGENT_KEYS`)."""

    command: StrictStr
    args: list[StrictStr] = Field(default_factory=list)
    env: EnvMap = Field(default_factory=dict)
    cwd: StrictStr | None = None
    provider: StrictStr | None = None
    fs: FsOverride | None = None
    terminal: TerminalOverride | None = None
    prompt_idle_timeout: StrictFloat | None = Field(default=None, ge=0)
    mcp_servers: McpServers = Field(default_factory=dict)
    defaults: AgentDefaults | None = None
    options: AgentOptions | None = None

    @field_validator("prompt_idle_timeout", mode="before")
    @classmethod
    def _idle_number(cls, value: Any) -> Any:
        return seconds(value, "prompt_idle_timeout")

    @field_validator("provider", mode="before")
    @classmethod
    def _provider_shapes(cls, value: Any) -> Any:
        return provider_name(value)

    @field_validator("command")
    @classmethod
    def _command(cls, value: str) -> str:
        if not value.strip():
            raise custom_error("command is empty", 'name an executable, e.g. command = "codex-acp"')
        # Spawning is shell-free, so a leading ~ would otherwise never be expanded.
        return os.path.expanduser(value) if value.startswith("~") else value

    @field_validator("cwd")
    @classmethod
    def _cwd(cls, value: str | None) -> str | None:
        return None if value is None else expand_absolute(value, "cwd")

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise custom_error("provider is empty", "name the access/quota service, or remove it")
        return value

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]

    @property
    def session_meta(self) -> dict[str, Any]:
        """The `_meta` of this Agent's session setups (empty: none is sent)."""
        return dict(self.options.meta) if self.options is not None else {}


def demo_agent_config() -> AgentConfig:
    """The bundled demo agent, run with this very interpreter. `-P` keeps the current
    directory (a repository that may hold its own `louise/`) off the import path."""
    return AgentConfig(command=os.path.abspath(sys.executable),
                       args=["-P", "-m", "louise.demo_agent"])


def default_agent_problem(name: str, known: list[str]) -> ConfigProblem | None:
    if name in known:
        return None
    known = list(dict.fromkeys(known))
    hint = f"name one of the configured Agents: {', '.join(known)}"
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
    return shutil.which(command, path=agent.env.get("PATH"))
