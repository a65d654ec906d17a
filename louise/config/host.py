"""`[host]`: whether louise runs its Agents itself (`mode = "off"`, the default) or
through the session host (`mode = "auto"`: every Agent is launched as `louise attach
--agent NAME`, which starts the local host when none runs; `via`: a command whose stdio
reaches a host elsewhere, e.g. `ssh devbox louise serve --stdio`), and how long a host a
front end started stays without any use (`idle_exit`, seconds)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Literal

from louise.config.agents import AgentConfig

ATTACH_SPEC_ENV = "LOUISE_ATTACH_SPEC"  # the agent command the host is asked to run (JSON)
DEFAULT_IDLE_EXIT = 600.0
FrontEndName = Literal["nvim", "cli", "acp"]


@dataclass(frozen=True, slots=True, kw_only=True)
class HostConfig:
    """`[host]` as louise holds it once valid (checked by `schema/host.py`)."""

    mode: Literal["off", "auto"] = "off"
    via: str | None = None
    idle_exit: float = DEFAULT_IDLE_EXIT

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
