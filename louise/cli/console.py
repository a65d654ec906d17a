"""Terminal front end of the registry: prints a session's stream and asks permissions on
the terminal. Used by `louise chat` and `louise demo`; no Neovim involved.

Everything an agent sends goes through `louise.cli.terminal_text.safe` before it is printed.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TextIO

import anyio

from louise.capabilities.file_changes import (
    FileChange,
    hunk_lines,
    proposed_change,
    read_for_review,
)
from louise.cli.console_wait import WaitingLine
from louise.cli.output import put
from louise.cli.terminal_text import safe
from louise.permissions.broker import PermissionRequest, QueueView, waited_text
from louise.registry import SessionRegistry
from louise.registry.events import AgentStatus, RegistryEvent
from louise.session import (
    TURN_STATUSES,
    AgentNoted,
    CompactionChanged,
    MessageChunk,
    MessageStarted,
    MessageTruncated,
    NoticeAdded,
    PlanChanged,
    PlanUpdated,
    Session,
    StatusChanged,
    ToolCallChanged,
    TurnEnded,
)
from louise.session.budget import MESSAGE_CUT_MARKER
from louise.session.records import Message, Notice, ToolCallRef
from louise.session.unstable import compaction_text
from louise.storage.transcript import TOOL_ICONS

# A streaming agent is read at most once per terminal frame (60 Hz): every chunk it wrote
# meanwhile is read at once, merged into one piece of text and written to the terminal in
# one write, instead of a wake-up, an event and a write per chunk (bench/cli_chat.py). A
# chunk after a pause, the first of a reply, is read at once.
TERMINAL_FRAME_SECONDS = 1 / 60


async def terminal_frame() -> None:
    """The read pace of a streaming agent (`SessionRegistry(read_pace=…)`)."""
    await anyio.sleep(TERMINAL_FRAME_SECONDS)


OPTION_ICONS = {"allow_once": "✓", "allow_always": "✓✓", "reject_once": "✗", "reject_always": "✗✗"}
MAX_ANSWER_BYTES = 4096
MAX_ATTEMPTS = 20  # typos asked again, then the request is refused


@dataclass
class ConsolePrinter:
    """Streams one registry's events: replies to `out`, everything else to `err`.

    Each stream's lines are kept whole: where both end in one place (a terminal, `2>&1`),
    a line unfinished on one is ended before the other writes (a thought on `err` before
    the reply starts on `out`); where they end apart (`> reply.md`), neither writes into
    the other's line, so `out` carries the reply as the agent wrote it (a line break
    only between its messages) and no leading blank line.
    """

    registry: SessionRegistry
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    show_thoughts: bool = True
    # Off where the caller reports a failed turn itself (one `louise: …` line): then
    # neither the agent's exit nor the turn's error notice is printed here as well.
    show_failures: bool = True
    session_id: str | None = None  # only this session (None: all)
    # `louise chat --attach`: prompts other front ends send are shown too (`> …`).
    show_prompts: bool = False
    waiting: WaitingLine | None = None  # the wait shown on stderr, erased before output
    # Called once when the reader of `out` left (`louise chat … | head`): `out` then
    # writes nowhere (see `louise.cli.output`).
    on_output_closed: Callable[[], None] | None = None
    reader_left: bool = False
    _unfinished: list[TextIO] = field(default_factory=list)  # last line not ended
    _apart: bool | None = None  # `out` and `err` end in different places (see `apart`)

    def __call__(self, event: RegistryEvent) -> None:
        if isinstance(event, AgentStatus):
            if event.state in ("exited", "failed") and self.show_failures:
                rest = event.message.strip().split("\n", 1)[1:]  # the stderr tail
                self._line(self.err, "\n".join([event.headline(), *rest]))
            return
        if self.session_id is not None and getattr(event, "session_id", None) != self.session_id:
            return
        if isinstance(event, MessageStarted):
            self.finish()
            if event.role == "thought" and self.show_thoughts:
                self._write(self.err, "💭 ")
            elif event.role == "user" and self.show_prompts:
                self._write(self.err, "> ")
        elif isinstance(event, MessageChunk):
            if event.role == "agent":
                self._write(self.out, event.text)
            elif (event.role == "thought" and self.show_thoughts) or \
                    (event.role == "user" and self.show_prompts):
                self._write(self.err, event.text)
        elif isinstance(event, MessageTruncated):
            self._cut(event)
        elif isinstance(event, ToolCallChanged):
            self._tool(event)
        elif isinstance(event, PlanChanged):
            marks = {"completed": "[x]", "in_progress": "[~]"}
            lines = [f"  {marks.get(str(e.get('status')), '[ ]')} {safe(str(e.get('content')))}"
                     for e in event.entries]
            self._line(self.err, "plan:\n" + "\n".join(lines))
        elif isinstance(event, NoticeAdded):
            if event.notice.kind != "error" or self.show_failures:
                kind = event.notice.kind.removeprefix("agent_")  # a notice the agent sent
                text = event.notice.text
                if kind == "changes":  # what the turn changed: `louise review` shows it
                    text = text.replace("· review", "· louise review", 1)
                # The kind once: "[cancelled]", not "[cancelled] cancelled".
                text = "" if text == kind else \
                    text.removeprefix(f"{kind}: ").removeprefix(f"{kind} · ")
                self._line(self.err, f"[{kind}] {text}" if text else f"[{kind}]")
        elif isinstance(event, PlanUpdated) and event.plan is not None:
            plan = event.plan
            text = "\n".join(f"  [{'x' if e.get('status') == 'completed' else ' '}] "
                             f"{safe(str(e.get('content')))}" for e in plan.entries) \
                if plan.kind == "items" else plan.text  # _line keeps only safe text
            self._line(self.err, f"plan:\n{text}")
        elif isinstance(event, CompactionChanged):
            record = self.registry.session(event.session_id).compactions.get(
                event.compaction_id)
            if record is not None and (event.created or record.status != "in_progress"):
                self._line(self.err, f"[compaction] {compaction_text(record)}")
        elif isinstance(event, AgentNoted):
            # The agent's own word on a wait (codex's "Reconnecting... 2/5"), as it comes.
            note = f"{event.note}" if event.note else None
            if note is not None:
                self._line(self.err, f"[{self.registry.session(event.session_id).agent}] "
                                     f"{note}")
            if self.waiting is not None:
                self.waiting.set_note(note)
        elif isinstance(event, TurnEnded):
            self.finish()
        elif isinstance(event, StatusChanged) and event.old in TURN_STATUSES \
                and event.new not in TURN_STATUSES:
            self.finish()  # a turn prompted in another window ended: no TurnEnded here

    def history(self, session: Session) -> None:
        """The session as it is now, once (what `louise chat --attach` shows before the live
        stream): the person's prompts as `> …` and thoughts on stderr, replies on stdout,
        tool calls and notes as the stream shows them. A reply still streaming is left
        open: its next chunks continue its line."""
        for entry in list(session.entries):
            if isinstance(entry, Message):
                self.finish()
                if entry.role == "user":
                    self._line(self.err, "> " + entry.text.replace("\n", "\n> "))
                elif entry.role == "agent":
                    self._write(self.out, entry.text)
                elif entry.role == "thought" and self.show_thoughts:
                    self._write(self.err, "💭 " + entry.text)
            elif isinstance(entry, ToolCallRef):
                record = session.tool_calls.get(entry.tool_call_id)
                if record is not None:
                    icon = TOOL_ICONS.get(record.kind, "⚙")
                    self._line(self.err, f"{icon} {safe(record.title)} "
                                         f"[{safe(record.display_status)}]")
            elif isinstance(entry, Notice):
                self._line(self.err, f"[{entry.kind}] {entry.text}")
        last = session.entries[-1] if session.entries else None
        if not (session.in_turn and isinstance(last, Message)):
            # Not a message still streaming: the live stream goes on where it stands.
            self.finish()

    @property
    def line_open(self) -> bool:
        """A line where `err` draws is unfinished (nothing may be drawn there now)."""
        if self.apart:
            return any(stream is self.err for stream in self._unfinished)
        return bool(self._unfinished)

    @property
    def apart(self) -> bool:
        """Whether `out` and `err` end in different places (files, pipes, terminals).
        Unknown (no descriptor) counts as one place: lines are then ended as on a
        terminal."""
        if self._apart is None:
            self._apart = not same_place(self.out, self.err)
        return self._apart

    def _cut(self, event: MessageTruncated) -> None:
        """A message past its budget: the marker where it stops (in the reply itself, so
        a script reading stdout sees it), and one line on stderr saying so."""
        if event.role == "agent":
            self._line(self.out, MESSAGE_CUT_MARKER)
        elif event.role == "thought" and self.show_thoughts:
            self._line(self.err, MESSAGE_CUT_MARKER)
        what = {"agent": "the agent's reply", "thought": "the agent's thought",
                "user": "the prompt"}[event.role]
        limit = self.registry.session(event.session_id).bounds.max_message_chars
        self._line(self.err, f"louise: {what} passed the limit of one message "
                             f"({limit:,} characters); the rest of it was not kept")

    def _tool(self, event: ToolCallChanged) -> None:
        if not ({"status", "title"} & event.changed) and not event.created:
            return
        session = self.registry.session(event.session_id)
        record = session.tool_calls.get(event.tool_call_id)
        if record is None:
            return
        icon = TOOL_ICONS.get(record.kind, "⚙")
        self._line(self.err, f"{icon} {safe(record.title)} [{safe(record.display_status)}]")

    def _write(self, stream: TextIO, text: str) -> None:
        text = safe(text, multiline=True)
        if not text:
            return
        if self.waiting is not None:
            self.waiting.output()
        if not self.apart:
            self._end(lambda open_stream: open_stream is not stream)
        self._put(stream, text)
        if text.endswith("\n"):
            self._unfinished[:] = [s for s in self._unfinished if s is not stream]
        elif not any(s is stream for s in self._unfinished):
            self._unfinished.append(stream)

    def finish(self) -> None:
        """End the unfinished lines, each on the stream it is on."""
        self._end(lambda _stream: True)

    def _end(self, which: Callable[[TextIO], bool]) -> None:
        for stream in [s for s in self._unfinished if which(s)]:
            self._unfinished.remove(stream)
            self._put(stream, "\n")

    def interrupted(self, text: str) -> None:
        """A line of louise's own after a Ctrl-C, whose `^C` the terminal echoed where its
        cursor was: after the unfinished line, ended (once: this printer knows it is),
        else over the echo."""
        if not self.line_open and self.err.isatty():
            if self.waiting is not None:
                self.waiting.echoed(len("^C"))  # after the wait's line: erased with it
            self._put(self.err, "\r")
        self._line(self.err, text)

    def _line(self, stream: TextIO, text: str) -> None:
        if self.waiting is not None:
            self.waiting.output()
        self._end(lambda open_stream: open_stream is stream or not self.apart)
        self._put(stream, safe(text, multiline=True) + "\n")

    def _put(self, stream: TextIO, text: str) -> None:
        if not put(stream, text) and stream is self.out and not self.reader_left:
            self.reader_left = True
            if self.on_output_closed is not None:
                self.on_output_closed()


def same_place(first: TextIO, second: TextIO) -> bool:
    """Whether two streams write to one file, pipe or terminal (or it cannot be told)."""
    if first is second:
        return True
    try:
        one, other = os.fstat(first.fileno()), os.fstat(second.fileno())
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is an OSError
        return True
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def describe_request(request: PermissionRequest, queue: QueueView,
                     changes: Sequence[FileChange] = ()) -> str:
    """The permission prompt's text; every agent-given value on a line of its own kind.
    `changes` (`review_changes`) are the request's files: their hunks are shown."""
    lines = [f"── permission {queue.position} of {queue.total} ── {safe(request.agent)}"]
    waited = waited_text(request.waited_seconds)
    if waited is not None:
        lines[0] += f" ── {waited}"
    kind = safe(request.kind) if request.kind else "unknown kind"
    lines.append(f"{TOOL_ICONS.get(request.kind or 'other', '⚙')} {safe(request.title)}"
                 f" ({kind})")
    if request.command:
        lines.append(f"  command: {safe(request.command)}")
    for path in request.paths:
        lines.append(f"  path: {safe(path)}")
    for change in changes:
        shown = _shown_path(change.path, request.workspace)
        status = {"new": "new file", "delete": "delete"}.get(change.mode, "edit")
        lines.append(f"  diff: {safe(shown)} ({status})")
        lines.extend("    " + safe(line) for line in hunk_lines(change, shown))
    for number, option in enumerate(request.options, 1):
        icon = OPTION_ICONS.get(str(option.get("kind")), "?")
        lines.append(f"  {number}) {icon} {safe(str(option.get('name')))}")
    if request.has_duplicate_ids():
        lines.append("  (the agent gave several options one id: choosing one of those "
                     "may refuse, and is never remembered)")
    refusal = "refuse this time" if request.refusal() is not None else "cancel"
    lines.append(f"  q) {refusal}")
    return "\n".join(lines)


