"""louise's configuration: one set of pydantic models for `config.toml` and Neovim's `setup{}`.

Loading either yields a whole, valid `Config` or raises `ConfigError` listing every problem
(field path, message, hint) at once; nothing is ever half-applied. The bundled demo agent is
always available as the Agent named `demo`.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from louise.config.checkpoints import CheckpointsConfig
from louise.config.limits import LimitsConfig
from louise.config.louiselm import (
    LOUISELM_AGENT_KEYS,
    LOUISELM_CONTEXT,
    ignore_louiselm,
    ignored_warnings,
    provider_name,
)
from louise.config.louiselm import (
    LOUISELM_TOP_KEYS as LOUISELM_TOP_KEYS,
)
from louise.config.problems import (  # ConfigError and its kin stay importable from here
    ConfigError as ConfigError,
)
from louise.config.problems import (
    ConfigProblem as ConfigProblem,
)
from louise.config.problems import (
    UnknownAgentError as UnknownAgentError,
)
from louise.config.problems import (
    custom_error,
    problem_from_error,
    toml_problem,
)
from louise.storage import paths

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
TOOL_KINDS: tuple[str, ...] = get_args(ToolKind)

DEMO_AGENT_NAME = "demo"
DEFAULT_OUTPUT_BYTE_LIMIT = 1024 * 1024
DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_PROMPT_IDLE_TIMEOUT = 300.0

_custom = custom_error
_AGENT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


# --------------------------------------------------------------------------- field types


def _lua_empty_table(value: Any) -> Any:
    # Neovim sends an empty Lua table `{}` as an empty array; where a table is expected, it
    # means "no entries".
    return {} if isinstance(value, list) and not value else value


def _expand_absolute(value: str, what: str) -> str:
    if not value:
        raise _custom(f"{what} is empty", "use an absolute path or one starting with ~")
    expanded = os.path.expanduser(value)
    if not os.path.isabs(expanded):
        raise _custom(
            f"{what} {value!r} is relative",
            "use an absolute path, or one starting with ~ which is expanded",
        )
    return os.path.normpath(expanded)


def _seconds(value: Any, what: str) -> Any:
    """Seconds must be finite (`inf` would mean "no limit", which is spelled 0)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise _custom(f"{what} is not finite", "use a number of seconds, e.g. 300 (0: no limit)")
    return value


def _check_agent_name(name: str) -> str:
    if not _AGENT_NAME_RE.fullmatch(name):
        raise _custom(
            f"invalid Agent name {name!r}",
            "use letters, digits, '_', '-' or '.', starting with a letter or digit",
        )
    return name


def _check_env_name(name: str) -> str:
    if not name or "=" in name or "\0" in name:
        raise _custom(
            f"invalid environment variable name {name!r}", "use a name without '=' or NUL"
        )
    return name


