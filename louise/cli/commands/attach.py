"""`louise attach [--agent NAME] [--via "CMD"] [--socket PATH]`: an ACP agent command that
is only a pipe to the session host.

Point any ACP client (or louise itself: `setup{ host = "auto" }`, config.toml
`[host] mode = "auto"`) at `louise attach --agent NAME` instead of the agent's command: the
local host (`louise serve`) is started when none runs, and the connection speaks ACP for
that Agent's sessions there. `--via "CMD"` reaches a host through a command's stdio
instead (`ssh devbox louise serve --stdio`, `docker exec -i CONTAINER louise serve
--stdio`), split like a shell would but run without one. The first line sent is the attach
hello (`louise.serve.hello`); the Agent's command goes with it when the front end that
started this process resolved it (`LOUISE_ATTACH_SPEC`; never through `--via`: that
command's host resolves the name in its own configuration). Without `--agent`, no hello:
the host's default Agent.

Exit status: 0 when the front end closed its side; 1 when the host went away first (one
line says so); 2 when the host or the command could not be reached or started.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

    from louise.serve.hello import AgentCommand

from louise.cli.commands.serve import seconds

# Everything heavier than argparse is imported inside `run`.

SPEC_ENV = "LOUISE_ATTACH_SPEC"
FRONT_END_CHOICES = ("nvim", "cli", "acp")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", metavar="NAME",
                        help="the Agent (its name in the host's configuration); default: the "
                             "host's default Agent")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--via", metavar="CMD",
                       help='reach the host through this command\'s stdio, e.g. '
                            '"ssh devbox louise serve --stdio" (run without a shell)')
    where.add_argument("--socket", metavar="PATH",
                       help="the local host's socket (default: in louise's state directory)")
    parser.add_argument("--idle-exit", type=seconds, default=None, metavar="SECONDS",
                        help="a local host this starts ends after this long unused "
                             "(default 600)")
    parser.add_argument("--front-end", choices=FRONT_END_CHOICES, default="acp",
                        help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    import os
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    from louise.cli.commands._common import EXIT_USAGE, CliError, err
    from louise.serve import daemon, pipe
    from louise.serve.hello import FrontEnd, Hello, HelloError, build_hello

    def say(text: str) -> None:
        err(f"louise attach: {text}")

    first = b""
    if args.agent is not None:
        try:
            spec = None if args.via else _spec_from_env(args.agent, os.environ.get(SPEC_ENV))
            first = build_hello(Hello(
                agent=args.agent, agent_command=spec,
                front_end=FrontEnd(name=args.front_end, pid=os.getppid(),
                                   same_machine=args.via is None)))
        except HelloError as exc:
            raise CliError(str(exc), EXIT_USAGE, verb="attach") from None
    front_end = pipe.stdio_channel()
    process: subprocess.Popen[bytes] | None = None
    if args.via:
        try:
            argv = shlex.split(args.via)
        except ValueError as exc:
            raise CliError(f"--via: {exc}", EXIT_USAGE, verb="attach") from None
        if not argv:
            raise CliError("--via: the command is empty", EXIT_USAGE, verb="attach")
        try:
            # Its stderr is ours: ssh's own words reach whoever reads this one's.
            process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       close_fds=True)
        except OSError as exc:
            raise CliError(f"could not run {argv[0]!r}: {exc.strerror or exc}", EXIT_USAGE,
                           verb="attach") from None
        host = pipe.process_channel(process)
    else:
        try:
            sock = daemon.connect_or_start(
                Path(args.socket) if args.socket else None, say=say,
                idle_exit_seconds=(daemon.STARTED_IDLE_EXIT if args.idle_exit is None
                                   else args.idle_exit))
        except daemon.HostUnreachable as exc:
            raise CliError(str(exc), EXIT_USAGE, verb="attach") from None
        host = pipe.socket_channel(sock)
    ended = pipe.pump(front_end, host, first=first)
    if process is not None:
        status = _finish(process)
        if ended is pipe.Ended.HOST:
            say(f"the connection to the session host ended ({args.via!r} exited"
                + (f" with status {status})" if status else ")"))
            return 1
        return 0
    if ended is pipe.Ended.HOST:
        say("the session host closed the connection (it stopped or crashed); "
            "starting the Agent again starts a new host")
        sys.stdout.flush()
        return 1
    return 0


def _spec_from_env(agent: str, text: str | None) -> AgentCommand | None:
    """The agent command the front end resolved (`LOUISE_ATTACH_SPEC`: JSON in the shape
    of the hello's `agentCommand`), checked as the host checks a hello; None without."""
    import json

    from louise.serve.hello import HELLO_METHOD, HELLO_VERSION, HelloError, hello_from_message

    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise HelloError(f"{SPEC_ENV} is not JSON") from None
    hello = hello_from_message({"jsonrpc": "2.0", "method": HELLO_METHOD, "params": {
        "version": HELLO_VERSION, "agent": agent, "agentCommand": value}})
    return None if hello is None else hello.agent_command


def _finish(process: subprocess.Popen[bytes]) -> int | None:
    """The `--via` command's exit status, once its pipes are closed (killed after 5 s)."""
    import subprocess

    try:
        return process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        return None