def _shown_path(path: str, workspace: str) -> str:
    """A path as a person reads it: relative to the workspace when inside it."""
    base = workspace.rstrip("/") + "/"
    return path[len(base):] if workspace and path.startswith(base) else path


def review_changes(request: PermissionRequest) -> list[FileChange]:
    """The request's files put onto the disk's text now (see `louise.capabilities.file_changes`)."""
    changes = []
    for item in request.diffs:
        path = str(item.get("path") or "")
        if path and not os.path.isabs(path):
            path = os.path.join(request.workspace, path)
        changes.append(proposed_change({**item, "path": path}, read_for_review(path)))
    return changes


def allowed_once(request: PermissionRequest, allowed: frozenset[str]) -> str | None:
    """The agent's allow-once option when `--allow` names the request's kind (never
    remembered), else None: the decider asks, refuses or waits as it does."""
    if request.kind in allowed:
        return request.option_of_kind("allow_once")
    return None


def refusal_reason(request: PermissionRequest, allowed: frozenset[str]) -> str:
    """Why a request was refused without a person to ask, and how to allow it."""
    what = f"{safe(request.kind)} permission" if request.kind else "permission"
    title = f" ({safe(request.title)})" if request.title else ""
    if request.kind is None:
        return (f"louise: refused a {what}{title}: no terminal to ask on, and the agent did "
                "not say what kind of tool it is, so --allow cannot allow it")
    if request.kind in allowed:
        return (f"louise: refused {what}{title}: --allow {request.kind} allows only a "
                "one-time answer, and the agent offers none")
    return (f"louise: refused {what}{title}: no terminal to ask on; to allow it, run "
            f"again with --allow {request.kind}")