AgentName = Annotated[StrictStr, AfterValidator(_check_agent_name)]
EnvName = Annotated[StrictStr, AfterValidator(_check_env_name)]
EnvMap = Annotated[dict[EnvName, StrictStr], BeforeValidator(_lua_empty_table)]
RootPath = Annotated[StrictStr, AfterValidator(lambda v: _expand_absolute(v, "root"))]
PositiveInt = Annotated[StrictInt, Field(gt=0)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _empty_lua_table(cls, data: Any) -> Any:
        return _lua_empty_table(data)


# --------------------------------------------------------------------------- models


class FsConfig(_Model):
    """File-system capabilities offered to agents (`fs/read_text_file`, `fs/write_text_file`).

    `roots` are directories allowed in addition to each session's cwd.
    """

    read: StrictBool = True
    write: StrictBool = True
    roots: list[RootPath] = Field(default_factory=list)


class FsOverride(_Model):
    """Per-Agent `fs`: every field that is set replaces the top-level value."""

    read: StrictBool | None = None
    write: StrictBool | None = None
    roots: list[RootPath] | None = None


class TerminalConfig(_Model):
    """Client `terminal/*` capability: whether it is offered and how much output is kept."""

    enabled: StrictBool = True
    output_byte_limit: PositiveInt = DEFAULT_OUTPUT_BYTE_LIMIT


class TerminalOverride(_Model):
    """Per-Agent `terminal`: every field that is set replaces the top-level value."""

    enabled: StrictBool | None = None
    output_byte_limit: PositiveInt | None = None


class PermissionRule(_Model):
    """A configured rule that may answer a permission request without asking.

    `kind` is one tool kind or a list of them. With `inside_workspace = true` (the default) the
    rule applies only when the request names at least one path and every path is inside the
    workspace; with `false` it applies to any target.
    """

    kind: list[ToolKind]
    inside_workspace: StrictBool = True
    decision: Literal["allow", "reject"]

    @field_validator("kind", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, str):
            # Checked here so that the error names `kind`, not `kind[0]`.
            if value not in TOOL_KINDS:
                hint = f"use one of: {', '.join(TOOL_KINDS)}"
                raise _custom(f"unknown tool kind {value!r}", hint)
            return [value]
        if isinstance(value, list) and not value:
            raise _custom("kind is an empty list", f"name at least one of: {', '.join(TOOL_KINDS)}")
        return value


class PermissionsConfig(_Model):
    """Permission policy: `default` applies when no rule matches (`ask` the person, or `reject`).

    `gate_unasked`: a file write or a terminal command that the agent did not precede, in
    the same turn, with a permission request that was approved for that file or command is
    asked for first (rules and remembered choices apply to that question too).
    """

    default: Literal["ask", "reject"] = "ask"
    rules: list[PermissionRule] = Field(default_factory=list)
    gate_unasked: StrictBool = True


_MCP_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MCP_TRANSPORTS = ("stdio", "http", "sse")


def _check_mcp_name(name: str) -> str:
    if not _MCP_NAME_RE.fullmatch(name) or len(name) > 64:
        raise _custom(f"invalid MCP server name {name!r}",
                      "use letters, digits, '_', '-' or '.', starting with a letter or digit")
    return name


McpName = Annotated[StrictStr, AfterValidator(_check_mcp_name)]
HeaderMap = Annotated[dict[StrictStr, StrictStr], BeforeValidator(_lua_empty_table)]


class McpServerConfig(_Model):
    """One MCP server the agent is to connect to (passed to `session/new`, `load`,
    `resume`). `type` is the transport: `stdio` (the default; `command`, `args`, `env`)
    or `http` / `sse` (`url`, `headers`), as far as the agent's `mcpCapabilities` allow.
    `enabled = false` leaves a server of `[mcp_servers]` out for one Agent."""

    type: Literal["stdio", "http", "sse"] = "stdio"
    command: StrictStr | None = None
    args: list[StrictStr] = Field(default_factory=list)
    env: EnvMap = Field(default_factory=dict)
    url: StrictStr | None = None
    headers: HeaderMap = Field(default_factory=dict)
    enabled: StrictBool = True

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServerConfig:
        if not self.enabled:
            return self
        if self.type == "stdio":
            if self.command is None or not self.command.strip():
                raise _custom("a stdio MCP server needs a command",
                              'add command = "…" (or type = "http" with a url)', ("command",))
            if self.url is not None or self.headers:
                raise _custom("url and headers are for http and sse servers",
                              'remove them, or set type = "http" or "sse"', ("url",))
            return self
        if self.url is None or not re.match(r"https?://[^\s/]+", self.url):
            raise _custom(f"an {self.type} MCP server needs an http(s) url",
                          'e.g. url = "https://example.com/mcp"', ("url",))
        if self.command is not None or self.args or self.env:
            raise _custom(f"command, args and env are for stdio servers, not {self.type}",
                          'remove them, or set type = "stdio"', ("command",))
        return self

    @property
    def expanded_command(self) -> str | None:
        if self.command is not None and self.command.startswith("~"):
            return os.path.expanduser(self.command)
        return self.command


McpServers = Annotated[dict[McpName, McpServerConfig], BeforeValidator(_lua_empty_table)]


class AgentDefaults(_Model):
    """Settings applied to every new session of an Agent, each matched against what the
    agent offers (a value's id, else its name): its mode, model and thought level."""

    mode: StrictStr | None = None
    model: StrictStr | None = None
    thought_level: StrictStr | None = None


class AgentConfig(_Model):
    """One configured Agent: how to start its ACP process (shell-free) and its overrides.

    A LouiseLM Agent works as it is: its `provider` routes or prefix map become the
    provider names, and the LouiseLM settings louise has no use for are ignored with a
    warning each (`LOUISELM_AGENT_KEYS`)."""

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

    @field_validator("prompt_idle_timeout", mode="before")
    @classmethod
    def _idle_number(cls, value: Any) -> Any:
        return _seconds(value, "prompt_idle_timeout")

    @field_validator("provider", mode="before")
    @classmethod
    def _provider_shapes(cls, value: Any) -> Any:
        return provider_name(value)

    @field_validator("command")
    @classmethod
    def _command(cls, value: str) -> str:
        if not value.strip():
            raise _custom("command is empty", 'name an executable, e.g. command = "codex-acp"')
        # Spawning is shell-free, so a leading ~ would otherwise never be expanded.
        return os.path.expanduser(value) if value.startswith("~") else value

    @field_validator("cwd")
    @classmethod
    def _cwd(cls, value: str | None) -> str | None:
        return None if value is None else _expand_absolute(value, "cwd")

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise _custom("provider is empty", "name the access/quota service, or remove it")
        return value

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]


