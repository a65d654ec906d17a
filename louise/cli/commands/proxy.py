"""`louise proxy -- AGENT [ARGS…]`: run an ACP agent behind a proxy that adds account limits.

Point any ACP client at `louise proxy -- claude-agent-acp` instead of `claude-agent-acp`:
every message passes unchanged, and the client also gets the account-limits v1 extension
(`io.github.euri10.louiselm` accountLimits), translated from the agent's own rate-limit
signals. A message longer than `--max-message-bytes` (default 64 MiB) is not passed on;
a request gets an error answer instead, to the side that sent it. Exit status: the
agent's, or 2 when it cannot be started.
"""

from __future__ import annotations

import argparse

# Everything heavier than argparse is imported inside `run`.


def _byte_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}") from None
    if value < 1024:
        raise argparse.ArgumentTypeError(f"at least 1024 bytes, not {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-message-bytes", type=_byte_count, default=None,
        metavar="BYTES",
        help="the longest message passed on either way (default 64 MiB); a longer request "
             "is answered with an error",
    )
    parser.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="-- AGENT [ARGS…]",
        help="the agent command and its arguments (after --)",
    )


def run(args: argparse.Namespace) -> int:
    import logging
    import sys

    from louise.proxy.run import run_proxy

    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("louise proxy: name the agent command: louise proxy -- AGENT [ARGS…]",
              file=sys.stderr)
        return 2
    # Our stdout is the protocol: diagnostics go to stderr only, one line each.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="louise proxy: %(message)s")
    client_in, client_out = sys.stdin.fileno(), sys.stdout.fileno()
    try:
        if args.max_message_bytes is None:  # the framing's default (64 MiB)
            return run_proxy(argv, client_in, client_out)
        return run_proxy(argv, client_in, client_out, max_line_bytes=args.max_message_bytes)
    except OSError as exc:
        print(f"louise proxy: {exc}", file=sys.stderr)
        return 2
