"""`louise chat [--agent NAME] [--cwd DIR] [--allow KIND ...] PROMPT` — one turn, streamed.

The reply goes to stdout, tool activity and notes to stderr. Permissions are asked on the
terminal when there is one; without one they are refused (saying why) unless
`--allow KIND` allows that kind once. Ctrl-C cancels the turn (per the protocol); a
second Ctrl-C quits. Every failure is one `louise: …` line (then the agent's stderr tail
when there is one) and an exit status: 0 end_turn, 1 error, 2 bad usage or config,
3 authentication required, 4 refusal, 5 max_tokens / max_turn_requests, 130 cancelled.
"""

from __future__ import annotations

import argparse
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import anyio

    from louise.commands._common import CliError
    from louise.config import Config
    from louise.console import ConsolePrinter
    from louise.registry import SessionRegistry

EXIT_ERROR = 1
EXIT_AUTH = 3
EXIT_INTERRUPTED = 130


def tool_kind(value: str) -> str:
    """`--allow` values: a tool kind, checked when the arguments are parsed."""
    from louise.config import TOOL_KINDS

    if value not in TOOL_KINDS:
        raise argparse.ArgumentTypeError(
            f"unknown tool kind {value!r}; use one of: {', '.join(TOOL_KINDS)}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="+", help="the prompt text")
    parser.add_argument("--agent", help="configured Agent (default: default_agent)")
    parser.add_argument("--cwd", help="session working directory (default: current)")
    parser.add_argument("--allow", action="append", default=[], metavar="KIND", type=tool_kind,
                        help="allow this tool kind once, without asking (read, edit, "
                             "execute, …); never remembered")
    parser.add_argument("--no-thoughts", action="store_true", help="hide thought chunks")


def run(args: argparse.Namespace) -> int:
    import anyio

    from louise.commands._common import config_and_agent, existing_directory

    config, agent = config_and_agent(args.agent)
    existing_directory(args.cwd, "--cwd")
    return anyio.run(_chat, config, agent, args)


class _Interrupts:
    """Ctrl-C: the first cancels the turn (or quits before there is one), the second quits."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.quit = False

    async def watch(self, registry: SessionRegistry, scope: anyio.CancelScope) -> None:
        import anyio

        from louise.commands._common import err

        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                if self.session_id is not None and not self.quit:
                    err("\nlouise: cancelling (Ctrl-C again to quit)")
                    session_id, self.session_id = self.session_id, None
                    await registry.cancel(session_id)
                    continue
                self.quit = True
                scope.cancel()


async def _chat(config: Config, agent: str, args: argparse.Namespace) -> int:
    import anyio

    from louise.broker import PermissionDecider
    from louise.console import ConsolePrinter, HeadlessDecider, TtyDecider
    from louise.registry import SessionRegistry

    allowed = frozenset(args.allow)
    decider: PermissionDecider = (
        TtyDecider(allowed=allowed) if TtyDecider.available() else HeadlessDecider(allowed))
    prompt = " ".join(args.prompt)
    interrupts = _Interrupts()
    status = EXIT_ERROR
    async with SessionRegistry(config, decider=decider) as registry:
        printer = ConsolePrinter(registry, show_thoughts=not args.no_thoughts,
                                 show_failures=False)
        registry.subscribe(printer)
        # Failures are caught inside the task group, so none reaches the person wrapped
        # in an exception group.
        async with anyio.create_task_group() as tg:
            tg.start_soon(interrupts.watch, registry, tg.cancel_scope)
            status = await _turn(registry, printer, agent, args.cwd, prompt, interrupts)
            tg.cancel_scope.cancel()
    return EXIT_INTERRUPTED if interrupts.quit else status


async def _turn(registry: SessionRegistry, printer: ConsolePrinter, agent: str,
                cwd: str | None, prompt: str, interrupts: _Interrupts) -> int:
    from louise.acp.errors import AcpError
    from louise.commands._common import CliError, report
    from louise.console import stop_reason_exit_code

    try:
        session = await registry.new_session(agent, cwd)
        printer.session_id = interrupts.session_id = session.session_id
        reason = await registry.prompt(session.session_id, prompt)
    except (AcpError, OSError) as exc:
        printer.finish()
        return report(_failure(registry, agent, exc))
    finally:
        interrupts.session_id = None
    status = stop_reason_exit_code(reason)
    if status == EXIT_ERROR:
        return report(CliError(f"the turn ended with the unknown stop reason {reason!r}"))
    return status


def _failure(registry: SessionRegistry, agent: str, exc: Exception) -> CliError:
    """The `louise: …` line, the stderr tail and the exit status for a failed turn."""
    from louise.acp.errors import ConnectionClosed, RpcError
    from louise.commands._common import CliError
    from louise.registry import describe_rpc_error

    runtime = registry.runtime(agent)
    rpc = exc if isinstance(exc, RpcError) else exc.__cause__
    if isinstance(rpc, RpcError) and rpc.is_auth_required:
        return CliError(describe_rpc_error(rpc, runtime), EXIT_AUTH)
    if isinstance(exc, RpcError):
        message = describe_rpc_error(exc, runtime)
    elif isinstance(exc, ConnectionClosed):
        message = exc.reason + (f" (exit status {exc.exit_status})"
                                if exc.exit_status is not None else "")
    else:
        message = str(exc)
    first, _, rest = message.partition("\n")
    tail = exc.stderr_tail if isinstance(exc, ConnectionClosed) else ""
    if not tail and runtime.connection is not None:
        tail = runtime.connection.process.stderr.tail(2000)
    detail = rest.strip()
    if tail.strip() and tail.strip() not in detail:
        title = f"--- {runtime.command.display()} stderr (tail) ---"
        detail = (detail + "\n" if detail else "") + title + "\n" + tail.strip()
    return CliError(first, EXIT_ERROR, detail)
