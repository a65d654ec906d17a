"""The validator of the whole configuration (`Config`), for `config.toml` and Neovim's
`setup{}`: valid as a whole or not at all (`validate.py`); the bundled demo agent is added
as the Agent named `demo`. louise holds the result as `louise/config/model.py`'s `Config`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BeforeValidator,
    Field,
    StrictFloat,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from louise.config.agents import DEMO_AGENT_NAME, default_agent_problem, demo_agent_argv
from louise.config.louiselm import LOUISELM_AGENT_KEYS, LOUISELM_TOP_KEYS
from louise.config.model import DEFAULT_PROMPT_IDLE_TIMEOUT, DEFAULT_REQUEST_TIMEOUT
from louise.config.schema.agents import AgentConfig
from louise.config.schema.checkpoints import CheckpointsConfig
from louise.config.schema.errors import custom_error
from louise.config.schema.fields import AgentName, ConfigModel, lua_empty_table, seconds
from louise.config.schema.host import HostConfig
from louise.config.schema.limits import LimitsConfig
from louise.config.schema.louiselm import ignore_louiselm
from louise.config.schema.sections import (
    ContextConfig,
    FsConfig,
    McpServers,
    PermissionsConfig,
    TerminalConfig,
)


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
                command, *args = demo_agent_argv()
                agents = {**agents, DEMO_AGENT_NAME: {"command": command, "args": args}}
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
