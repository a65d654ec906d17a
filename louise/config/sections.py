"""The tables of the configuration that apply to every Agent, some overridden per Agent:
`[fs]`, `[terminal]`, `[permissions]` (with its rules), `[mcp_servers]` and `[context]`,
as louise holds them once valid (frozen dataclasses; checked by `schema/sections.py`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal, get_args

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
TOOL_KINDS: tuple[str, ...] = get_args(ToolKind)
DEFAULT_OUTPUT_BYTE_LIMIT = 1024 * 1024
MCP_TRANSPORTS = ("stdio", "http", "sse")


@dataclass(frozen=True, slots=True, kw_only=True)
class FsConfig:
    """File-system capabilities offered to agents (`fs/read_text_file`, `fs/write_text_file`).

    `roots` are directories allowed in addition to each session's cwd.
    """

    read: bool = True
    write: bool = True
    roots: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class FsOverride:
    """Per-Agent `fs`: every field that is set replaces the top-level value."""

    read: bool | None = None
    write: bool | None = None
    roots: list[str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TerminalConfig:
    """Client `terminal/*` capability: whether it is offered and how much output is kept."""

    enabled: bool = True
    output_byte_limit: int = DEFAULT_OUTPUT_BYTE_LIMIT


@dataclass(frozen=True, slots=True, kw_only=True)
class TerminalOverride:
    """Per-Agent `terminal`: every field that is set replaces the top-level value."""

    enabled: bool | None = None
    output_byte_limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRule:
    """A configured rule that may answer a permission request without asking.

    `kind` is one tool kind or a list of them. With `inside_workspace = true` (the default) the
    rule applies only when the request names at least one path and every path is inside the
    workspace; with `false` it applies to any target.
    """

    kind: list[ToolKind]
    inside_workspace: bool = True
    decision: Literal["allow", "reject"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionsConfig:
    """Permission policy: `default` applies when no rule matches (`ask` the person, or `reject`).

    `gate_unasked`: a file write or a terminal command that the agent did not precede, in
    the same turn, with a permission request that was approved for that file or command is
    asked for first (rules and remembered choices apply to that question too).
    """

    default: Literal["ask", "reject"] = "ask"
    rules: list[PermissionRule] = field(default_factory=list)
    gate_unasked: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServerConfig:
    """One MCP server the agent is to connect to (passed to `session/new`, `load`,
    `resume`). `type` is the transport: `stdio` (the default; `command`, `args`, `env`)
    or `http` / `sse` (`url`, `headers`), as far as the agent's `mcpCapabilities` allow.
    `enabled = false` leaves a server of `[mcp_servers]` out for one Agent."""

    type: Literal["stdio", "http", "sse"] = "stdio"
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    enabled: bool = True

    @property
    def expanded_command(self) -> str | None:
        if self.command is not None and self.command.startswith("~"):
            return os.path.expanduser(self.command)
        return self.command


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextConfig:
    """`[context]` (LouiseLM's): `instructions_file`, a file of the session's directory
    (e.g. "AGENTS.md") attached to the first prompt of every new session; "" for none."""

    instructions_file: str = ""