@dataclass
class HeadlessDecider:
    """No terminal to ask on (`louise chat` in a pipe or a script): `--allow KIND` kinds
    are allowed once, the rest refused once, and each refusal says why on stderr."""

    allowed: frozenset[str] = frozenset()
    report: Callable[[str], None] = field(
        default=lambda text: print(safe(text), file=sys.stderr, flush=True))

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        allow = allowed_once(request, self.allowed)
        if allow is not None:
            return allow
        self.report(refusal_reason(request, self.allowed))
        return request.refusal()


@dataclass(frozen=True, slots=True)
class BystanderDecider:
    """`louise chat --attach` without a terminal: the session's other front ends answer
    (the host withdraws the question here once one does, and says who); `--allow KIND`
    kinds are still allowed once. Never refuses on their behalf."""

    allowed: frozenset[str] = frozenset()
    report: Callable[[str], None] = field(
        default=lambda text: print(safe(text), file=sys.stderr, flush=True))

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        import anyio

        allow = allowed_once(request, self.allowed)
        if allow is not None:
            return allow
        self.report("louise: a permission is asked; answer it in another window "
                    "attached to this session")
        await anyio.sleep_forever()
        return None


class TtyDecider:
    """Asks on the controlling terminal: a listed number answers, `q` refuses this once
    (the agent's `reject_once` option; `cancelled` only when it has none), anything else
    asks again. `--allow KIND` kinds are allowed once without asking.

    The answer is read in a worker thread that a cancelled request (the agent exited,
    withdrew it, the turn was cancelled) wakes at once, so the prompt ends there and no
    reader is left behind to swallow the answer to the next one.
    """

    def __init__(self, tty_path: str = "/dev/tty", allowed: frozenset[str] = frozenset()
                 ) -> None:
        self.tty_path = tty_path
        self.allowed = allowed

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
        allow = allowed_once(request, self.allowed)
        if allow is not None:
            return allow
        count = len(request.options)
        changes = await anyio.to_thread.run_sync(review_changes, request)
        self._say(describe_request(request, queue, changes) + "\nchoose: ")
        for _ in range(MAX_ATTEMPTS):
            answer = await self._read_answer()
            if answer is None:  # end of input: nobody will answer
                self._say("\n")
                return request.refusal()
            answer = answer.strip().lower()
            if answer.isdigit() and 1 <= int(answer) <= count:
                option_id = request.options[int(answer) - 1].get("optionId")
                return option_id if isinstance(option_id, str) else None
            if answer in ("q", "n", "no"):
                return request.refusal()
            self._say(f"type a number from 1 to {count}, or q: ")
        return request.refusal()

    def _say(self, text: str) -> None:
        say_on_tty(self.tty_path, text)

    async def _read_answer(self) -> str | None:
        """One line typed on the terminal; None at end of input. Cancellable at once."""
        try:
            return await read_tty_line(self.tty_path)
        except anyio.get_cancelled_exc_class():
            with contextlib.suppress(OSError):
                self._say("\n(the request was settled elsewhere)\n")
            raise


