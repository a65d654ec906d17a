"""Memory of the headless registry: 5 Agents × 4 sessions on the demo agent.

Prints the registry process's RSS before and after (from /proc/self/status), the agent
processes' RSS for comparison, and the per-session increment.

    .venv/bin/python bench/bench_registry_rss.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

AGENTS = 5
SESSIONS = 4


def rss_kib(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def main() -> None:
    import os

    os.environ.setdefault("LOUISE_STATE_DIR", tempfile.mkdtemp(prefix="louise-bench-"))
    from louise.config.loading import load_config_mapping
    from louise.registry import SessionRegistry

    agents = {f"demo{i}": {"command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"]}
              for i in range(AGENTS)}
    config = load_config_mapping({"agents": agents})
    baseline = rss_kib()
    with tempfile.TemporaryDirectory() as cwd:
        async with SessionRegistry(config) as registry:
            sessions = []
            for name in agents:
                for _ in range(SESSIONS):
                    sessions.append(await registry.new_session(name, cwd))
            for session in sessions:
                await registry.prompt(session.session_id, "hello")
            loaded = rss_kib()
            agent_rss = [rss_kib(registry.runtime(name).connection.process.pid)  # type: ignore
                         for name in agents]
    total = len(sessions)
    print(f"registry RSS, louise imported, nothing started : {baseline / 1024:7.1f} MiB")
    print(f"ACP SDK models imported (validation is lazy)  : {'acp.schema' in sys.modules}")
    print(f"registry RSS, {AGENTS} agents x {SESSIONS} sessions, 1 turn each: "
          f"{loaded / 1024:7.1f} MiB")
    print(f"increment per session (incl. its agent's connection): "
          f"{(loaded - baseline) / total:7.1f} KiB")
    print(f"each demo agent process RSS: {min(agent_rss) / 1024:.1f}–"
          f"{max(agent_rss) / 1024:.1f} MiB")


if __name__ == "__main__":
    anyio.run(main)
