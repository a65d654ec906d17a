"""The gate for side effects nobody approved (`[permissions] gate_unasked`, on by default).

An `fs/write_text_file` or `terminal/create` that the agent did not precede, in the same
turn, with a permission request that was approved (by the person, a configured rule or a
remembered choice) for that file or that command is asked for first, through the broker
like any request: rules and remembered choices apply, the prompt shows the write's diff or
the command, and anything but an allow refuses it. An agent that asks first is never
asked about again; a file or command the person refused this turn is refused at once.
What counts as the same file or command: `TurnApprovals` (and `gate_commands.py`). A mode
the person picked in louise that approves edits (or everything) is their approval while
the session stays in it (`person_modes.py`).

`TurnApprovals` is what one turn's permission answers approved and refused; it is pure.
"""

from __future__ import annotations

import itertools
import os
import shlex
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from louise.acp.errors import RpcError
from louise.broker import PermissionRequest
from louise.registry.gate_commands import (
    CommandKey,
    requested_command,
    run_directory,
    terminal_command,
)
from louise.registry.person_modes import EDIT, EXECUTE, person_approves

if TYPE_CHECKING:
    from louise.registry.records import LiveSession
    from louise.registry.turns import Turns

REFUSED = -32001  # a person's (or a rule's) refusal, distinct from protocol errors
MAX_APPROVED_TARGETS = 1_000  # per turn; past it, older answers are forgotten (asks again)
MAX_DIFF_CHARS = 1024 * 1024  # bigger writes show as "write N lines", not a diff
# Only an answer about one of these kinds is about writing a file (an approval to run a
# command, read or fetch never covers a write, whatever files it names).
WRITE_KINDS = frozenset({"edit", "delete", "move"})
GATE_OPTIONS: tuple[dict[str, str], ...] = (
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
)

# What an answer about a file says: the file as the request named it (absolute) and
# where it really was when answered (symlinks resolved).
@dataclass(frozen=True, slots=True)
class Target:
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


class UnaskedGate:
    """Asks before a write or a command nobody approved this turn (see the module)."""

    def __init__(self, turns: Turns, *, enabled: bool) -> None:
        self._turns = turns
        self.enabled = enabled

    async def write(self, live: LiveSession, raw_path: str, resolved: Path, content: str,
                    old_text: Callable[[], Awaitable[str | None]]) -> None:
        """Return when a write to `resolved` (the file the write will really open, every
        link followed) may go ahead; raise RpcError (REFUSED) when not."""
        if not self.enabled:
            return
        if person_approves(live.person_mode, live.model.current_mode, EDIT):
            return  # the person picked a mode that approves edits (person_modes.py)
        approvals = live.approvals.for_turn(live.model.turn)
        # `resolved` is where the write will land (the caller writes there or nowhere).
        decision = approvals.path_decision(absolute_paths([raw_path], live.cwd),
                                           str(resolved))
        if decision is True:
            return
        shown = str(resolved)
        if decision is False:
            raise RpcError(REFUSED, f"writing {shown} was refused in this turn; "
                                    "the file was not changed")
        old = await old_text()
        diff: dict[str, Any]
        if old is not None and len(old) + len(content) > MAX_DIFF_CHARS:
            old = None
        if old is None and len(content) > MAX_DIFF_CHARS:
            diff = {"type": "diff", "path": shown, "derived": "write", "newText": content}
        else:
            diff = {"type": "diff", "path": shown, "oldText": old, "newText": content}
        tool_call = {
            "title": f"Write {_relative(shown, live.cwd)} (the agent did not ask)",
            "kind": "edit", "status": "pending", "content": [diff],
            "locations": [{"path": shown}], "rawInput": {"path": shown},
        }
        if not await self._ask(live, tool_call):
            raise RpcError(REFUSED, f"writing {shown} was not allowed (the agent did not ask "
                                    "first, and louise asked); the file was not changed")

    async def terminal(self, live: LiveSession, params: Mapping[str, Any]) -> None:
        """Return when `terminal/create` may run its command; raise RpcError when not."""
        if not self.enabled:
            return
        command = params.get("command")
        args = params.get("args")
        if not isinstance(command, str) or not command:
            raise RpcError.invalid_params("command must be a non-empty string")
        if args is None:
            args = []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise RpcError.invalid_params("args must be a list of strings")
        argv = [command, *args]
        if person_approves(live.person_mode, live.model.current_mode, EXECUTE):
            return  # the person picked a mode that approves commands too
        key = terminal_command(argv, params.get("env"), params.get("cwd"), live.cwd)
        approvals = live.approvals.for_turn(live.model.turn)
        decision = approvals.command_decision(key) if key is not None else None
        shown = shlex.join(argv)
        if decision is True:
            return
        if decision is False:
            raise RpcError(REFUSED, f"running `{shown}` was refused in this turn")
        # All of what will run is shown: the command with its environment (the broker
        # puts it first), and the directory when it is not the session's.
        raw_input: dict[str, Any] = {"command": argv}
        cwd = params.get("cwd")
        where = ""
        if isinstance(cwd, str):
            raw_input["cwd"] = cwd
            if key is None or key.cwd != run_directory(None, live.cwd):
                where = f" in {cwd}"
        env = params.get("env")
        if env:
            raw_input["env"] = env
        tool_call = {"title": f"Run `{shown}`{where} (the agent did not ask)",
                     "kind": "execute", "status": "pending", "rawInput": raw_input}
        if not await self._ask(live, tool_call):
            raise RpcError(REFUSED, f"running `{shown}` was not allowed (the agent did not "
                                    "ask first, and louise asked)")

    async def _ask(self, live: LiveSession, tool_call: dict[str, Any]) -> bool:
        params = {"sessionId": live.acp_id, "toolCall": tool_call,
                  "options": [dict(option) for option in GATE_OPTIONS]}
        request = self._turns.request_for(live, params, None)
        outcome = await self._turns.ask(live, request)
        chosen = outcome.get("outcome", {})
        if chosen.get("outcome") != "selected":
            return False
        kind = request.kind_of(str(chosen.get("optionId")))
        return kind in ("allow_once", "allow_always")


def _relative(path: str, cwd: str) -> str:
    prefix = cwd.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path
