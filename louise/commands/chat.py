"""`louise chat [--agent NAME] [--cwd DIR] [--allow KIND ...] PROMPT` — one turn, streamed.

The reply goes to stdout, tool activity and notes to stderr. Permissions are asked on the
terminal when there is one; without one they are refused unless `--allow KIND` allows
that kind. Ctrl-C cancels the turn (per the protocol); a second Ctrl-C quits.
Exit status: 0 end_turn, 1 error, 2 bad usage or config, 3 authentication required,
4 refusal, 5 max_tokens / max_turn_requests, 130 cancelled.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from louise.acp.errors import RpcError
    from louise.config import Config
    from louise.registry import SessionRegistry

EXIT_AUTH = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="+", help="the prompt text")
    parser.add_argument("--agent", help="configured Agent (default: default_agent)")
    parser.add_argument("--cwd", help="session working directory (default: current)")
    parser.add_argument("--allow", action="append", default=[], metavar="KIND",
                        help="allow this tool kind without asking (read, edit, execute, …)")
    parser.add_argument("--no-thoughts", action="store_true", help="hide thought chunks")


def run(args: argparse.Namespace) -> int:
    import anyio

    from louise.commands._common import load_config_or_exit

    config = load_config_or_exit()
    if config is None:
        return 2
    agent = args.agent or config.default_agent
    if agent not in config.agents:
        known = ", ".join(config.agents)
        print(f"louise: unknown agent {agent!r}; configured: {known}", file=sys.stderr)
        return 2
    return anyio.run(_chat, config, agent, args)


async def _chat(config: Config, agent: str, args: argparse.Namespace) -> int:
    import anyio

    from louise.acp.errors import AcpError, RpcError
    from louise.broker import AllowKinds, PermissionDecider
    from louise.console import ConsolePrinter, TtyDecider, stop_reason_exit_code
    from louise.registry import RegistryError, SessionRegistry

    decider: PermissionDecider
    if TtyDecider.available() and not args.allow:
        decider = TtyDecider()
    else:
        decider = AllowKinds(frozenset(args.allow))
    prompt = " ".join(args.prompt)
    async with SessionRegistry(config, decider=decider) as registry:
        printer = ConsolePrinter(registry, show_thoughts=not args.no_thoughts)
        registry.subscribe(printer)
        try:
            session = await registry.new_session(agent, args.cwd)
            printer.session_id = session.session_id
            async with anyio.create_task_group() as tg:
                tg.start_soon(_cancel_on_interrupt, registry, session.session_id)
                reason = await registry.prompt(session.session_id, prompt)
                tg.cancel_scope.cancel()
        except RpcError as exc:
            return _report_rpc(registry, agent, exc)
        except (RegistryError, AcpError, OSError) as exc:
            cause = exc.__cause__
            print(f"louise: {exc}", file=sys.stderr)
            return EXIT_AUTH if isinstance(cause, RpcError) and cause.is_auth_required else 1
        return stop_reason_exit_code(reason)


async def _cancel_on_interrupt(registry: SessionRegistry, session_id: str) -> None:
    import anyio

    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        count = 0
        async for _ in signals:
            count += 1
            if count == 1:
                print("\nlouise: cancelling (Ctrl-C again to quit)", file=sys.stderr)
                await registry.cancel(session_id)
            else:
                raise SystemExit(130)


def _report_rpc(registry: SessionRegistry, agent: str, exc: RpcError) -> int:
    runtime = registry.runtime(agent)
    from louise.registry import describe_rpc_error

    print(f"louise: {describe_rpc_error(exc, runtime)}", file=sys.stderr)
    if exc.is_auth_required:
        return EXIT_AUTH
    if runtime.connection is not None:
        stderr = runtime.connection.process.stderr.tail(2000).strip()
        if stderr:
            print(f"--- {runtime.command.display()} stderr (tail) ---\n{stderr}",
                  file=sys.stderr)
    return 1
