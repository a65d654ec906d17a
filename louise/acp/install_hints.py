"""How to install the ACP agents people use, by the command louise runs: the package, one
install line and the runtime it needs (the versions the real-agent suite runs:
tests/real_agents/npm/package.json, install.py). Said wherever an agent's command is
missing (a chat that cannot start, `louise agents`, :checkhealth louise)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class InstallHint:
    """How to install a known agent's command that is not on PATH."""

    package: str  # as its registry names it
    line: str  # the one command that installs it (puts the command on PATH)
    runtime: str  # what it needs to run

    def text(self) -> str:
        return f"install it with {self.line} (needs {self.runtime})"


_NPM_NODE_22 = "Node.js ≥ 22"
KNOWN_AGENTS: dict[str, InstallHint] = {
    "claude-agent-acp": InstallHint("@agentclientprotocol/claude-agent-acp",
                                    "npm install -g @agentclientprotocol/claude-agent-acp",
                                    _NPM_NODE_22),
    "codex-acp": InstallHint("@agentclientprotocol/codex-acp",
                             "npm install -g @agentclientprotocol/codex-acp",
                             "Node.js ≥ 18 to install; the agent is a native program"),
    "gemini": InstallHint("@google/gemini-cli", "npm install -g @google/gemini-cli",
                          "Node.js ≥ 20; run as gemini --acp"),
    "qwen": InstallHint("@qwen-code/qwen-code", "npm install -g @qwen-code/qwen-code",
                        "Node.js ≥ 22; run as qwen --acp"),
    "opencode": InstallHint("opencode-ai", "npm install -g opencode-ai",
                            "Node.js to install; run as opencode acp"),
    "vibe-acp": InstallHint("mistral-vibe", "pipx install mistral-vibe",
                            "Python ≥ 3.12; or uv tool install mistral-vibe"),
    "copilot": InstallHint("@github/copilot", "npm install -g @github/copilot",
                           "Node.js ≥ 22 and a GitHub Copilot plan; run as copilot --acp"),
}
# Older names of the same agents.
KNOWN_AGENTS["claude-code-acp"] = KNOWN_AGENTS["claude-agent-acp"]


def install_hint(command: str) -> InstallHint | None:
    """The known agent a command names (by its file name), or None."""
    name = os.path.basename(command.rstrip("/\\")).lower()
    return KNOWN_AGENTS.get(name.removesuffix(".cmd").removesuffix(".exe"))
