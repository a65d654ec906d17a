"""`Config`: the whole configuration, one set of pydantic models for `config.toml` and
Neovim's `setup{}`, and what it answers per Agent (its fs, terminal, MCP servers, idle
timeout). Valid as a whole or not at all (`loading.py`); the bundled demo agent is always
there as the Agent named `demo`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Field,
    PrivateAttr,
    StrictFloat,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from louise.config.agents import (
    DEMO_AGENT_NAME,
    AgentConfig,
    default_agent_problem,
    demo_agent_config,
)
from louise.config.checkpoints import CheckpointsConfig
from louise.config.fields import AgentName, ConfigModel, lua_empty_table, seconds
from louise.config.host import HostConfig
from louise.config.limits import LimitsConfig
from louise.config.louiselm import LOUISELM_AGENT_KEYS, LOUISELM_TOP_KEYS, ignore_louiselm
from louise.config.problems import ConfigProblem, UnknownAgentError, custom_error
from louise.config.sections import (
    ContextConfig,
    FsConfig,
    McpServerConfig,
    McpServers,
    PermissionsConfig,
    TerminalConfig,
)

DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_PROMPT_IDLE_TIMEOUT = 300.0


class Config(ConfigModel):
    """The whole configuration. `agents` keeps file order and always contains `demo`."""

    agents: Annotated[dict[AgentName, AgentConfig], BeforeValidator(lua_empty_table)] = Field(
        default_factory=dict
    )
    default_agent: StrictStr = DEMO_AGENT_NAME
    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)
    fs: FsConfig = Field(default_factory=FsConfig)
    terminal: TerminalConfig = Field(default_factory=TerminalConfig)
    request_timeout: StrictFloat = Field(default=DEFAULT_REQUEST_TIMEOUT, gt=0)
    prompt_idle_timeout: StrictFloat = Field(default=DEFAULT_PROMPT_IDLE_TIMEOUT, ge=0)
    mcp_servers: McpServers = Field(default_factory=dict)
    checkpoints: CheckpointsConfig = Field(default_factory=CheckpointsConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    host: HostConfig = Field(default_factory=HostConfig)

    _warnings: tuple[ConfigProblem, ...] = PrivateAttr(default=())

    @property
    def warnings(self) -> tuple[ConfigProblem, ...]:
        """What was accepted but is not used (LouiseLM settings), one problem per setting
        name: say it once where the config is loaded."""
        return self._warnings

    @model_validator(mode="before")
    @classmethod
    def _demo_and_default(cls, data: Any, info: ValidationInfo) -> Any:
        data = lua_empty_table(data)
        if not isinstance(data, Mapping):
            return data
        data = ignore_louiselm(dict(data), LOUISELM_TOP_KEYS, (), info)
        agents = lua_empty_table(data.get("agents", {}))
        if isinstance(agents, Mapping):
            agents = {name: ignore_louiselm(lua_empty_table(agent), LOUISELM_AGENT_KEYS,
                                             ("agents", str(name)), info)
                      for name, agent in agents.items()}
            configured = list(agents)
            if DEMO_AGENT_NAME not in agents:
                agents = {**agents, DEMO_AGENT_NAME: demo_agent_config()}
            data["agents"] = agents
            if data.get("default_agent") is None:
                data["default_agent"] = configured[0] if configured else DEMO_AGENT_NAME
        return data

    @field_validator("request_timeout")
    @classmethod
    def _finite_timeout(cls, value: float) -> float:
        if not math.isfinite(value):
            raise custom_error("request_timeout is not finite", "use a number of seconds, e.g. 30")
        return value

    @field_validator("prompt_idle_timeout", mode="before")
    @classmethod
    def _idle_number(cls, value: Any) -> Any:
        return seconds(value, "prompt_idle_timeout")

    @model_validator(mode="after")
    def _default_is_known(self) -> Config:
        problem = default_agent_problem(self.default_agent, list(self.agents))
        if problem is not None:
            raise custom_error(problem.message, problem.hint, ("default_agent",))
        return self

    def agent(self, name: str) -> AgentConfig:
        try:
            return self.agents[name]
        except KeyError:
            raise UnknownAgentError(name, list(self.agents)) from None

    def agent_names(self) -> list[str]:
        return list(self.agents)

    def shown_agents(self) -> list[str]:
        """The Agents offered where none is named (pickers, `:LouiseResume!`, completion):
        the configured ones, without the bundled demo agent once a real one is configured
        (it stays a demo; naming it still works), unless it is the default."""
        real = [name for name in self.agents if name != DEMO_AGENT_NAME]
        if not real or self.default_agent == DEMO_AGENT_NAME:
            return list(self.agents)
        return real

    def fs_for(self, name: str) -> FsConfig:
        """The effective `fs` settings of one Agent (its overrides applied)."""
        override = self.agent(name).fs
        if override is None:
            return self.fs
        return self.fs.model_copy(update=override.model_dump(exclude_none=True))

    def prompt_idle_timeout_for(self, name: str) -> float:
        """Seconds a turn of this Agent may go without any sign of life (0: no limit)."""
        own = self.agent(name).prompt_idle_timeout
        return self.prompt_idle_timeout if own is None else own

    def mcp_servers_for(self, name: str) -> dict[str, tuple[McpServerConfig, bool]]:
        """The Agent's MCP servers by name: `[mcp_servers]`, then its own (which win),
        without the disabled ones; True marks a server of the Agent's own table."""
        merged: dict[str, tuple[McpServerConfig, bool]] = {
            server_name: (server, False) for server_name, server in self.mcp_servers.items()}
        for server_name, server in self.agent(name).mcp_servers.items():
            merged[server_name] = (server, True)
        return {server_name: entry for server_name, entry in merged.items()
                if entry[0].enabled}

    def terminal_for(self, name: str) -> TerminalConfig:
        """The effective `terminal` settings of one Agent (its overrides applied)."""
        override = self.agent(name).terminal
        if override is None:
            return self.terminal
        return self.terminal.model_copy(update=override.model_dump(exclude_none=True))
