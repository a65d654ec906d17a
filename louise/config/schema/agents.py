"""The validators of `[agents.<name>]` (louise holds them as `louise/config/agents.py`'s
dataclasses)."""

from __future__ import annotations

import json
import os
from typing import Any

from pydantic import Field, StrictFloat, StrictStr, field_validator

from louise.config.agents import MAX_META_BYTES
from louise.config.schema.errors import custom_error
from louise.config.schema.fields import (
    ConfigModel,
    EnvMap,
    expand_absolute,
    lua_empty_table,
    seconds,
)
from louise.config.schema.louiselm import provider_name
from louise.config.schema.sections import FsOverride, McpServers, TerminalOverride


class AgentDefaults(ConfigModel):
    """Settings applied to every new session of an Agent, each matched against what the
    agent offers (a value's id, else its name): its mode, model and thought level."""

    mode: StrictStr | None = None
    model: StrictStr | None = None
    thought_level: StrictStr | None = None


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
