"""The validators of the tables that apply to every Agent, some overridden per Agent:
`[fs]`, `[terminal]`, `[permissions]` (with its rules), `[mcp_servers]` and `[context]`
(louise holds them as `louise/config/sections.py`'s dataclasses)."""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from louise.config.schema.errors import custom_error
from louise.config.schema.fields import ConfigModel, EnvMap, PositiveInt, RootPath, lua_empty_table
from louise.config.sections import DEFAULT_OUTPUT_BYTE_LIMIT, TOOL_KINDS, ToolKind


class FsConfig(ConfigModel):
    """File-system capabilities offered to agents (`fs/read_text_file`, `fs/write_text_file`).

    `roots` are directories allowed in addition to each session's cwd.
    """

    read: StrictBool = True
    write: StrictBool = True
    roots: list[RootPath] = Field(default_factory=list)


class FsOverride(ConfigModel):
    """Per-Agent `fs`: every field that is set replaces the top-level value."""

    read: StrictBool | None = None
    write: StrictBool | None = None
    roots: list[RootPath] | None = None


class TerminalConfig(ConfigModel):
    """Client `terminal/*` capability: whether it is offered and how much output is kept."""

    enabled: StrictBool = True
    output_byte_limit: PositiveInt = DEFAULT_OUTPUT_BYTE_LIMIT


class TerminalOverride(ConfigModel):
    """Per-Agent `terminal`: every field that is set replaces the top-level value."""

    enabled: StrictBool | None = None
    output_byte_limit: PositiveInt | None = None


class PermissionRule(ConfigModel):
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
                raise custom_error(f"unknown tool kind {value!r}", hint)
            return [value]
        if isinstance(value, list) and not value:
            raise custom_error("kind is an empty list",
                               f"name at least one of: {', '.join(TOOL_KINDS)}")
        return value


class PermissionsConfig(ConfigModel):
    """Permission policy: `default` applies when no rule matches (`ask` the person, or `reject`).

    `gate_unasked`: a file write or a terminal command that the agent did not precede, in
    the same turn, with a permission request that was approved for that file or command is
    asked for first (rules and remembered choices apply to that question too).
    """

    default: Literal["ask", "reject"] = "ask"
    rules: list[PermissionRule] = Field(default_factory=list)
    gate_unasked: StrictBool = True


_MCP_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _check_mcp_name(name: str) -> str:
    if not _MCP_NAME_RE.fullmatch(name) or len(name) > 64:
        raise custom_error(f"invalid MCP server name {name!r}",
                      "use letters, digits, '_', '-' or '.', starting with a letter or digit")
    return name


McpName = Annotated[StrictStr, AfterValidator(_check_mcp_name)]
HeaderMap = Annotated[dict[StrictStr, StrictStr], BeforeValidator(lua_empty_table)]


class McpServerConfig(ConfigModel):
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
                raise custom_error("a stdio MCP server needs a command",
                              'add command = "…" (or type = "http" with a url)', ("command",))
            if self.url is not None or self.headers:
                raise custom_error("url and headers are for http and sse servers",
                              'remove them, or set type = "http" or "sse"', ("url",))
            return self
        if self.url is None or not re.match(r"https?://[^\s/]+", self.url):
            raise custom_error(f"an {self.type} MCP server needs an http(s) url",
                          'e.g. url = "https://example.com/mcp"', ("url",))
        if self.command is not None or self.args or self.env:
            raise custom_error(f"command, args and env are for stdio servers, not {self.type}",
                          'remove them, or set type = "stdio"', ("command",))
        return self


McpServers = Annotated[dict[McpName, McpServerConfig], BeforeValidator(lua_empty_table)]


class ContextConfig(ConfigModel):
    """`[context]` (LouiseLM's): `instructions_file`, a file of the session's directory
    (e.g. "AGENTS.md") attached to the first prompt of every new session; "" for none."""

    instructions_file: StrictStr = ""

    @field_validator("instructions_file")
    @classmethod
    def _relative(cls, value: str) -> str:
        parts = value.replace("\\", "/").split("/")
        if value and (os.path.isabs(value) or value.startswith("~") or ".." in parts):
            raise custom_error("instructions_file is a file of the session's directory",
                               'name it relative to that directory, e.g. "AGENTS.md"')
        return value
