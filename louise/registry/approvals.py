"""What one turn's permission answers approved and refused, for the gate (`gate.py`):
the files (as named, and where they really were when answered) and the commands (as the
shell will see them, `gate_commands.py`). Pure, but for `resolved_targets`, which reads
links."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from louise.permissions.broker import PermissionRequest
from louise.registry.gate_commands import CommandKey, requested_command

MAX_APPROVED_TARGETS = 1_000  # per turn; past it, older answers are forgotten (asks again)
# Only an answer about one of these kinds is about writing a file (an approval to run a
# command, read or fetch never covers a write, whatever files it names).
WRITE_KINDS = frozenset({"edit", "delete", "move"})


@dataclass(frozen=True, slots=True)
class Target:
    """What an answer about a file says: the file as the request named it (absolute) and
    where it really was when answered (symlinks resolved)."""

    given: str
    resolved: str


@dataclass
class TurnApprovals:
    """The files and commands one turn's permission answers allowed (True) or refused
    (False); the latest answer for a target wins. Keyed by the turn number: a new turn
    starts empty.

    Only an edit, delete or move answer is about writing a file, and an allow covers the
    file where it really was when the person answered, not a name that leads elsewhere
    now. A command is covered when the same command (as the shell will see it) runs with
    the same environment in the same directory; a refusal refuses the command whatever
    its environment or directory."""

    turn: int = -1
    paths: dict[str, bool] = field(default_factory=dict)  # absolute, normalized
    commands: dict[CommandKey, bool] = field(default_factory=dict)

    def for_turn(self, turn: int) -> TurnApprovals:
        if turn != self.turn:
            self.turn = turn
            self.paths.clear()
            self.commands.clear()
        return self

    def record(self, request: PermissionRequest, allowed: bool, targets: Iterable[Target],
               cwd: str) -> None:
        """An answer to `request`, a request of a session whose directory is `cwd`;
        `targets` are its files (`resolved_targets`)."""
        if request.kind in WRITE_KINDS:
            for target in targets:
                if allowed:  # a refusal of the name before does not outlive this allow
                    self.paths.pop(target.given, None)
                    _put(self.paths, target.resolved, True)
                else:
                    _put(self.paths, target.given, False)
                    _put(self.paths, target.resolved, False)
        key = requested_command(request.tool_call.get("rawInput"), cwd)
        if key is not None:
            _put(self.commands, key, allowed)

    def path_decision(self, given: Iterable[str], resolved: str) -> bool | None:
        """True: an approval covers `resolved`, the file the write will really open;
        False: the file was refused this turn, under any of its names (a refusal wins);
        None: nobody was asked."""
        for candidate in (*given, resolved):
            if self.paths.get(candidate) is False:
                return False
        return True if self.paths.get(resolved) is True else None

    def command_decision(self, key: CommandKey) -> bool | None:
        """The latest answer that applies: a refusal of the same command, or an approval
        of the same command, environment and directory."""
        for known, allowed in reversed(self.commands.items()):
            if known.form != key.form:
                continue
            if not allowed:
                return False
            if known == key and key.complete:
                return True
        return None


def _put(table: dict[Any, bool], key: Any, allowed: bool) -> None:
    table.pop(key, None)
    table[key] = allowed
    while len(table) > MAX_APPROVED_TARGETS:
        table.pop(next(iter(table)))


def absolute_paths(paths: Iterable[str], cwd: str) -> list[str]:
    """Agent-given paths made absolute (relative ones against the session's cwd) and
    normalized; pure."""
    out: list[str] = []
    for path in paths:
        if not path or "\x00" in path:
            continue
        joined = path if os.path.isabs(path) else os.path.join(cwd, path)
        out.append(os.path.normpath(joined))
    return list(dict.fromkeys(out))


def resolved_targets(paths: Iterable[str]) -> list[Target]:
    """Each path, and where it really is now (symlinks resolved). Blocking (reads links).
    A path that cannot be resolved stands for itself: a write is covered only when it
    lands on that very name, not through a link. At most MAX_APPROVED_TARGETS (a turn
    remembers no more): past them, a write is asked for."""
    out: list[Target] = []
    for path in itertools.islice(paths, MAX_APPROVED_TARGETS):
        try:
            resolved = os.path.realpath(path)
        except (OSError, ValueError):
            resolved = path
        out.append(Target(path, resolved))
    return list(dict.fromkeys(out))
