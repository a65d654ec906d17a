"""Reading the configuration: `config.toml` (default: `paths.config_file()`), or a mapping
shaped like it (what Neovim's `setup{}` passes), into a whole, valid `Config`, or a
`ConfigError` naming every problem at once."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from louise.config.agents import (
    DEMO_AGENT_NAME,
    AgentConfig,
    AgentDefaults,
    AgentOptions,
    default_agent_problem,
)
from louise.config.checkpoints import CheckpointsConfig
from louise.config.fields import lua_empty_table
from louise.config.host import HostConfig
from louise.config.louiselm import LOUISELM_CONTEXT, ignored_warnings
from louise.config.model import Config
from louise.config.problems import ConfigError, ConfigProblem, problem_from_error, toml_problem
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
from louise.storage import paths


def load_config(path: Path | None = None) -> Config:
    """Load `config.toml` (default: `louise.storage.paths.config_file()`); a missing
    file means defaults."""
    file = path if path is not None else paths.config_file()
    source = str(file)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        return load_config_mapping({}, source=source)
    except OSError as exc:
        problem = ConfigProblem(
            "", f"cannot read the file: {exc.strerror or exc}", "check that it is a readable file"
        )
        raise ConfigError([problem], source) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = ConfigProblem(
            "", f"the file is not UTF-8 (byte {exc.start})", "save it as UTF-8 text"
        )
        raise ConfigError([problem], source) from None
    import tomllib  # only for a file that is there (an engine given setup{} reads none)

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([toml_problem(str(exc), text)], source) from None
    return load_config_mapping(data, source=source)


def load_config_mapping(data: Any, *, source: str = "setup{}") -> Config:
    """Validate a mapping shaped like `config.toml` (what Neovim's `setup{}` passes).
    LouiseLM settings louise does not use are dropped; `Config.warnings` names them."""
    ignored: list[tuple[tuple[str, ...], str]] = []
    try:
        config = Config.model_validate(data, context={LOUISELM_CONTEXT: ignored})
    except ValidationError as exc:
        problems = [problem_from_error(error, _model_at) for error in exc.errors()]
    else:
        config._warnings = ignored_warnings(ignored)
        return config
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
