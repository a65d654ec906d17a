"""`louise chat [--agent NAME] [--cwd DIR] [--allow KIND ...] [--session ID | --continue]
PROMPT` — one turn, streamed, in a new session or one the agent already has (`--session`:
that one; `--continue`: its newest for this directory), so scripts can hold a conversation.

The reply goes to stdout, tool activity and notes to stderr, and so does the wait while
the agent starts and works with nothing to show (console_wait.py). Permissions are asked on the
terminal when there is one; without one they are refused (saying why) unless
`--allow KIND` allows that kind once. Ctrl-C cancels the turn (per the protocol); a
second Ctrl-C quits. Every failure is one `louise: …` line (then the agent's stderr tail
when there is one) and an exit status: 0 end_turn, 1 error, 2 bad usage or config,
3 authentication required, 4 refusal, 5 max_tokens / max_turn_requests, 75 a quota limit
reached (`--wait` waits for its reset instead, `chat_wait.py`), 130 cancelled.
"""

from __future__ import annotations

import argparse
import signal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import anyio

    from louise.cli.commands._common import CliError
    from louise.cli.commands.chat_wait import ParkedCountdown
    from louise.cli.console import ConsolePrinter
    from louise.cli.console_wait import WaitingLine
    from louise.config.model import Config
    from louise.registry import SessionRegistry
    from louise.session import Session

EXIT_ERROR = 1
EXIT_AUTH = 3
EXIT_INTERRUPTED = 130


