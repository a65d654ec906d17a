"""Transcript blocks for the schema's unstable updates (louise/session/unstable.py): plans
addressed by id and context compactions. Pure, like render.py, whose renderer places
them as it places the stable plan and tool calls."""

from __future__ import annotations

from typing import TYPE_CHECKING

from louise.session import (
    Compaction,
    CompactionChanged,
    CompactionRef,
    IdPlan,
    PlanUpdated,
    Session,
)
from louise.session.unstable import compaction_text

if TYPE_CHECKING:
    from louise.nvim.render import ChatRenderer, ChatState

MAX_PLAN_LINES = 60  # a markdown plan's lines shown (the rest: :LouiseExport)
MAX_SUMMARY_LINES = 20  # a compaction summary's lines shown
COMPACTION_ICONS = {"failed": "✗", "cancelled": "⊘"}  # else ⟲
NOTICE_ICONS = {"agent_info": "ℹ", "agent_warning": "⚠", "agent_error": "✗"}
# The events of these that change a transcript (besides render.py's TRANSCRIPT_EVENTS).
EVENTS = (PlanUpdated, CompactionChanged)


def _clip(lines: list[str], limit: int, what: str) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"  … {len(lines) - limit} more lines of the {what}"
                            " (:LouiseExport has them)"]


def plan_lines(plan: IdPlan) -> list[str]:
    """A plan by id: a checklist (as the stable `plan`), its markdown, or its file."""
    if plan.kind == "items":
        from louise.nvim.render import plan_lines as checklist  # render imports this module

        return checklist(plan.entries)
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


def place(renderer: ChatRenderer, chat: ChatState, session: Session,
          event: PlanUpdated | CompactionChanged) -> None:
    """A plan's or a compaction's block: replaced where it shows, else added at the end;
    a removed plan's block emptied."""
    if isinstance(event, PlanUpdated):
        block_id, kind = f"P{event.plan_id}", "plan"
        if event.plan is None and block_id not in chat.known_blocks:
            return
        lines = plan_lines(event.plan) if event.plan is not None else []
    else:
        record = session.compactions.get(event.compaction_id)
        if record is None:
            return
        block_id, kind, lines = f"c{record.index}", "notice", compaction_lines(record)
    if block_id in chat.known_blocks:
        renderer._replace(chat, block_id, lines)
    else:
        renderer._block(chat, block_id, kind, lines)
