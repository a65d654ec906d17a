"""The gate for side effects nobody approved (`[permissions] gate_unasked`, on by default).

An `fs/write_text_file` or `terminal/create` that the agent did not precede, in the same
turn, with a permission request that was approved (by the person, a configured rule or a
remembered choice) for that file or that command is asked for first, through the broker
like any request: rules and remembered choices apply, the prompt shows the write's diff or
the command, and anything but an allow refuses it. An agent that asks first is never
asked about again; a file or command the person refused this turn is refused at once.
What counts as the same file or command: `TurnApprovals` (approvals.py, and
`gate_commands.py`). A mode the person picked in louise that approves edits (or everything)
is their approval while the session stays in it (`person_modes.py`).
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from louise.acp.errors import RpcError
from louise.registry.approvals import absolute_paths
from louise.registry.gate_commands import (
    run_directory,
    terminal_command,
)
from louise.registry.person_modes import EDIT, EXECUTE, person_approves

if TYPE_CHECKING:
    from louise.registry.records import LiveSession
    from louise.registry.turn_permissions import TurnPermissions

REFUSED = -32001  # a person's (or a rule's) refusal, distinct from protocol errors
MAX_DIFF_CHARS = 1024 * 1024  # bigger writes show as "write N lines", not a diff
GATE_OPTIONS: tuple[dict[str, str], ...] = (
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"},
)


class UnaskedGate:
    """Asks before a write or a command nobody approved this turn (see the module)."""

    def __init__(self, permissions: TurnPermissions, *, enabled: bool) -> None:
        self._permissions = permissions
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
        request = self._permissions.request_for(live, params, None)
        outcome = await self._permissions.ask(live, request)
        chosen = outcome.get("outcome", {})
        if chosen.get("outcome") != "selected":
            return False
        kind = request.kind_of(str(chosen.get("optionId")))
        return kind in ("allow_once", "allow_always")


def _relative(path: str, cwd: str) -> str:
    prefix = cwd.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path