def tool_kind(value: str) -> str:
    """`--allow` values: a tool kind, checked when the arguments are parsed."""
    from louise.config.sections import TOOL_KINDS

    if value not in TOOL_KINDS:
        raise argparse.ArgumentTypeError(
            f"unknown tool kind {value!r}; use one of: {', '.join(TOOL_KINDS)}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="*", help="the prompt text (optional with --attach)")
    parser.add_argument("--agent", help="configured Agent (default: default_agent)")
    parser.add_argument("--cwd", help="session working directory (default: current)")
    parser.add_argument("--allow", action="append", default=[], metavar="KIND", type=tool_kind,
                        help="allow this tool kind once, without asking (read, edit, "
                             "execute, …); never remembered")
    parser.add_argument("--no-thoughts", action="store_true", help="hide thought chunks")
    parser.add_argument("--wait", action="store_true",
                        help="at a quota limit, wait for its reset and send the prompt again "
                             "(without it: exit status 75)")
    resume = parser.add_mutually_exclusive_group()
    resume.add_argument("--session", metavar="ID",
                        help="take the turn in the agent's session ID (session/resume, else "
                             "session/load)")
    resume.add_argument("--attach", metavar="SESSION",
                        help="show the session host's live session SESSION (what happened "
                             "so far, then its stream), taking the turn there when a prompt "
                             "is given; without one, until Ctrl-C")
    resume.add_argument("--continue", dest="continue_", action="store_true",
                        help="take the turn in the agent's newest session for this directory "
                             "(from session/list)")


def run(args: argparse.Namespace) -> int:
    import anyio

    from louise.cli.commands._common import (
        EXIT_USAGE,
        CliError,
        config_and_agent,
        existing_directory,
    )

    config, agent = config_and_agent(args.agent)
    existing_directory(args.cwd, "--cwd")
    if not args.prompt and args.attach is None:
        raise CliError("give a prompt (only --attach SESSION goes without one)", EXIT_USAGE,
                       verb="chat")
    if args.attach is not None and not config.host.enabled:
        # --attach is about the session host's sessions: through it, whatever [host] says.
        import dataclasses

        config = dataclasses.replace(config, host=dataclasses.replace(config.host, mode="auto"))
    return anyio.run(_chat, config, agent, args)


class _Interrupts:
    """Ctrl-C: the first cancels the turn (or quits before there is one), the second quits."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.quit = False
        self.cancelled = False  # the person cancelled the turn
        self.say: Callable[[str], None] | None = None  # the printer's: `interrupted`
        self.reader_left = False  # stdout's reader left (`| head`): the turn was cancelled

    def output_closed(self, registry: SessionRegistry, tg: anyio.abc.TaskGroup) -> None:
        """stdout's reader left (`louise chat … | head`): the turn is cancelled, as by a
        Ctrl-C but without a word (nobody reads them), so the agent does not work on for
        nobody; following another window's session (`--attach`), the follow ends."""
        self.reader_left = self.cancelled = True
        session_id, self.session_id = self.session_id, None
        if session_id is not None:
            tg.start_soon(registry.cancel, session_id)
        else:
            tg.cancel_scope.cancel()

    async def watch(self, registry: SessionRegistry, scope: anyio.CancelScope) -> None:
        import anyio

        from louise.cli.commands._common import err

        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                if self.session_id is not None and not self.quit:
                    (self.say or err)("louise: cancelling (Ctrl-C again to quit)")
                    session_id, self.session_id = self.session_id, None
                    self.cancelled = True
                    await registry.cancel(session_id)
                    continue
                self.quit = True
                scope.cancel()


async def _chat(config: Config, agent: str, args: argparse.Namespace) -> int:
    import anyio

    from louise.cli.console import (
        TTY_USE,
        BystanderDecider,
        ConsolePrinter,
        HeadlessDecider,
        TtyDecider,
        terminal_frame,
    )
    from louise.cli.console_questions import TtyElicitor, TtySignIn
    from louise.permissions.broker import PermissionDecider
    from louise.registry import SessionRegistry

    allowed = frozenset(args.allow)
    tty = TtyDecider.available()
    decider: PermissionDecider = (
        TtyDecider(allowed=allowed) if tty
        else BystanderDecider(allowed) if args.attach is not None
        else HeadlessDecider(allowed))
    prompt = " ".join(args.prompt)
    interrupts = _Interrupts()
    status = EXIT_ERROR
    # On a terminal, an agent that requires authentication offers its sign-in methods,
    # and its questions (elicitation) are asked; without one neither is advertised.
    checkpoints = None
    if config.checkpoints.enabled:  # each turn's changes: louise review, louise undo
        from louise.checkpoints.service import Checkpoints

        def waiting() -> None:
            from louise.cli.commands._common import err

            err("louise: finishing the workspace's checkpoint (the first one copies the "
                "workspace, once; [checkpoints] enabled = false turns checkpoints off) …")

        checkpoints = Checkpoints(config.checkpoints, on_wait=waiting)
    async with SessionRegistry(config, decider=decider,
                               sign_in=TtySignIn() if tty else None,
                               elicitor=TtyElicitor() if tty else None,
                               checkpoints=checkpoints,
                               read_pace=terminal_frame, merge_text_chunks=True,
                               park_on_quota=args.wait) as registry:
        printer = ConsolePrinter(registry, show_thoughts=not args.no_thoughts,
                                 show_failures=False)
        registry.subscribe(printer)
        interrupts.say = printer.interrupted
        from louise.cli.commands.chat_wait import ParkedCountdown

        parked = ParkedCountdown(None)
        registry.subscribe(parked)
        printer.waiting = waiting_line(registry, printer, parked)
        # Failures are caught inside the task group, so none reaches the person wrapped
        # in an exception group.
        async with anyio.create_task_group() as tg:
            printer.on_output_closed = lambda: interrupts.output_closed(registry, tg)
            tg.start_soon(interrupts.watch, registry, tg.cancel_scope)
            tg.start_soon(parked.run)
            tg.start_soon(printer.waiting.run)
            try:
                status = await _turn(registry, printer, agent, args, prompt, interrupts,
                                     parked)
            finally:
                printer.waiting.end()
                printer.finish()  # Ctrl-C or a detach mid-line: the last line ends too
                TTY_USE.before_say = None
            tg.cancel_scope.cancel()
    if interrupts.reader_left:
        return 0  # `louise chat … | head`: the reader has what it wanted (see main.py)
    return EXIT_INTERRUPTED if interrupts.quit else status


def waiting_line(registry: SessionRegistry, printer: ConsolePrinter,
                 parked: ParkedCountdown) -> WaitingLine:
    """The wait shown on stderr while the agent starts and the turn runs (never over an
    unfinished line, a question on the terminal, a permission or a parked turn)."""
    import sys

    from louise.cli.console import TTY_USE
    from louise.cli.console_wait import WaitingLine

    def can_draw() -> bool:
        session_id = printer.session_id
        waiting_permission = session_id is not None and any(
            session.session_id == session_id and session.status == "waiting_permission"
            for session in registry.sessions())
        return not (printer.line_open or TTY_USE.in_use or waiting_permission
                    or parked.until is not None)

    line = WaitingLine(sys.stderr, sys.stderr.isatty(), can_draw)
    TTY_USE.before_say = line.erase
    return line


async def _turn(registry: SessionRegistry, printer: ConsolePrinter, agent: str,
                args: argparse.Namespace, prompt: str, interrupts: _Interrupts,
                parked: ParkedCountdown) -> int:
    from louise.acp.errors import AcpError
    from louise.cli.commands._common import CliError, err, report
    from louise.cli.commands.chat_wait import refused_failure
    from louise.cli.console import stop_reason_exit_code
    from louise.registry.governor import QuotaRefused

    try:
        session_id: str | None = args.session
        if args.continue_:
            session_id = await _newest_session(registry, agent, args.cwd)
        waiting = printer.waiting
        if waiting is not None:
            waiting.begin(f"starting {agent}")
        if args.attach is not None:
            session = await _attach_live(registry, printer, agent, args.attach, args.cwd)
            if not prompt:
                if waiting is not None:
                    waiting.end()
                return await _follow(registry, session.session_id)
        elif session_id is None:
            session = await registry.with_sign_in(
                agent, lambda: registry.new_session(agent, args.cwd))
        else:
            session = await _attach(registry, agent, session_id, args.cwd)
        printer.session_id = interrupts.session_id = session.session_id
        parked.session_id = session.session_id
        if interrupts.reader_left:  # before the prompt was sent: it is not
            return 0
        if waiting is not None:
            waiting.begin("working")
        reason = await registry.with_sign_in(
            agent, lambda: registry.prompt(session.session_id, prompt))
    except QuotaRefused as exc:
        if printer.waiting is not None:
            printer.waiting.end()
        printer.finish()
        return report(refused_failure(agent, exc, registry.clock()))
    except (AcpError, OSError) as exc:
        if printer.waiting is not None:
            printer.waiting.end()
        printer.finish()
        return report(_failure(registry, agent, exc))
    finally:
        interrupts.session_id = None
    if printer.waiting is not None:
        printer.waiting.end()
    status = stop_reason_exit_code(reason)
    if reason == "cancelled" and not interrupts.cancelled:
        # Not a Ctrl-C: codex-acp, for one, ends its turn when a permission is refused
        # (its only reject option is "No, and tell Codex what to do differently").
        err(f"louise: {agent} ended the turn itself as cancelled (louise did not cancel it; "
            "an agent may stop when a permission is refused)")
    if status == EXIT_ERROR:
        return report(CliError(f"the turn ended with the unknown stop reason {reason!r}"))
    return status


async def _attach_live(registry: SessionRegistry, printer: ConsolePrinter, agent: str,
                       session_id: str, cwd: str | None) -> Session:
    """The host's session `session_id`, loaded: the host replays what happened so far once,
    printed whole, then the live stream."""
    from louise.registry.records import session_key

    session = await registry.load_session(agent, session_id, cwd)
    printer.history(session)
    printer.session_id = session_key(agent, session_id)
    printer.show_prompts = True  # the other front ends' prompts are part of the stream
    return session


async def _follow(registry: SessionRegistry, key: str) -> int:
    """The session's stream, until the connection to the host ends (1) or Ctrl-C."""
    import anyio

    from louise.cli.commands._common import CliError, report

    ended = anyio.Event()

    def watch(_event: object) -> None:
        if registry.session(key).status in ("error", "closed"):
            ended.set()

    registry.subscribe(watch)
    watch(None)
    await ended.wait()
    session = registry.session(key)
    return report(CliError(session.error or "the session ended at the host"))


async def _attach(registry: SessionRegistry, agent: str, session_id: str,
                  cwd: str | None) -> Session:
    """The agent's session `session_id`: resumed where the agent can (nothing replayed),
    else loaded (its replay fills the model quietly: nothing of it is printed)."""
    from louise.registry.records import RegistryError

    connection = await registry.connection(agent)
    init = connection.initialized
    if init is not None and init.session_capability("resume"):
        return await registry.resume_session(agent, session_id, cwd)
    if init is not None and init.load_session:
        return await registry.load_session(agent, session_id, cwd)
    raise RegistryError(f"{agent} cannot continue a session (it has neither session/resume "
                        "nor session/load)")


async def _newest_session(registry: SessionRegistry, agent: str, cwd: str | None) -> str:
    """The id of the agent's most recently updated session in `cwd` (session/list)."""
    import os

    from louise.acp.connection import Unsupported
    from louise.registry.records import RegistryError

    where = os.path.abspath(os.path.expanduser(cwd or os.getcwd()))
    try:
        infos = await registry.list_sessions(agent, where)
    except Unsupported as exc:
        raise RegistryError(f"{exc}, so --continue cannot find its sessions; use "
                            "--session ID") from exc
    mine = [info for info in infos if isinstance(info.get("sessionId"), str)
            and os.path.abspath(str(info.get("cwd") or where)) == where]
    if not mine:
        raise RegistryError(f"{agent} has no session in {where} to continue; start one "
                            "without --continue")
    newest = max(enumerate(mine), key=lambda pair: (_updated(pair[1]), -pair[0]))[1]
    return str(newest["sessionId"])


def _updated(info: dict[str, Any]) -> float:
    """A SessionInfo's `updatedAt` as a timestamp (0 when missing or unreadable)."""
    from datetime import datetime

    value = info.get("updatedAt")
    if not isinstance(value, str):
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _failure(registry: SessionRegistry, agent: str, exc: Exception) -> CliError:
    """The `louise: …` line, the stderr tail and the exit status for a failed turn."""
    from louise.acp.errors import ConnectionClosed, RpcError
    from louise.cli.commands._common import CliError
    from louise.registry.agents import host_lost_message
    from louise.registry.error_hints import with_hint
    from louise.registry.records import describe_rpc_error

    runtime = registry.runtime(agent)
    rpc = exc if isinstance(exc, RpcError) else exc.__cause__
    if isinstance(rpc, RpcError) and rpc.is_auth_required:
        return CliError(describe_rpc_error(rpc, runtime), EXIT_AUTH)
    if isinstance(exc, RpcError):
        message = describe_rpc_error(exc, runtime)
    elif isinstance(exc, ConnectionClosed) and runtime.launch is not None:
        # Through the session host: one line, `louise attach`'s own (its stderr is that).
        return CliError(host_lost_message(exc.stderr_tail or runtime.last_stderr), EXIT_ERROR)
    elif isinstance(exc, ConnectionClosed):
        message = with_hint(exc.reason + (f" (exit status {exc.exit_status})"
                                          if exc.exit_status is not None else ""),
                            agent, exc.stderr_tail)
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
