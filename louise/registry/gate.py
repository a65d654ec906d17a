"""The gate for side effects nobody approved (`[permissions] gate_unasked`, on by default).

An `fs/write_text_file` or `terminal/create` that the agent did not precede, in the same
turn, with a permission request that was approved (by the person, a configured rule or a
remembered choice) for that file or that command is asked for first, through the broker
like any request: rules and remembered choices apply, the prompt shows the write's diff or
the command, and anything but an allow refuses it. An agent that asks first is never
asked about again; a file or command the person refused this turn is refused at once.

`TurnApprovals` is what one turn's permission answers approved and refused; it is pure.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from louise.acp.errors import RpcError
from louise.broker import PermissionRequest

if TYPE_CHECKING:
    from louise.registry.records import LiveSession
    from louise.registry.turns import Turns

REFUSED = -32001  # a person's (or a rule's) refusal, distinct from protocol errors
MAX_APPROVED_TARGETS = 1_000  # per turn; past it, older answers are forgotten (asks again)
MAX_DIFF_CHARS = 1024 * 1024  # bigger writes show as "write N lines", not a diff
# An approval of these kinds is about looking, not changing: it never covers a write.
LOOKING_KINDS = frozenset({"read", "search", "think", "fetch", "switch_mode"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
GATE_OPTIONS: tuple[dict[str, str], ...] = (
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
)

Command = tuple[str, ...]


def split_command(text: str) -> Command:
    """A command line as words (shell quoting understood); unsplittable text stays whole."""
    try:
        words = shlex.split(text)
    except ValueError:
        return (text,)
    return tuple(words) or (text,)


def command_words(argv: Sequence[str]) -> Command:
    """What a command runs, as words: `sh -c "a b"` (any usual shell) is `a b`, so that an
    agent that asked for `a b` and runs it through a shell is not asked again."""
    if len(argv) == 3 and os.path.basename(argv[0]) in SHELLS \
            and argv[1] in ("-c", "-lc", "-ic"):
        return split_command(argv[2])
    return tuple(argv)


def approved_command(request: PermissionRequest) -> Command | None:
    if request.command is None or not request.command.strip():
        return None
    return command_words(split_command(request.command))


@dataclass
class TurnApprovals:
    """The files and commands one turn's permission answers allowed (True) or refused
    (False); the latest answer for a target wins. Keyed by the turn number: a new turn
    starts empty."""

    turn: int = -1
    paths: dict[str, bool] = field(default_factory=dict)  # absolute, normalized
    commands: dict[Command, bool] = field(default_factory=dict)

    def for_turn(self, turn: int) -> TurnApprovals:
        if turn != self.turn:
            self.turn = turn
            self.paths.clear()
            self.commands.clear()
        return self

    def record(self, request: PermissionRequest, allowed: bool,
               paths: Iterable[str]) -> None:
        """An answer to `request`; `paths` are its paths, absolute (and resolved ones too).
        An answer about reading a file says nothing about writing it."""
        if request.kind not in LOOKING_KINDS:
            for path in paths:
                _put(self.paths, path, allowed)
        words = approved_command(request)
        if words is not None:
            _put(self.commands, words, allowed)

    def path_decision(self, candidates: Iterable[str]) -> bool | None:
        """True: an approval covers one of the spellings of the path; False: the path was
        refused this turn (a refusal of any spelling wins); None: nobody was asked."""
        found: bool | None = None
        for candidate in candidates:
            decision = self.paths.get(candidate)
            if decision is False:
                return False
            if decision is True:
                found = True
        return found

    def command_decision(self, words: Command) -> bool | None:
        return self.commands.get(words)


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


def spellings(paths: Iterable[str]) -> list[str]:
    """Each path as given and with its symlinks resolved. Blocking (reads links)."""
    out: list[str] = []
    for path in paths:
        out.append(path)
        try:
            out.append(os.path.realpath(path))
        except (OSError, ValueError):
            continue
    return list(dict.fromkeys(out))


class UnaskedGate:
    """Asks before a write or a command nobody approved this turn (see the module)."""

    def __init__(self, turns: Turns, *, enabled: bool) -> None:
        self._turns = turns
        self.enabled = enabled

    async def write(self, live: LiveSession, raw_path: str, resolved: Path, content: str,
                    old_text: Callable[[], Awaitable[str | None]]) -> None:
        """Return when the write may go ahead; raise RpcError (REFUSED) when not."""
        if not self.enabled:
            return
        import anyio.to_thread

        model = live.model
        approvals = live.approvals.for_turn(model.turn)
        given = absolute_paths([raw_path], live.cwd)
        candidates = await anyio.to_thread.run_sync(spellings, [*given, str(resolved)])
        decision = approvals.path_decision(candidates)
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
        approvals = live.approvals.for_turn(live.model.turn)
        decision = approvals.command_decision(command_words(argv))
        shown = shlex.join(argv)
        if decision is True:
            return
        if decision is False:
            raise RpcError(REFUSED, f"running `{shown}` was refused in this turn")
        raw_input: dict[str, Any] = {"command": argv}
        cwd = params.get("cwd")
        if isinstance(cwd, str):
            raw_input["cwd"] = cwd
        env = params.get("env")
        if isinstance(env, list) and env:
            raw_input["env"] = env[:50]
        tool_call = {"title": f"Run `{shown}` (the agent did not ask)", "kind": "execute",
                     "status": "pending", "rawInput": raw_input}
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
