"""`louise sessions [--agent NAME] [--cwd DIR] [--json]` — the agent's own session list
(`session/list`, all pages). Starts the agent; exits 1 if it cannot list sessions."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", help="configured Agent (default: default_agent)")
    parser.add_argument("--cwd", help="only sessions of this directory (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    import anyio

    from louise.commands._common import load_config_or_exit

    config = load_config_or_exit()
    if config is None:
        return 2
    agent = args.agent or config.default_agent
    if agent not in config.agents:
        print(f"louise: unknown agent {agent!r}; configured: {', '.join(config.agents)}",
              file=sys.stderr)
        return 2

    async def listing() -> int:
        from louise.acp.errors import AcpError
        from louise.registry import RegistryError, SessionRegistry

        async with SessionRegistry(config, transcripts_dir=None) as registry:
            try:
                infos = await registry.list_sessions(agent, args.cwd)
            except (AcpError, RegistryError, OSError) as exc:
                print(f"louise: {exc}", file=sys.stderr)
                return 1
        if args.json:
            print(json.dumps(infos, indent=2, ensure_ascii=False))
            return 0
        if not infos:
            print(f"{agent} lists no sessions" + (f" in {args.cwd}" if args.cwd else ""))
            return 0
        for info in infos:
            title = str(info.get("title") or "")
            print(f"{info.get('sessionId')}\t{info.get('updatedAt') or ''}\t"
                  f"{info.get('cwd') or ''}\t{title}")
        return 0

    return anyio.run(listing)
