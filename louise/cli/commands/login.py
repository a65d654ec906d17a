"""`louise login [AGENT] [--method ID]` — sign in to an Agent.

Without `--method` the Agent's sign-in methods are listed on the terminal to choose from.
A method the agent handles is passed to `authenticate`; a terminal method runs the
Agent's own configured command with the method's arguments, in this terminal, after the
command is shown and confirmed (argv, never a shell). Without a terminal only an agent
method named with `--method` can be used. Exit status: 0 signed in, 1 failed,
2 bad usage, 3 not signed in (declined, or nobody to ask).
"""

from __future__ import annotations

import argparse

EXIT_NOT_SIGNED_IN = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", nargs="?", help="configured Agent (default: default_agent)")
    parser.add_argument("--method", help="the sign-in method's id (default: choose)")
    parser.add_argument("--list", action="store_true",
                        help="only list the Agent's sign-in methods")


def run(args: argparse.Namespace) -> int:
    import anyio

    from louise.cli.commands._common import CliError, config_and_agent, out
    from louise.cli.terminal_text import safe

    config, agent = config_and_agent(args.agent)

    async def signing_in() -> int | CliError:
        from louise.acp.errors import AcpError
        from louise.cli.console import TtyDecider
        from louise.cli.console_questions import TtySignIn
        from louise.registry import SessionRegistry

        prompter = TtySignIn() if TtyDecider.available() else None
        async with SessionRegistry(config, transcripts_dir=None, sign_in=prompter) as registry:
            try:
                if args.list:
                    for method in await registry.auth_methods(agent):
                        out("\t".join(safe(v) for v in (method.id, method.kind, method.name,
                                                        method.description)))
                    return 0
                if prompter is None and args.method is None:
                    return CliError(f"no terminal to choose a sign-in method on; name one "
                                    f"with --method (louise login {agent} --list)",
                                    EXIT_NOT_SIGNED_IN)
                if not await registry.sign_in(agent, args.method):
                    return CliError(f"not signed in to {agent}", EXIT_NOT_SIGNED_IN)
            except (AcpError, OSError) as exc:
                message, _, detail = str(exc).partition("\n")
                return CliError(message, detail=detail)
        out(f"signed in to {agent}")
        return 0

    result = anyio.run(signing_in)
    if isinstance(result, CliError):
        raise result
    return result
