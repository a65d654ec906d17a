"""The MCP servers passed to `session/new`, `session/load` and `session/resume`: the
person's `[mcp_servers]` and the Agent's own `[agents.NAME.mcp_servers]`, as far as the
agent's `mcpCapabilities` allow (stdio always; http and sse only where advertised).

A server of the Agent's own table that it cannot take is an error (the session is not
created: the person asked for it there); a server of the shared table is left out for
that agent with a note in the chat. A stdio command is sent as an absolute path (the
schema asks for one), found on PATH when configured by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from louise.config.model import Config
from louise.config.sections import McpServerConfig
from louise.registry.records import AgentRuntime, RegistryError

MAX_MCP_SERVERS = 64


@dataclass
class McpSelection:
    """What goes on the wire, and what was left out (one note each)."""

    servers: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def supported_transports(agent_capabilities: dict[str, Any]) -> set[str]:
    caps = agent_capabilities.get("mcpCapabilities")
    caps = caps if isinstance(caps, dict) else {}
    return {"stdio"} | {kind for kind in ("http", "sse") if caps.get(kind) is True}


def _pairs(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in values.items()]


def _wire(name: str, server: McpServerConfig, command: str | None) -> dict[str, Any]:
    if server.type == "stdio":
        return {"name": name, "command": command, "args": list(server.args),
                "env": _pairs(server.env)}
    return {"type": server.type, "name": name, "url": server.url,
            "headers": _pairs(server.headers)}


def _absolute(command: str) -> str | None:
    if os.path.isabs(command):
        return command
    import shutil  # with bz2 and lzma: only for an MCP server named by its command

    return shutil.which(command)


def mcp_servers(config: Config, runtime: AgentRuntime) -> McpSelection:
    """The Agent's MCP servers for its (initialized) process; RegistryError for one of its
    own that cannot be passed."""
    configured = config.mcp_servers_for(runtime.name)
    selection = McpSelection()
    if not configured:
        return selection
    if len(configured) > MAX_MCP_SERVERS:
        raise RegistryError(f"{runtime.name}: more than {MAX_MCP_SERVERS} MCP servers "
                            "configured")
    caps = runtime.initialized.agent_capabilities if runtime.initialized is not None else {}
    transports = supported_transports(caps)
    for name, (server, own) in configured.items():
        where = f"agents.{runtime.name}.mcp_servers.{name}" if own else f"mcp_servers.{name}"
        problem = None
        command = None
        if server.type not in transports:
            problem = (f"{runtime.name} does not take MCP servers over {server.type} (its "
                       f"mcpCapabilities.{server.type} is not true): {where}")
        elif server.type == "stdio":
            command = _absolute(server.expanded_command or "")
            if command is None:
                problem = (f"MCP server {where}: command {server.command!r} is not found "
                           "on PATH (use an absolute path)")
        if problem is None:
            selection.servers.append(_wire(name, server, command))
        elif own:
            raise RegistryError(problem)
        else:
            selection.notes.append(f"{problem}; left out for {runtime.name}")
    return selection
