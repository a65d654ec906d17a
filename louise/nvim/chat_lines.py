"""The lines of each block of a chat transcript, from the session model: messages (their
heading, text and non-text blocks), tool-call lines and what `<Tab>` expands them with,
plans (the stable one and those by id), notices and context compactions; every line cut
to the buffer's line length. Pure."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Any
from urllib.parse import unquote, urlsplit

from louise.nvim.tool_text import tool_details
from louise.session import Compaction, CompactionRef, IdPlan, Message, Notice, Session, ToolCall
from louise.session.budget import MESSAGE_CUT_MARKER
from louise.session.unstable import compaction_text

# A tool line whose terminal Neovim no longer keeps (a chat keeps only its newest ones).
RELEASED_TEXT = "output not kept"
STATUS_ICONS = {"pending": "○", "in_progress": "◐", "completed": "●", "failed": "✗",
                "cancelled": "⊘"}
PLAN_MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
MAX_PLAN_LINES = 60  # a markdown plan's lines shown (the rest: :LouiseExport)
MAX_SUMMARY_LINES = 20  # a compaction summary's lines shown
COMPACTION_ICONS = {"failed": "✗", "cancelled": "⊘"}  # else ⟲
NOTICE_ICONS = {"agent_info": "ℹ", "agent_warning": "⚠", "agent_error": "✗"}


def _clip(lines: list[str], limit: int, what: str) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"  … {len(lines) - limit} more lines of the {what}"
                            " (:LouiseExport has them)"]


def id_plan_lines(plan: IdPlan) -> list[str]:
    """A plan by id (unstable): a checklist (as the stable `plan`), its markdown, or its
    file."""
    if plan.kind == "items":
        return plan_lines(plan.entries)
    if plan.kind == "markdown":
        return ["", "▌ plan", *_clip(plan.text.split("\n"), MAX_PLAN_LINES, "plan")]
    return ["", "▌ plan", f"in {' '.join(plan.text.split())}"]


def compaction_at(session: Session, ref: CompactionRef, index: int) -> Compaction | None:
    """The compaction a transcript entry shows: None once its record was dropped (or its
    id began again further on)."""
    record = session.compactions.get(ref.compaction_id)
    return record if record is not None and record.index == index else None


def compaction_lines(record: Compaction | None) -> list[str]:
    """A compaction: what became of it, why it failed, and the summary it kept."""
    if record is None:
        return []  # its record was dropped (bounded); its place stays empty
    lines = ["", f"{COMPACTION_ICONS.get(record.status, '⟲')} {compaction_text(record)}"]
    if record.summary:
        lines.extend(_clip(["  " + line for line in record.summary.split("\n")],
                           MAX_SUMMARY_LINES, "summary"))
    return lines


# As lua/louise/chat/buffer.lua's M.MAX_LINE_BYTES: streamed text is cut into buffer lines
# of at most this many bytes there; a full render cuts the same way here (block rows are
# counted here), so a reply that is one long line costs the same after a reload.
MAX_LINE_BYTES = 4096


def cut_long_lines(lines: list[str]) -> list[str]:
    """`lines` with every line over MAX_LINE_BYTES (UTF-8) cut on character boundaries."""
    if all(len(line) * 4 <= MAX_LINE_BYTES for line in lines):
        return lines  # the usual case: no line can be that long
    out: list[str] = []
    for line in lines:
        data = line.encode("utf-8", "surrogatepass")
        start = 0
        while len(data) - start > MAX_LINE_BYTES:
            end = start + MAX_LINE_BYTES
            while end > start + 1 and data[end] & 0xC0 == 0x80:  # inside a character
                end -= 1
            out.append(data[start:end].decode("utf-8", "surrogatepass"))
            start = end
        out.append(data[start:].decode("utf-8", "surrogatepass") if start else line)
    return out


def _lines(text: str) -> list[str]:
    return text.split("\n")


def header(role: str, agent: str, continued: bool = False) -> list[str]:
    """A message's heading; an agent message that continues its turn's reply (after a tool
    call, a plan or a thought) gets none, so one reply reads as one block."""
    if role == "user":
        return ["", "▌ You"]
    if role == "thought":
        return ["", "▌ thinking"]
    if continued:
        return [""]
    return ["", f"▌ {agent}"]


def _file_name(uri: str) -> str:
    """The name a person knows a file by: `README.md` of `file:///…/README.md`."""
    path = unquote(urlsplit(uri).path) if uri.startswith("file:") else uri
    return posixpath.basename(path.rstrip("/")) or uri


def block_label(block: dict[str, Any]) -> str:
    """A non-text content block on one line: a file as it was mentioned (`@README.md`),
    anything else as its kind and name (`[image: shot.png]`)."""
    kind = block.get("type", "content")
    resource = block.get("resource")
    uri = block.get("uri") or (resource.get("uri") if isinstance(resource, dict) else "")
    uri = uri if isinstance(uri, str) else ""
    name = block.get("name")
    name = name if isinstance(name, str) else ""
    if kind in ("resource", "resource_link") and (name or uri):
        return "@" + (_file_name(uri) if uri else name)  # where it is, not what it claims
    shown = _file_name(uri) if uri else name
    return f"[{kind}: {shown}]" if shown else f"[{kind}]"


def message_lines(message: Message, agent: str, continued: bool = False) -> list[str]:
    body = _lines(message.text) if message.chars else [""]
    for block in message.blocks:
        body.append(block_label(block))
    if message.truncated:
        body.append(MESSAGE_CUT_MARKER)
    return header(message.role, agent, continued) + body


def tool_line(record: ToolCall, exits: dict[str, str] | None = None,
              released: AbstractSet[str] = frozenset()) -> str:
    icon = STATUS_ICONS.get(record.display_status, "○")
    title = " ".join(record.title.split()) or record.tool_call_id
    line = f"  {icon} {record.kind}: {title} · {record.display_status}"
    if exits is None:
        return line
    for tid in record.terminal_ids():
        own = record.terminals.get(tid)  # a terminal the agent runs and reports itself
        if own is None:
            line += f" · {exits.get(tid, 'running')}"
        elif own.exited or not record.finished:
            line += f" · {own.exit_text() or 'running'}"
        if tid in released:
            line += f" · {RELEASED_TEXT}"
    return line


def tool_lines(record: ToolCall, exits: dict[str, str] | None = None,
               released: AbstractSet[str] = frozenset()) -> list[str]:
    return [tool_line(record, exits, released)]


def tool_meta(record: ToolCall) -> dict[str, Any]:
    """What the tool line's keys need: where it points (`<CR>`/`gf`), its terminals, and
    the lines `<Tab>` expands it with."""
    locations = [{"path": str(loc.get("path")), "line": loc.get("line")}
                 for loc in record.locations[:20] if isinstance(loc.get("path"), str)]
    terminals = record.terminal_ids()
    return {"locations": locations, "terminals": terminals, "details": tool_details(record)}


def plan_lines(entries: Iterable[dict[str, Any]]) -> list[str]:
    lines = ["", "▌ plan"]
    for entry in entries:
        mark = PLAN_MARKS.get(str(entry.get("status")), "[ ]")
        lines.append(f"- {mark} {' '.join(str(entry.get('content', '')).split())}")
    return lines


def notice_kind(notice: Notice) -> str:
    """The block kind (its highlight): a turn's tokens and changes are quieter than a stop."""
    return "usage" if notice.kind in ("usage", "changes") else "notice"


def notice_meta(notice: Notice) -> dict[str, Any] | None:  # <CR> on it: a turn's review
    review = notice.data.get("review") if notice.data is not None else None
    return {"review": dict(review)} if isinstance(review, dict) else None


def notice_lines(notice: Notice) -> list[str]:
    icon = {"error": "✗", "cancelled": "⊘", "stop": "■", "usage": "Σ", "changes": "±",
            **NOTICE_ICONS}.get(notice.kind, "·")
    lines = _lines(notice.text)
    return ["", f"{icon} {lines[0]}", *("  " + line for line in lines[1:])]
