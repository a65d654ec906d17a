"""`louise undo [--session ID] [--turn N] [--cwd DIR] [--yes]`: the workspace's files back
as they were before that turn (default: the newest turn of the newest session here), every
later turn's changes taken back first. What it will do is printed first; on a terminal it
asks, without one it does nothing unless `--yes`.

Changes made outside the turns (your own edits, another tool's) stay; a file changed since
where a turn changed it too is a conflict: listed, and left as it is. Files that were not
copied (large or binary) cannot be restored. Commands a turn ran that had effects outside
the workspace (installs, network, databases) are not taken back. The agent still
remembers the turns: the last line says how to tell it.

Exit status: 0 done (or nothing to do); 1 some files were left as they are (conflicts);
2 no such turn, or no terminal to ask on and no --yes; 4 you said no.
"""

from __future__ import annotations

import argparse
import sys

from louise.cli.commands.review import add_turn_arguments

EXIT_REFUSED = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_turn_arguments(parser)
    parser.add_argument("--yes", action="store_true",
                        help="undo without asking (required without a terminal)")


def run(args: argparse.Namespace) -> int:
    from louise.checkpoints.git import GitError
    from louise.cli.commands._common import CliError
    from louise.cli.commands.review import failure

    try:
        return _undo(args)
    except (GitError, OSError) as exc:
        raise CliError(f"nothing more was done: {failure(exc)}", verb="undo") from None


def _undo(args: argparse.Namespace) -> int:
    from louise.cli.commands._common import EXIT_USAGE, CliError, err, out
    from louise.cli.commands.review import open_store, pick

    store, state = open_store(args, "undo")
    record = pick(state, args, "undo")
    if record.undone:
        raise CliError(f"turn {record.number} of {record.session} is already undone",
                       EXIT_USAGE, verb="undo")
    plan = store.undo_plan(state, record.seq)
    for line in plan.lines():
        out(line)
    if not plan.writes:
        out("nothing to restore")
        return 1 if plan.problems else 0
    if not args.yes:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise CliError("no terminal to ask on: run again with --yes to undo", EXIT_USAGE,
                           verb="undo")
        try:
            answer = input(f"Restore {len(plan.writes)} file(s)? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            err("louise undo: nothing was changed")
            return EXIT_REFUSED
    try:
        done = store.undo(record.seq, [p.path for p in plan.writes])
    except ValueError as exc:
        raise CliError(str(exc), 1, verb="undo") from None
    out(f"restored {len(done.writes)} file(s)")
    for problem in done.problems:
        err(f"louise undo: {problem.path} left as it is: {problem.problem}")
    names = ", ".join(p.path for p in done.writes[:5])
    agent = record.agent
    out(f"{agent} still remembers these turns. To tell it: louise chat --agent {agent} "
        f"--session {record.acp_id} 'I reverted your changes to {names}: they are back as "
        "they were before.'")
    return 1 if done.problems else 0