class TtyUse:
    """Whether a question (or a sign-in command) has the terminal now: `louise chat`'s
    waiting line (console_wait.py) stays off the terminal meanwhile, and is erased
    (`before_say`, set by its owner) before a question is written."""

    def __init__(self) -> None:
        self.holders = 0
        self.before_say: Callable[[], None] | None = None

    @property
    def in_use(self) -> bool:
        return self.holders > 0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.holders += 1
        try:
            yield
        finally:
            self.holders -= 1


TTY_USE = TtyUse()


def say_on_tty(path: str, text: str) -> None:
    if TTY_USE.before_say is not None:
        TTY_USE.before_say()
    # Separate read and write handles: a text-mode "r+" on a tty is not seekable.
    with open(path, "w", encoding="utf-8") as tty:
        tty.write(text)
        tty.flush()


async def read_tty_line(path: str) -> str | None:
    """One line typed on the terminal at `path`; None at end of input. Cancellable at
    once: the reader thread is woken and stops before it reads anything more."""
    with TTY_USE.held():
        return await _read_tty_line(path)


async def _read_tty_line(path: str) -> str | None:
    tty = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC)
    wake_read, wake_write = os.pipe()
    try:
        data = await anyio.to_thread.run_sync(_read_line, tty, wake_read,
                                              abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        # If the thread is already done, the write finds the pipe closed: nothing to do.
        with contextlib.suppress(OSError):
            os.write(wake_write, b"x")
        raise
    finally:
        os.close(wake_write)
    return None if data is None else data.decode("utf-8", "replace")


def _read_line(tty: int, wake: int) -> bytes | None:
    """Read up to a newline from `tty` unless `wake` becomes readable first; closes both.
    None at end of input or when woken."""
    data = b""
    try:
        while b"\n" not in data and len(data) < MAX_ANSWER_BYTES:
            ready, _, _ = select.select([tty, wake], [], [])
            if wake in ready:
                return None
            chunk = os.read(tty, MAX_ANSWER_BYTES)
            if not chunk:
                return data or None
            data += chunk
        return data
    finally:
        os.close(tty)
        os.close(wake)


def stop_reason_exit_code(reason: str) -> int:
    return {"end_turn": 0, "cancelled": 130, "refusal": 4, "max_tokens": 5,
            "max_turn_requests": 5}.get(reason, 1)
