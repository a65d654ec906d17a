"""`louise sessions [--agent NAME] [--cwd DIR] [--json]` — the agent's own session list
(`session/list`, all pages): a header line, then one tab-separated line per session.
Starts the agent; exits 1 if it cannot list sessions."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", help="configured Agent (default: default_agent)")
    parser.add_argument("--cwd", help="only sessions of this directory (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    import os

    import anyio

    from louise.cli.commands._common import CliError, config_and_agent, out, print_json
    from louise.cli.terminal_text import safe

    config, agent = config_and_agent(args.agent)
    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else None

    async def listing() -> list[dict[str, object]] | CliError:
        # Failures are returned, not raised: raised inside the registry they would come
        # out wrapped in an exception group.
        from louise.acp.errors import AcpError
        from louise.registry import SessionRegistry

        async with SessionRegistry(config, transcripts_dir=None) as registry:
            try:
                return await registry.list_sessions(agent, cwd)
            except (AcpError, OSError) as exc:
                message, _, detail = str(exc).partition("\n")
                return CliError(message, detail=detail)

    infos = anyio.run(listing)
    if isinstance(infos, CliError):
        raise infos
    if args.json:
        print_json(infos)
        return 0
    if not infos:
        out(f"{agent} lists no sessions" + (f" in {cwd}" if cwd else ""))
        return 0
    # A header names the columns (tab-separated, as the rows; --json for scripts).
    out("\t".join(("session", "updated", "directory", "title")))
    for info in infos:
        fields = (info.get("sessionId"), info.get("updatedAt"), info.get("cwd"), info.get("title"))
        out("\t".join(safe(str(value or "")) for value in fields))
    return 0
