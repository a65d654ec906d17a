"""Validation: a mapping shaped like `config.toml` (or `setup{}`'s host options) checked by
the pydantic models and given back as the runtime dataclasses (`louise/config/data.py`),
or a `ConfigError` naming every problem at once. The only way into this package."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from louise.config import host as runtime_host
from louise.config import model as runtime_model
from louise.config.agents import DEMO_AGENT_NAME, default_agent_problem
from louise.config.data import config_from_data, host_from_data
from louise.config.louiselm import LOUISELM_CONTEXT, ignored_warnings
from louise.config.problems import ConfigError
from louise.config.schema.agents import AgentConfig, AgentDefaults, AgentOptions
from louise.config.schema.checkpoints import CheckpointsConfig
from louise.config.schema.errors import problem_from_error
from louise.config.schema.fields import lua_empty_table
from louise.config.schema.host import HostConfig
from louise.config.schema.model import Config
from louise.config.schema.sections import (
    ContextConfig,
    FsConfig,
    FsOverride,
    McpServerConfig,
    PermissionRule,
    PermissionsConfig,
    TerminalConfig,
    TerminalOverride,
)


def validate_mapping(data: Any, source: str) -> runtime_model.Config:
    """Validate a mapping shaped like `config.toml` (what Neovim's `setup{}` passes).
    LouiseLM settings louise does not use are dropped; `Config.warnings` names them."""
    ignored: list[tuple[tuple[str, ...], str]] = []
    try:
        config = Config.model_validate(data, context={LOUISELM_CONTEXT: ignored})
    except ValidationError as exc:
        problems = [problem_from_error(error, _model_at) for error in exc.errors()]
    else:
        return config_from_data(config.model_dump(), ignored_warnings(ignored))
    # Field errors stop pydantic before the model-level check; make it on the raw data so
    # that every problem is still reported at once.
    if not any(p.path == "default_agent" for p in problems) and isinstance(data, Mapping):
        agents = lua_empty_table(data.get("agents", {}))
        default = data.get("default_agent")
        if isinstance(agents, Mapping) and isinstance(default, str):
            problem = default_agent_problem(default, [*agents, DEMO_AGENT_NAME])
            if problem is not None:
                problems.append(problem)
    raise ConfigError(problems, source) from None


def validate_host(host: Mapping[str, Any], source: str) -> runtime_host.HostConfig:
    """`setup{}`'s host options as a checked `[host]` section (ConfigError when not)."""
    try:
        checked = HostConfig.model_validate(host)
    except ValidationError as exc:
        raise ConfigError([problem_from_error(error, lambda _loc: HostConfig)
                           for error in exc.errors()], source) from None
    return host_from_data(checked.model_dump())


def _model_at(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The model class that a location inside `Config` points into, for unknown-field hints."""
    shape: dict[tuple[str, ...], type[BaseModel]] = {
        (): Config,
        ("agents", "*"): AgentConfig,
        ("agents", "*", "fs"): FsOverride,
        ("agents", "*", "terminal"): TerminalOverride,
        ("agents", "*", "mcp_servers", "*"): McpServerConfig,
        ("agents", "*", "defaults"): AgentDefaults,
        ("mcp_servers", "*"): McpServerConfig,
        ("permissions",): PermissionsConfig,
        ("permissions", "rules", "#"): PermissionRule,
        ("fs",): FsConfig,
        ("terminal",): TerminalConfig,
        ("checkpoints",): CheckpointsConfig,
        ("context",): ContextConfig,
        ("host",): HostConfig,
        ("agents", "*", "options"): AgentOptions,
    }
    key: list[str] = []
    for index, part in enumerate(loc):
        if isinstance(part, int):
            key.append("#")
        elif (index == 1 and loc[0] in ("agents", "mcp_servers")) or \
                (index == 3 and loc[0] == "agents" and loc[2] == "mcp_servers"):
            key.append("*")
        else:
            key.append(part)
    return shape.get(tuple(key))
