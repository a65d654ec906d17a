"""`louise logout [AGENT]` — log out of an Agent (`logout`, where it advertises it).
Exit status: 0 logged out, 1 failed or not supported, 2 bad usage."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", nargs="?", help="configured Agent (default: default_agent)")


def run(args: argparse.Namespace) -> int:
    import anyio

    from louise.cli.commands._common import CliError, config_and_agent, out

    config, agent = config_and_agent(args.agent)

    async def logging_out() -> CliError | None:
        from louise.acp.errors import AcpError
        from louise.registry import SessionRegistry

        async with SessionRegistry(config, transcripts_dir=None) as registry:
            try:
                await registry.logout(agent)
            except (AcpError, OSError) as exc:
                message, _, detail = str(exc).partition("\n")
                return CliError(message, detail=detail)
        return None

    failure = anyio.run(logging_out)
    if failure is not None:
        raise failure
    out(f"logged out of {agent}")
    return 0
