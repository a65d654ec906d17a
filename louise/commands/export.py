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

    from louise import paths
    from louise.transcript import TranscriptError, load, resolve, to_markdown

    try:
        path = resolve(args.session, paths.state_dir())
    except TranscriptError as exc:
        print(f"louise export: {exc}", file=sys.stderr)
        return 2
    try:
        result = load(path)
    except OSError as exc:
        print(f"louise export: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if result.skipped_lines:
        print(f"louise export: skipped {result.skipped_lines} unreadable line(s) of {path}",
              file=sys.stderr)
    data = to_markdown(result.session).encode("utf-8")
    if args.output and args.output != "-":
        try:
            Path(args.output).expanduser().write_bytes(data)
        except OSError as exc:
            print(f"louise export: cannot write {args.output}: {exc.strerror or exc}",
                  file=sys.stderr)
            return 1
        return 0
    return _write_stdout(data)


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
