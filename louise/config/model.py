"""`Config`: the whole configuration as louise holds it once valid (frozen dataclasses,
without pydantic: `schema/` checks a `config.toml` or `setup{}` and gives one of these),
and what it answers per Agent (its fs, terminal, MCP servers, idle timeout). The bundled
demo agent is always there as the Agent named `demo`."""

from __future__ import annotations

from dataclasses import dataclass, field

from louise.config.agents import DEMO_AGENT_NAME, AgentConfig, demo_agent_config
from louise.config.checkpoints import CheckpointsConfig
from louise.config.host import HostConfig
from louise.config.limits import LimitsConfig
from louise.config.problems import ConfigProblem, UnknownAgentError
from louise.config.sections import (
    ContextConfig,
    FsConfig,
    McpServerConfig,
    PermissionsConfig,
    TerminalConfig,
)

DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_PROMPT_IDLE_TIMEOUT = 300.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The whole configuration. `agents` keeps file order and always contains `demo`.

    `warnings`: what was accepted but is not used (LouiseLM settings), one problem per
    setting name: say it once where the config is loaded."""

    # Made in code, as validating an empty table makes it: the demo agent, the default.
    agents: dict[str, AgentConfig] = field(default_factory=lambda: {
        DEMO_AGENT_NAME: demo_agent_config()})
    default_agent: str = DEMO_AGENT_NAME
    permissions: PermissionsConfig = field(default_factory=PermissionsConfig)
    fs: FsConfig = field(default_factory=FsConfig)
    terminal: TerminalConfig = field(default_factory=TerminalConfig)
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    prompt_idle_timeout: float = DEFAULT_PROMPT_IDLE_TIMEOUT
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    checkpoints: CheckpointsConfig = field(default_factory=CheckpointsConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    host: HostConfig = field(default_factory=HostConfig)
    warnings: tuple[ConfigProblem, ...] = ()

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
        fs = self.fs
        return FsConfig(read=fs.read if override.read is None else override.read,
                        write=fs.write if override.write is None else override.write,
                        roots=fs.roots if override.roots is None else override.roots)

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
        terminal = self.terminal
        return TerminalConfig(
            enabled=terminal.enabled if override.enabled is None else override.enabled,
            output_byte_limit=terminal.output_byte_limit if override.output_byte_limit is None
            else override.output_byte_limit)
