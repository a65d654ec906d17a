"""`louise export SESSION [-o FILE]`: a recorded session's transcript as Markdown.

SESSION is a session id, a unique prefix of one, `AGENT:SESSION`, or a transcript file.
Reads only the transcript (`transcripts/` in the state directory); starts no agent.
Exit status: 0; 2 for an unknown or ambiguous session; 1 when a file cannot be read or written.
"""

from __future__ import annotations

import argparse
import os
import sys

# Everything heavier than argparse is imported inside `run`: the CLI imports every verb
# module just to build its parser.


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "session", metavar="SESSION",
        help="a session id, a unique prefix of one, AGENT:SESSION, or a transcript file")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the Markdown here instead of to stdout ('-' for stdout)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from louise.cli.commands._common import EXIT_USAGE, CliError, err
    from louise.storage import paths
    from louise.storage.transcript import load, to_markdown
    from louise.storage.transcript_files import TranscriptError, resolve

    try:
        path = resolve(args.session, paths.state_dir())
    except (TranscriptError, ValueError) as exc:  # ValueError: e.g. a NUL in the argument
        raise CliError(str(exc), EXIT_USAGE, verb="export") from None
    try:
        result = load(path)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CliError(f"cannot read {path}: {reason}", verb="export") from None
    if result.skipped_lines:
        err(f"louise export: skipped {result.skipped_lines} unreadable line(s) of {path}")
    markdown = to_markdown(result.session)
    if args.output and args.output != "-":
        try:
            # To a file: byte-exact, whatever the transcript holds.
            Path(args.output).expanduser().write_bytes(markdown.encode("utf-8"))
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise CliError(f"cannot write {args.output}: {reason}", verb="export") from None
        return 0
    if sys.stdout.isatty():
        # To a terminal: nothing the transcript holds may act on it.
        from louise.cli.terminal_text import safe

        markdown = safe(markdown, multiline=True)
    return _write_stdout(markdown.encode("utf-8"))


def _write_stdout(data: bytes) -> int:
    # Bytes, so the Markdown is UTF-8 whatever the terminal's locale (as with -o FILE).
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): no traceback, and none at interpreter exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