def demo_agent_config() -> AgentConfig:
    """The bundled demo agent, run with this very interpreter. `-P` keeps the current
    directory (a repository that may hold its own `louise/`) off the import path."""
    return AgentConfig(command=os.path.abspath(sys.executable),
                       args=["-P", "-m", "louise.demo_agent"])


class Config(_Model):
    """The whole configuration. `agents` keeps file order and always contains `demo`."""

    agents: Annotated[dict[AgentName, AgentConfig], BeforeValidator(_lua_empty_table)] = Field(
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

    _warnings: tuple[ConfigProblem, ...] = PrivateAttr(default=())

    @property
    def warnings(self) -> tuple[ConfigProblem, ...]:
        """What was accepted but is not used (LouiseLM settings), one problem per setting
        name: say it once where the config is loaded."""
        return self._warnings

    @model_validator(mode="before")
    @classmethod
    def _demo_and_default(cls, data: Any, info: ValidationInfo) -> Any:
        data = _lua_empty_table(data)
        if not isinstance(data, Mapping):
            return data
        data = ignore_louiselm(dict(data), LOUISELM_TOP_KEYS, (), info)
        agents = _lua_empty_table(data.get("agents", {}))
        if isinstance(agents, Mapping):
            agents = {name: ignore_louiselm(_lua_empty_table(agent), LOUISELM_AGENT_KEYS,
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
            raise _custom("request_timeout is not finite", "use a number of seconds, e.g. 30")
        return value

    @field_validator("prompt_idle_timeout", mode="before")
    @classmethod
    def _idle_number(cls, value: Any) -> Any:
        return _seconds(value, "prompt_idle_timeout")

    @model_validator(mode="after")
    def _default_is_known(self) -> Config:
        problem = _default_agent_problem(self.default_agent, list(self.agents))
        if problem is not None:
            raise _custom(problem.message, problem.hint, ("default_agent",))
        return self

    def agent(self, name: str) -> AgentConfig:
        try:
            return self.agents[name]
        except KeyError:
            raise UnknownAgentError(name, list(self.agents)) from None

    def agent_names(self) -> list[str]:
        return list(self.agents)

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


# --------------------------------------------------------------------------- loading


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
        agents = _lua_empty_table(data.get("agents", {}))
        default = data.get("default_agent")
        if isinstance(agents, Mapping) and isinstance(default, str):
            problem = _default_agent_problem(default, [*agents, DEMO_AGENT_NAME])
            if problem is not None:
                problems.append(problem)
    raise ConfigError(problems, source) from None


def _default_agent_problem(name: str, known: list[str]) -> ConfigProblem | None:
    if name in known:
        return None
    known = list(dict.fromkeys(known))
    hint = f"name one of the configured Agents: {', '.join(known)}"
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        hint = f"did you mean {close[0]!r}? Known Agents: {', '.join(known)}"
    return ConfigProblem("default_agent", f"unknown Agent {name!r}", hint)


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
