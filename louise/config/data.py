"""A valid configuration as plain data and back: `config_from_data` makes the runtime
dataclasses from what the validator gives (`model_dump()` of `schema/model.Config`) and
from what the validated-configuration cache kept (the same, through JSON); `config_to_data`
is its inverse, JSON-able (`json.dumps(…, allow_nan=False)`). Each section is made with
its fields by name, so a field the data has and the dataclass lacks (or the reverse, for a
field without a default) fails here rather than being dropped; the schema's and the
dataclasses' fields are compared in tests/unit/test_config_runtime.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from louise.config.agents import AgentConfig, AgentDefaults, AgentOptions
from louise.config.checkpoints import CheckpointsConfig
from louise.config.host import HostConfig
from louise.config.limits import LimitsConfig
from louise.config.model import Config
from louise.config.problems import ConfigProblem
from louise.config.sections import (
    ContextConfig,
    FsConfig,
    FsOverride,
    McpServerConfig,
    PermissionRule,
    PermissionsConfig,
    TerminalConfig,
    TerminalOverride,
)


def config_from_data(data: Mapping[str, Any],
                     warnings: tuple[ConfigProblem, ...] = ()) -> Config:
    """The runtime `Config` of a valid configuration's data (KeyError, TypeError or
    ValueError when the data is not shaped as `config_to_data` makes it)."""
    _exact(data, Config, "warnings")
    permissions, limits = data["permissions"], data["limits"]
    _exact(permissions, PermissionsConfig)
    _exact(limits, LimitsConfig)
    return Config(
        agents={str(name): agent_from_data(agent) for name, agent in data["agents"].items()},
        default_agent=data["default_agent"],
        permissions=PermissionsConfig(
            default=permissions["default"],
            rules=[PermissionRule(**rule) for rule in permissions["rules"]],
            gate_unasked=permissions["gate_unasked"]),
        fs=FsConfig(**data["fs"]),
        terminal=TerminalConfig(**data["terminal"]),
        request_timeout=data["request_timeout"],
        prompt_idle_timeout=data["prompt_idle_timeout"],
        mcp_servers=_mcp_servers(data["mcp_servers"]),
        checkpoints=CheckpointsConfig(**data["checkpoints"]),
        limits=LimitsConfig(
            confirm=limits["confirm"], near_percent=limits["near_percent"],
            park=limits["park"],
            # JSON's keys are strings: the window's minutes are ints again
            budgets={workspace: {int(minutes): share for minutes, share in shares.items()}
                     for workspace, shares in limits["budgets"].items()}),
        context=ContextConfig(**data["context"]),
        host=host_from_data(data["host"]),
        warnings=warnings)


def agent_from_data(data: Mapping[str, Any]) -> AgentConfig:
    _exact(data, AgentConfig)
    fs, terminal = data["fs"], data["terminal"]
    defaults, options = data["defaults"], data["options"]
    return AgentConfig(
        command=data["command"], args=list(data["args"]), env=dict(data["env"]),
        cwd=data["cwd"], provider=data["provider"],
        fs=None if fs is None else FsOverride(**fs),
        terminal=None if terminal is None else TerminalOverride(**terminal),
        prompt_idle_timeout=data["prompt_idle_timeout"],
        mcp_servers=_mcp_servers(data["mcp_servers"]),
        defaults=None if defaults is None else AgentDefaults(**defaults),
        options=None if options is None else AgentOptions(**options))


def host_from_data(data: Mapping[str, Any]) -> HostConfig:
    return HostConfig(**data)


def _mcp_servers(data: Mapping[str, Any]) -> dict[str, McpServerConfig]:
    return {str(name): McpServerConfig(**server) for name, server in data.items()}


def _exact(data: Mapping[str, Any], kind: type[Any], *besides: str) -> None:
    """The sections made field by field take exactly their dataclass's fields (the
    others are made with `**data`, which refuses an unknown or missing one itself)."""
    names = {field.name for field in dataclasses.fields(kind)}.difference(besides)
    if data.keys() != names:
        raise KeyError(f"{kind.__name__}: {sorted(names ^ data.keys())}")


def config_to_data(config: Config) -> dict[str, Any]:
    """`config`'s data as `config_from_data` takes it (its warnings aside), JSON-able
    but for the budgets' int keys (JSON makes them strings; `config_from_data` makes them
    ints again)."""
    data = dataclasses.asdict(config)
    del data["warnings"]
    return data


def warnings_to_data(warnings: tuple[ConfigProblem, ...]) -> list[list[Any]]:
    return [[w.path, w.message, w.hint, w.line, w.column] for w in warnings]


def warnings_from_data(data: list[Any]) -> tuple[ConfigProblem, ...]:
    return tuple(ConfigProblem(str(path), str(message), str(hint), line, column)
                 for path, message, hint, line, column in data)
