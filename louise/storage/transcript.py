"""Recorded session transcripts: rebuild a transcript's `Session` by replaying it, and
render that session as Markdown (`louise export`); finding one is `transcript_files.py`.

The registry appends one JSON object per line to `transcripts/<agent>@<session>@<digest>
.jsonl` in the state directory (`transcript_files.file_name`; older files are
`<agent>--<session>.jsonl`):
`{"t": time, "type": "session"|"prompt"|"update"|"turn_end"|"permission"|"rename"|
"truncated"|"dropped"|"omitted", ...}`. Replaying goes through the same `Session` model a
live session uses, so an export shows exactly what the live session showed: after a
`session/load` (`"attach": "load"`) the agent's replay replaces what came before, as it
does on screen. Whatever was not written (a cap, a line too long) shows as a notice.

Pure except reading the file: nothing here writes, starts a process or talks to an agent.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from louise.acp.schema import parse_update
from louise.limits.cost import TurnCost
from louise.session import CompactionRef, Message, Notice, Session, ToolCall, ToolCallRef, TurnUsage
from louise.session.unstable import compaction_text
from louise.storage.markdown_text import agent_markdown, visible_controls
from louise.storage.transcript_files import split_stem

MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line is skipped unread, with a notice (the
# registry never writes one; the cap keeps a damaged or foreign file from filling memory)
MAX_DIFF_CHARS = 1024 * 1024  # difflib is superlinear; bigger edits are summarised
_OPEN_TURN = ("prompting", "waiting_permission", "cancelling")
_BACKTICKS = re.compile("`+")

TOOL_ICONS = {"read": "📖", "edit": "✏", "delete": "🗑", "move": "↔", "search": "🔎",
              "execute": "$", "think": "💭", "fetch": "🌐", "switch_mode": "⇄", "other": "⚙"}


@dataclass(frozen=True, slots=True)
class ReplayResult:
    session: Session
    skipped_lines: int  # malformed, oversized or out-of-place lines that were not replayed


# ----------------------------------------------------------------------------- replaying


def _bounded_lines(handle: IO[bytes]) -> Iterator[bytes | None]:
    """Lines of at most MAX_LINE_BYTES (newline excluded); None stands for a longer one,
    which is skipped without being held in memory."""
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # drain the rest of the oversized line
                rest = handle.readline(1024 * 1024)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


class _Replayer:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.session: Session | None = None
        self.skipped = 0

    def model(self, record: dict[str, Any] | None = None) -> Session:
        if self.session is None:
            agent, session_id, _ = split_stem(self.path)
            record = record or {}
            self.session = Session(_str(record.get("sessionId")) or session_id,
                                   _str(record.get("agent")) or agent,
                                   _str(record.get("cwd")))
        return self.session

    def line(self, data: bytes) -> None:
        if not data.strip():
            return
        try:
            record = json.loads(data)
        except ValueError:  # also bad UTF-8
            self.skipped += 1
            return
        if not isinstance(record, dict) or not self.record(record):
            self.skipped += 1

    def record(self, record: dict[str, Any]) -> bool:
        """Replay one record; False when it cannot be replayed."""
        kind = record.get("type")
        if kind == "session":
            first = self.session is None
            session = self.model(record)
            attach = record.get("attach")
            if not first:
                self.close_open_turn(session)
                cwd = _str(record.get("cwd"))
                session.cwd = cwd or session.cwd
                if attach == "load":
                    # As on screen: the agent's replay replaces what the model held.
                    session = self.session = session.fresh()
            if attach != "new":
                # Messages before the first prompt after a (re)open are the agent's
                # session/load replay of its history (older files do not say which).
                session.begin_replay()
            return True
        if kind == "prompt":
            prompt = record.get("prompt")
            if not isinstance(prompt, list):
                return False
            session = self.model()
            self.close_open_turn(session)
            session.mark_ready()
            session.begin_turn([block for block in prompt if isinstance(block, dict)])
            return True
        if kind == "update":
            update = record.get("update")
            if not isinstance(update, dict):
                return False
            self.model().apply(parse_update(update))
            return True
        if kind == "turn_end":
            session = self.model()
            if session.status not in _OPEN_TURN:
                return False
            reason = _str(record.get("stopReason")) or "end_turn"
            usage = TurnUsage.from_record(record.get("usage"))
            cost = TurnCost.from_record(record.get("quota"))
            quota = cost.text() if cost is not None else None
            if reason == "error":
                session.end_turn(None, _str(record.get("error")) or "the turn failed",
                                 usage=usage, quota=quota)
            else:
                # The registry records a cancelled turn's error too; it is still a cancel.
                session.end_turn(reason, usage=usage, quota=quota)
            return True
        if kind == "rename":
            name = record.get("name")
            self.model().rename(name if isinstance(name, str) else "")
            return True
        note = _note_of(kind, record)
        if note is None:
            return False
        self.model().add_notice(*note)
        return True

    @staticmethod
    def close_open_turn(session: Session) -> None:
        if session.status in _OPEN_TURN:
            session.end_turn(None, "the transcript has no reply for this turn")


def load(path: Path) -> ReplayResult:
    """Rebuild a session from its transcript. Raises OSError if the file cannot be read."""
    replayer = _Replayer(path)
    with open(path, "rb") as handle:
        for data in _bounded_lines(handle):
            if data is None:
                replayer.skipped += 1
                replayer.model().add_notice(
                    "info", f"a line over {MAX_LINE_BYTES} bytes was skipped unread here")
            else:
                replayer.line(data)
    return ReplayResult(replayer.model(), replayer.skipped)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any, form: str, otherwise: str = "") -> str:
    """`form` with the number when `value` is one (a record's count or size), else
    `otherwise`."""
    return form.format(value) if isinstance(value, int) else otherwise


def _note_of(kind: Any, record: dict[str, Any]) -> tuple[str, str] | None:
    """The chat line (its kind and text) a record of louise's own stands for: a
    permission's outcome, a line louise added (what a turn changed), and what the file
    left out; None for anything else."""
    if kind == "permission":
        title = _str(record.get("title")) or "a tool call"
        what = f"{title} ({record['kind']})" if isinstance(record.get("kind"), str) else title
        return "info", f"permission for {what}: {_str(record.get('outcome')) or 'unknown'}"
    if kind == "notice":
        text = _str(record.get("text"))
        return (_str(record.get("kind")) or "info", text) if text else None
    if kind == "truncated":
        size = _number(record.get("limit"), " ({} bytes)")
        return "info", f"the transcript stops here: it reached its size limit{size}"
    if kind == "dropped":
        records = _number(record.get("count"), "{} records", "records")
        return "info", f"{records} missing here: the transcript writer fell behind the agent"
    if kind == "omitted":
        size = _number(record.get("bytes"), " of {} bytes")
        name = _str(record.get("record")) or "record"
        return "info", f"a {name} record{size} is missing here: it was too large to keep"
    return None


# ----------------------------------------------------------------------------- Markdown


def to_markdown(session: Session) -> str:
    """The session as a Markdown document (ends with one newline). What the agent wrote
    cannot open a section of its own (`louise.storage.markdown_text.agent_markdown`)."""
    blocks = [_header(session)]
    if session.entries_dropped:
        blocks.append(f"*{session.entries_dropped} earlier entries were not kept*")
    section: tuple[str, bool] | None = None
    for entry in session.entries:
        if isinstance(entry, Notice):
            blocks.append(_notice(entry))
            continue
        if isinstance(entry, CompactionRef):
            blocks.extend(_compaction(session, entry))
            continue
        if isinstance(entry, Message):
            body = _message(entry)
            if not body:
                continue
            wanted = ("You" if entry.role == "user" else "Agent", entry.replayed)
        else:
            body = _tool_call(session, entry)
            wanted = ("Agent", section[1] if section and section[0] == "Agent" else False)
        if wanted != section:
            section = wanted
            blocks.append(f"## {wanted[0]}" + (" (replayed)" if wanted[1] else ""))
        blocks.extend(body)
    if session.status in _OPEN_TURN:
        blocks.append("*the transcript ends before the agent's reply*")
    if session.plan:
        blocks.append("## Plan")
        blocks.append("\n".join(_plan_line(item) for item in session.plan))
    for plan in session.id_plans.values():  # plans by id (unstable), as they stand
        blocks.append("## Plan")
        blocks.append("\n".join(_plan_line(item) for item in plan.entries)
                      if plan.kind == "items" else _fenced(plan.text, "markdown")
                      if plan.kind == "markdown" else f"In {_code(plan.text)}")
    # Nothing in the file a terminal or an editor would act on (an OSC 52 clipboard write,
    # a bidi override): every control character as a visible stand-in.
    return visible_controls("\n\n".join(blocks) + "\n")


def _compaction(session: Session, ref: CompactionRef) -> list[str]:
    """A context compaction: what became of it and the summary it kept."""
    record = session.compactions.get(ref.compaction_id)
    if record is None:
        return []
    blocks = [f"*{_inline(compaction_text(record))}*"]
    if record.summary:
        blocks.append(_fenced(record.summary, "text"))
    return blocks


def _header(session: Session) -> str:
    lines = [f"# {_inline(session.agent or 'agent')} session {_code(session.session_id)}", ""]
    if session.name:
        lines.append(f"- **Name:** {_inline(session.name)}")
    title = session.info.get("title")
    if isinstance(title, str) and title:
        lines.append(f"- **Title:** {_inline(title)}")
    lines.append(f"- **Agent:** {_code(session.agent)}")
    lines.append(f"- **Session:** {_code(session.session_id)}")
    lines.append(f"- **Working directory:** {_code(session.cwd)}")
    if session.usage_used is not None or session.cost is not None:
        parts = []
        if session.usage_used is not None:
            size = f" of {session.usage_size}" if session.usage_size is not None else ""
            parts.append(f"{session.usage_used}{size} tokens")
        if session.cost is not None:
            parts.append(f"{session.cost.get('amount')} {session.cost.get('currency')}")
        lines.append(f"- **Usage:** {', '.join(parts)}")
    return "\n".join(lines)


def _message(message: Message) -> list[str]:
    parts: list[str] = []
    text = message.text.strip("\n")
    if text:
        parts.append(agent_markdown(text))
    parts.extend(_block(block) for block in message.blocks)
    if message.truncated:
        parts.append("*… the rest of this message was not kept*")
    if message.role == "thought" and parts:
        lines = "\n\n".join(parts).split("\n")
        return ["\n".join([f"> 💭 {lines[0]}"] + [f"> {line}".rstrip() for line in lines[1:]])]
    return parts


def _block(block: dict[str, Any]) -> str:
    """A one-line stand-in for a non-text content block."""
    kind = _str(block.get("type"))
    if kind in ("image", "audio"):
        return f"[{kind}: {_inline(_str(block.get('mimeType')) or 'unknown type')}]"
    if kind == "resource_link":
        name = _str(block.get("name")) or _str(block.get("uri"))
        return f"📎 {_inline(name)} {_code(_str(block.get('uri')))}"
    if kind == "resource":
        resource = block.get("resource")
        uri = _str(resource.get("uri")) if isinstance(resource, dict) else ""
        return f"📎 {_code(uri)} (embedded)"
    if kind == "text":
        return agent_markdown(_str(block.get("text")))
    return f"[{_inline(kind or 'unknown')} content]"


def _tool_call(session: Session, ref: ToolCallRef) -> list[str]:
    record = session.tool_calls.get(ref.tool_call_id)
    if record is None:
        return [f"- ⚙ tool call {_code(ref.tool_call_id)} (details not kept)"]
    icon = TOOL_ICONS.get(record.kind, TOOL_ICONS["other"])
    title = " ".join(record.title.split()) or record.tool_call_id
    status = record.display_status.replace("_", " ")
    parts = [f"- {icon} **{_inline(title)}** — {_inline(status)}"]
    parts.extend(_tool_content(session, record))
    return parts


def _tool_content(session: Session, record: ToolCall) -> list[str]:
    parts: list[str] = []
    for item in record.content:
        kind = item.get("type")
        if kind == "diff":
            parts.append(_diff(session.cwd, item))
        elif kind == "content":
            block = item.get("content")
            if isinstance(block, dict) and block.get("type") == "text":
                text = _str(block.get("text")).strip("\n")
                if text:
                    parts.append(_fenced(text, ""))
            elif isinstance(block, dict):
                parts.append(_block(block))
        elif kind == "terminal" and _str(item.get("terminalId")) not in record.terminals:
            parts.append(f"*terminal {_code(_str(item.get('terminalId')))}"
                         " (its output is not in the transcript)*")
    for terminal_id, terminal in record.terminals.items():
        # A terminal the agent ran itself: its output came with its updates.
        ended = f" · {terminal.exit_text()}" if terminal.exited else ""
        parts.append(f"*terminal {_code(terminal_id)}{ended}*")
        if terminal.text.strip("\n"):
            parts.append(_fenced(terminal.text.strip("\n"), "console"))
    return parts


def _diff(cwd: str, item: dict[str, Any]) -> str:
    path = _str(item.get("path"))
    old_text = item.get("oldText")
    new_text = _str(item.get("newText"))
    old = old_text if isinstance(old_text, str) else ""
    prefix = cwd.rstrip("/") + "/" if cwd else ""
    inside = bool(prefix) and path.startswith(prefix)
    label = path[len(prefix):] if inside else path
    if len(old) + len(new_text) > MAX_DIFF_CHARS:
        return f"*{_code(label)}: edit too large to show " \
               f"({len(new_text.splitlines())} lines after)*"
    before = "/dev/null" if not isinstance(old_text, str) else (f"a/{label}" if inside else label)
    after = f"b/{label}" if inside else label
    lines = list(difflib.unified_diff(old.splitlines(), new_text.splitlines(),
                                      before, after, lineterm=""))
    if not lines:
        return f"*{_code(label)}: no change*"
    return _fenced("\n".join(lines), "diff")


def _plan_line(item: dict[str, Any]) -> str:
    status = item.get("status")
    mark = "x" if status == "completed" else " "
    note = " *(in progress)*" if status == "in_progress" else ""
    return f"- [{mark}] {_inline(' '.join(_str(item.get('content')).split()))}{note}"


def _notice(notice: Notice) -> str:
    text = " ".join(notice.text.split())
    prefix = {"error": "error: ", "agent_error": "error: ", "agent_warning": "warning: "
              }.get(notice.kind, "")
    return f"*{_inline(prefix + text)}*"


# ----------------------------------------------------------------------------- escaping


def _inline(text: str) -> str:
    """Text that stays on its line (whitespace runs, newlines too, as one space) and
    cannot open emphasis, code or HTML where it is put."""
    text = " ".join(text.split())
    for special in ("\\", "*", "_", "`", "<"):
        text = text.replace(special, "\\" + special)
    return text


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def _code(text: str) -> str:
    """An inline code span that survives backticks in `text`."""
    text = " ".join(line for line in text.splitlines() if line)  # it cannot end a paragraph
    if not text:
        return "(none)"
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fenced(text: str, info: str) -> str:
    """A fenced block whose fence is longer than any backtick run inside."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}{info}\n{text}\n{fence}"
