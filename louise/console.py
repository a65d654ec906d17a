"""Terminal front end of the registry: prints a session's stream and asks permissions on
the terminal. Used by `louise chat` and `louise demo`; no Neovim involved.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO

import anyio

from louise.broker import PermissionRequest, QueueView
from louise.registry import AgentStatus, RegistryEvent, SessionRegistry
from louise.session import (
    MessageChunk,
    MessageStarted,
    NoticeAdded,
    PlanChanged,
    ToolCallChanged,
    TurnEnded,
)
from louise.transcript import TOOL_ICONS

OPTION_ICONS = {"allow_once": "✓", "allow_always": "✓✓", "reject_once": "✗", "reject_always": "✗✗"}


def _clean(text: str) -> str:
    """Terminal-safe: no escape sequences from an agent reach the person's terminal."""
    return "".join(c if c.isprintable() or c in "\n\t" else " " for c in text)


@dataclass
class ConsolePrinter:
    """Streams one registry's events: replies to `out`, everything else to `err`."""

    registry: SessionRegistry
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    show_thoughts: bool = True
    session_id: str | None = None  # only this session (None: all)
    _role: str | None = None
    _at_line_start: bool = True

    def __call__(self, event: RegistryEvent) -> None:
        if isinstance(event, AgentStatus):
            if event.state in ("exited", "failed"):
                self._line(self.err, f"[{event.agent}] {event.state}: {event.message}")
            return
        if self.session_id is not None and getattr(event, "session_id", None) != self.session_id:
            return
        if isinstance(event, MessageStarted):
            self._role = event.role
            if event.role == "agent":
                self._break(self.out)
            elif event.role == "thought" and self.show_thoughts:
                self._break(self.err)
                self.err.write("💭 ")
        elif isinstance(event, MessageChunk):
            if event.role == "agent":
                self._write(self.out, _clean(event.text))
            elif event.role == "thought" and self.show_thoughts:
                self._write(self.err, _clean(event.text))
        elif isinstance(event, ToolCallChanged):
            self._tool(event)
        elif isinstance(event, PlanChanged):
            marks = {"completed": "[x]", "in_progress": "[~]"}
            lines = [f"  {marks.get(str(e.get('status')), '[ ]')} {_clean(str(e.get('content')))}"
                     for e in event.entries]
            self._line(self.err, "plan:\n" + "\n".join(lines))
        elif isinstance(event, NoticeAdded):
            self._line(self.err, f"[{event.notice.kind}] {_clean(event.notice.text)}")
        elif isinstance(event, TurnEnded):
            self._break(self.out)
            self.out.flush()

    def _tool(self, event: ToolCallChanged) -> None:
        if not ({"status", "title"} & event.changed) and not event.created:
            return
        session = self.registry.session(event.session_id)
        record = session.tool_calls.get(event.tool_call_id)
        if record is None:
            return
        icon = TOOL_ICONS.get(record.kind, "⚙")
        self._line(self.err, f"{icon} {_clean(record.title)} [{record.display_status}]")

    def _write(self, stream: TextIO, text: str) -> None:
        if not text:
            return
        stream.write(text)
        self._at_line_start = text.endswith("\n")
        stream.flush()

    def _break(self, stream: TextIO) -> None:
        if not self._at_line_start:
            stream.write("\n")
            self._at_line_start = True

    def _line(self, stream: TextIO, text: str) -> None:
        self._break(self.out)
        stream.write(text + "\n")
        stream.flush()
        self._at_line_start = True


def describe_request(request: PermissionRequest, queue: QueueView) -> str:
    lines = [f"── permission {queue.position} of {queue.total} ── {request.agent}"]
    lines.append(f"{TOOL_ICONS.get(request.kind or 'other', '⚙')} {_clean(request.title)}"
                 f" ({request.kind or 'unknown kind'})")
    if request.command:
        lines.append(f"  command: {_clean(request.command)}")
    for path in request.paths:
        lines.append(f"  path: {_clean(path)}")
    for diff in request.diffs:
        old, new = diff.get("oldText"), diff.get("newText")
        status = "new file" if old is None else "edit"
        new_lines = len(str(new or "").splitlines())
        lines.append(f"  diff: {diff.get('path')} ({status}, {new_lines} lines)")
    for number, option in enumerate(request.options, 1):
        icon = OPTION_ICONS.get(str(option.get("kind")), "?")
        lines.append(f"  {number}) {icon} {_clean(str(option.get('name')))}")
    lines.append("  q) cancel")
    return "\n".join(lines)


class TtyDecider:
    """Asks on the controlling terminal. Anything but a listed number cancels."""

    def __init__(self, tty_path: str = "/dev/tty") -> None:
        self.tty_path = tty_path

    @staticmethod
    def available() -> bool:
        if not sys.stdin.isatty():
            return False
        try:
            with open("/dev/tty", encoding="utf-8"):  # a terminal is there to ask on
                return True
        except OSError:
            return False

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        prompt = describe_request(request, queue) + "\nchoose: "

        def ask() -> str:
            # Separate read and write handles: a text-mode "r+" on a tty is not seekable.
            with open(self.tty_path, "w", encoding="utf-8") as out:
                out.write(prompt)
                out.flush()
            with open(self.tty_path, encoding="utf-8") as tty:
                return tty.readline()

        answer = (await anyio.to_thread.run_sync(ask, abandon_on_cancel=True)).strip()
        if answer.isdigit() and 1 <= int(answer) <= len(request.options):
            option_id = request.options[int(answer) - 1].get("optionId")
            return option_id if isinstance(option_id, str) else None
        return None


def stop_reason_exit_code(reason: str) -> int:
    return {"end_turn": 0, "cancelled": 130, "refusal": 4, "max_tokens": 5,
            "max_turn_requests": 5}.get(reason, 1)
