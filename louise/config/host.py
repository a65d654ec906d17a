"""`[host]`: whether louise runs its Agents itself (`mode = "off"`, the default) or
through the session host (`mode = "auto"`: every Agent is launched as `louise attach
--agent NAME`, which starts the local host when none runs; `via`: a command whose stdio
reaches a host elsewhere, e.g. `ssh devbox louise serve --stdio`), and how long a host a
front end started stays without any use (`idle_exit`, seconds)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Literal

from pydantic import Field, StrictFloat, StrictStr, field_validator

from louise.config.agents import AgentConfig
from louise.config.fields import ConfigModel, seconds
from louise.config.problems import custom_error

ATTACH_SPEC_ENV = "LOUISE_ATTACH_SPEC"  # the agent command the host is asked to run (JSON)
DEFAULT_IDLE_EXIT = 600.0
FrontEndName = Literal["nvim", "cli", "acp"]


class HostConfig(ConfigModel):
    mode: Literal["off", "auto"] = "off"
    via: StrictStr | None = None
    idle_exit: StrictFloat = Field(default=DEFAULT_IDLE_EXIT, ge=0)

    @field_validator("idle_exit", mode="before")
    @classmethod
    def _idle_number(cls, value: object) -> object:
        return seconds(value, "idle_exit")

    @field_validator("via")
    @classmethod
    def _via(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise custom_error(f"via cannot be read as a command: {exc}",
                               'quote as in a shell, e.g. via = "ssh devbox louise serve '
                               '--stdio"') from None
        if not words:
            raise custom_error("via is empty", 'e.g. via = "ssh devbox louise serve --stdio"')
        return value

    @property
    def enabled(self) -> bool:
        return self.mode == "auto"


def attach_launch(host: HostConfig, name: str, agent: AgentConfig,
                  front_end: FrontEndName) -> AgentConfig | None:
    """What to start for the Agent `name` when the host is on: this interpreter running
    `louise attach` (no shell); None when louise runs its Agents itself. The Agent's own
    command goes to a local host as the attach hello's `agentCommand` (through the
    environment, which only this user can read; never on a command line); a remote host
    (`via`) resolves the name in its own configuration."""
    if not host.enabled:
        return None
    args = ["-P", "-m", "louise.cli", "attach", "--agent", name, "--front-end", front_end]
    env: dict[str, str] = {}
    if host.via is not None:
        args += ["--via", host.via]
    else:
        args += ["--idle-exit", repr(float(host.idle_exit))]
        env[ATTACH_SPEC_ENV] = json.dumps(
            {"command": agent.command, "args": list(agent.args), "env": dict(agent.env),
             "cwd": agent.cwd}, ensure_ascii=False, separators=(",", ":"))
    return AgentConfig(command=os.path.abspath(sys.executable), args=args, env=env)
