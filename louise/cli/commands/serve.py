"""`louise serve [--idle-exit SECONDS] [--socket PATH]` and `louise serve --stdio`.

Without `--stdio`: the session host in the foreground, listening on its socket in louise's
state directory (or `--socket`), until it has had no front end and no working session for
`--idle-exit` seconds (default: runs until stopped). Front ends reach it with
`louise attach`, which starts one itself when none runs.

With `--stdio`: this process's stdio becomes a connection to the local host (started when
none runs): the far end of `louise attach --via "ssh HOST louise serve --stdio"`. Bytes
pass unchanged both ways; the attach hello comes from the front end.

Exit status: 0; 1 when the host went away under a `--stdio` connection; 2 when the host
could not be started or reached.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

# Everything heavier than argparse is imported inside `run`.

def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"a number of seconds, 0 or more, not {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true",
                        help="connect this process's stdio to the local host (started when "
                             "none runs): the remote end of `louise attach --via`")
    parser.add_argument("--idle-exit", type=seconds, default=None, metavar="SECONDS",
                        help="end after this long with no front end attached and no session "
                             "working (default: never; with --stdio, for a host it starts: 600)")
    parser.add_argument("--socket", metavar="PATH",
                        help="the socket (default: host/host.sock in louise's state directory)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from louise.cli.commands._common import EXIT_USAGE, CliError, err
    from louise.serve import daemon, pipe

    socket_path = Path(args.socket) if args.socket else None
    if args.stdio:
        idle = args.idle_exit if args.idle_exit is not None else daemon.STARTED_IDLE_EXIT
        try:
            sock = daemon.connect_or_start(
                socket_path, idle_exit_seconds=idle,
                say=lambda text: err(f"louise serve: {text}"))
        except daemon.HostUnreachable as exc:
            raise CliError(str(exc), EXIT_USAGE, verb="serve") from None
        ended = pipe.pump(pipe.stdio_channel(), pipe.socket_channel(sock))
        if ended is pipe.Ended.HOST:
            err("louise serve: the session host closed the connection (it stopped or "
                "crashed); the next connection starts a new one")
            return 1
        return 0
    return _foreground(socket_path, args.idle_exit)


def _foreground(socket_path: Path | None, idle_exit: float | None) -> int:
    import math

    from louise.storage import first_use

    first_use.import_asyncio_without_ssl()  # before louise.serve.run: no TLS, ever
    first_use.pydantic_without_extras_on_first_use()
    from louise.cli.commands._common import EXIT_USAGE, CliError, load_config
    from louise.serve import paths
    from louise.serve.run import HostError, run_host

    try:
        target = socket_path if socket_path is not None else paths.socket_path()
    except OSError as exc:
        raise CliError(f"louise's state directory is not usable: {exc}", EXIT_USAGE,
                       verb="serve") from None
    try:
        return run_host(target, idle_exit_seconds=math.inf if idle_exit is None else idle_exit,
                        config=load_config())
    except HostError as exc:
        raise CliError(str(exc), EXIT_USAGE, verb="serve") from None
