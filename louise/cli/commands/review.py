"""`louise review [--session ID] [--turn N] [--cwd DIR] [--list]`: what a turn changed in
this workspace, as a unified diff (coloured on a terminal). Reads louise's checkpoints
(`checkpoints/` in the state directory); starts no agent.

Without `--session`, the session of the newest recorded turn in this directory (or the
nearest parent with checkpoints); without `--turn`, its newest turn. `--list` lists the
recorded turns instead. Exit status: 0; 2 when there is no such turn.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from louise.checkpoints.records import StoreState, TurnRecord
    from louise.checkpoints.review import ReviewFile
    from louise.checkpoints.workspace import WorkspaceStore

COLOURS = {"-": "\x1b[31m", "+": "\x1b[32m", "@": "\x1b[36m", "title": "\x1b[1m",
           "note": "\x1b[33m"}
RESET = "\x1b[0m"


def add_turn_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", metavar="ID",
                        help="the session (AGENT:ID or the agent's id; default: the session "
                             "of the newest recorded turn here)")
    parser.add_argument("--turn", metavar="N", type=int,
                        help="the turn's number in that session (default: its newest)")
    parser.add_argument("--cwd", metavar="DIR",
                        help="the workspace (default: this directory, or the nearest parent "
                             "with checkpoints)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_turn_arguments(parser)
    parser.add_argument("--list", action="store_true", help="list the recorded turns")


def open_store(args: argparse.Namespace, verb: str) -> tuple[WorkspaceStore, StoreState]:
    """The checkpoint store of the workspace the arguments name, and its state."""
    from pathlib import Path

    from louise.checkpoints.git import find_git
    from louise.checkpoints.store import find_workspace
    from louise.checkpoints.workspace import WorkspaceStore
    from louise.cli.commands._common import EXIT_USAGE, CliError, existing_directory, load_config
    from louise.storage import paths

    existing_directory(args.cwd, "--cwd")
    start = Path(os.path.realpath(os.path.expanduser(args.cwd or os.getcwd())))
    root = paths.state_dir() / "checkpoints"
    workspace = find_workspace(root, start)
    if workspace is None:
        raise CliError(f"no checkpoints for {start} or a directory above it (louise records "
                       "them around each turn: [checkpoints] in config.toml)", EXIT_USAGE,
                       verb=verb)
    settings = load_config().checkpoints
    store = WorkspaceStore(root, workspace, settings, find_git())
    return store, store.read_state()


def pick(state: StoreState, args: argparse.Namespace, verb: str) -> TurnRecord:
    from louise.checkpoints.records import NoSuchTurn, pick_turn
    from louise.cli.commands._common import EXIT_USAGE, CliError

    try:
        return pick_turn(state, args.session, args.turn)
    except NoSuchTurn as exc:
        raise CliError(str(exc), EXIT_USAGE, verb=verb) from None


def describe(record: TurnRecord) -> str:
    """A turn on one line: number, session, when, what it changed, its prompt."""
    import time

    from louise.checkpoints.review import summary

    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.started))
    changed = summary([(f.added, f.removed) for f in record.files], record.files_more) \
        if record.after is not None else "unfinished"
    flags = " (undone)" if record.undone else ""
    prompt = f" — {record.prompt}" if record.prompt else ""
    return f"turn {record.number} of {record.session}, {when}: {changed}{flags}{prompt}"


def run(args: argparse.Namespace) -> int:
    from louise.checkpoints.git import GitError
    from louise.cli.commands._common import CliError, out

    store, state = open_store(args, "review")
    if args.list:
        for record in state.turns:
            out(describe(record))
        return 0
    record = pick(state, args, "review")
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    try:
        files = store.review(record)
    except (GitError, OSError) as exc:
        raise CliError(f"the checkpoints cannot be read: {failure(exc)}", verb="review") \
            from None
    for line in review_lines(record, files, state.why, colour):
        print(line)
    return 0


def failure(exc: BaseException) -> str:
    """An error of git or of the disk, for a person."""
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    return str(exc)


def review_lines(record: TurnRecord, files: list[ReviewFile], why: str,
                 colour: bool) -> list[str]:
    """The review as printed: every agent string through the terminal sanitizer."""
    from louise.cli.terminal_text import safe

    def paint(key: str, text: str) -> str:
        return f"{COLOURS[key]}{text}{RESET}" if colour else text

    lines = [paint("title", safe(describe(record)))]
    if record.before is not None and record.before.mode == "files":
        lines.append(paint("note", safe(f"only files named by tool calls and louise's own "
                                        f"writes are tracked here ({why or 'no git'}); "
                                        "changes made by shell commands are not")))
    if record.late:
        lines.append(paint("note", safe("changes reported before the checkpoint was done may "
                                        "be missing: " + ", ".join(record.late))))
    if record.incomplete:
        lines.append(paint("note", safe(record.incomplete)))
    if not files:
        lines.append("no files changed")
    for item in files:
        lines.append("")
        lines.append(paint("title", safe(f"{item.status} {item.path} (+{item.added} "
                                         f"\u2212{item.removed})")))
        if item.note:
            lines.append(paint("note", safe(item.note)))
        for hunk, state in zip(item.hunks, item.states, strict=True):
            for number, text in enumerate(hunk.lines()):
                shown = safe(text)
                if number == 0:
                    tag = "" if state == "applied" else f" ({state} since)"
                    lines.append(paint("@", shown + tag))
                elif text[:1] in "-+":
                    lines.append(paint(text[0], shown))
                else:
                    lines.append(shown)
    return lines
