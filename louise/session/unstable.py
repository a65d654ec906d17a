"""The schema's unstable session updates (ACP schema v1, `schema.unstable.json`), kept in
the session model within its byte budgets. Pure.

- `plan_update` / `plan_removed`: plans addressed by `planId` (`items`, `markdown` or
  `file`), each replaced whole by an update, gone on removal (`Session.id_plans`).
- `notice`: advisory text for the person (`severity` info, warning, error or the agent's
  own; `title`, `description`): a transcript notice; not history.
- `compaction_update` / `compaction_summary_chunk`: a context compaction, placed in the
  transcript by its first update and patched in place by later ones (`summary`, `error`:
  omitted leaves, null clears; `summary: []` clears), its summary grown by chunks
  (`Session.compactions`).

A malformed one is kept raw as an unknown update would be (with why), never raised.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from louise.session.budget import fit_items, json_size, text_bytes
from louise.session.events import CompactionChanged, Event, NoticeAdded, PlanUpdated
from louise.session.records import Compaction, CompactionRef, IdPlan, Notice

if TYPE_CHECKING:
    from louise.session.entries import Entries

KINDS = frozenset({"plan_update", "plan_removed", "notice", "compaction_update",
                   "compaction_summary_chunk"})
MAX_ID_CHARS = 200
MAX_PLANS = 20  # ID-addressed plans at once; the oldest goes first
MAX_COMPACTIONS = 100  # compaction records kept (their entries stay in the transcript)
MAX_TITLE_CHARS = 300
MAX_TEXT_BYTES = 64 * 1024  # a notice's description, a failure's error
NOTICE_KINDS = {"info": "agent_info", "warning": "agent_warning", "error": "agent_error"}
COMPACTION_WORDS = {"in_progress": "compacting the context…", "completed": "context compacted",
                    "failed": "context compaction failed",
                    "cancelled": "context compaction cancelled"}


def compaction_text(record: Compaction) -> str:
    """What became of a compaction, in words (and why it failed)."""
    what = COMPACTION_WORDS.get(record.status,
                                f"context compaction: {' '.join(record.status.split())[:40]}")
    return what + (f": {' '.join(record.error.split())[:300]}" if record.error else "")


def apply(content: Entries, kind: str, raw: dict[str, Any]) -> list[Event] | str:
    """Apply one unstable update: its events, or why it is malformed."""
    if kind == "plan_update":
        return _plan_update(content, raw.get("plan"))
    if kind == "plan_removed":
        plan_id = _ident(raw.get("planId"))
        if plan_id is None:
            return "plan_removed without a planId"
        if content.id_plans.pop(plan_id, None) is None:
            return []  # an unknown plan: nothing shows it
        _forget_size(content, plan_id)
        return [PlanUpdated(content.session_id, plan_id, None)]
    if kind == "notice":
        notice = notice_of(raw, content.bounds.max_content_bytes)
        if notice is None:
            return "notice without a title"
        return [NoticeAdded(content.session_id, content.push(notice), notice)]
    compaction_id = _ident(raw.get("compactionId"))
    if compaction_id is None:
        return f"{kind} without a compactionId"
    if kind == "compaction_update":
        return _compaction(content, compaction_id, raw)
    return _summary_chunk(content, compaction_id, raw.get("content"))


def _forget_size(content: Entries, plan_id: str) -> None:
    """A plan gone: its bytes and its name in the size table (ids come and go)."""
    content.replace_size(f"plan {plan_id}", 0)
    content.sizes.pop(f"plan {plan_id}", None)


def _ident(value: Any) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS else None


def _bounded_text(value: str, limit: int) -> str:
    if text_bytes(value) <= limit:
        return value
    cut = value.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
    return cut + f"\n[… cut: over the {limit}-byte limit]"


def _plan_update(content: Entries, plan: Any) -> list[Event] | str:
    if not isinstance(plan, dict):
        return "plan_update without a plan"
    plan_id, kind = _ident(plan.get("planId")), plan.get("type")
    if plan_id is None:
        return "plan_update without a planId"
    bounds = content.bounds
    old = content.id_plans.get(plan_id)
    anchor = old.anchor if old is not None else content.entries_dropped + len(content.entries)
    if kind == "items" and isinstance(plan.get("entries"), list):
        items = [e for e in plan["entries"] if isinstance(e, dict)]
        kept, size, _ = fit_items(items, bounds.max_content_bytes, bounds.max_list_items)
        new = IdPlan(plan_id, "items", anchor, entries=tuple(kept))
    elif kind == "markdown" and isinstance(plan.get("content"), str):
        text = _bounded_text(plan["content"], bounds.max_content_bytes)
        new, size = IdPlan(plan_id, "markdown", anchor, text=text), text_bytes(text)
    elif kind == "file" and isinstance(plan.get("uri"), str):
        text = _bounded_text(plan["uri"], 4096)
        new, size = IdPlan(plan_id, "file", anchor, text=text), text_bytes(text)
    else:
        return f"plan_update of an unknown kind {str(kind)[:40]!r} or without its content"
    plans: OrderedDict[str, IdPlan] = content.id_plans
    events: list[Event] = []
    if old is None and len(plans) >= MAX_PLANS:
        oldest, _ = plans.popitem(last=False)
        _forget_size(content, oldest)
        events.append(PlanUpdated(content.session_id, oldest, None))
    plans[plan_id] = new
    content.replace_size(f"plan {plan_id}", size + len(plan_id))
    events.append(PlanUpdated(content.session_id, plan_id, new))
    return events


def notice_of(raw: Mapping[str, Any], max_bytes: int) -> Notice | None:
    """A `notice` as a transcript notice: `title`, then its `description` below."""
    title = raw.get("title")
    if not isinstance(title, str) or not title.strip():
        return None
    severity = raw.get("severity")
    kind = NOTICE_KINDS.get(severity if isinstance(severity, str) else "", "agent_info")
    text = " ".join(title.split())[:MAX_TITLE_CHARS]
    if isinstance(severity, str) and severity not in NOTICE_KINDS:
        text = f"{' '.join(severity.split())[:40]}: {text}"  # the agent's own severity
    description = raw.get("description")
    if isinstance(description, str) and description.strip():
        text += "\n" + _bounded_text(description.strip(), min(max_bytes, MAX_TEXT_BYTES))
    return Notice(kind, text)


def _record(content: Entries, compaction_id: str) -> tuple[Compaction, list[Event]]:
    """The compaction's record, made (its entry pushed) when it is new."""
    record = content.compactions.get(compaction_id)
    if record is not None:
        return record, []
    while len(content.compactions) >= MAX_COMPACTIONS:
        _, dropped = content.compactions.popitem(last=False)
        content.grow(-dropped.size)
    record = content.compactions[compaction_id] = Compaction(compaction_id, "in_progress")
    record.index = content.push(CompactionRef(compaction_id))
    content.grow(record.size)
    return record, [CompactionChanged(content.session_id, compaction_id, True)]


def _compaction(content: Entries, compaction_id: str,
                raw: Mapping[str, Any]) -> list[Event] | str:
    status = raw.get("status")
    if not isinstance(status, str) or not status or len(status) > 40:
        return "compaction_update without a status"
    record, events = _record(content, compaction_id)
    before = record.size
    record.status = status
    limit = content.bounds.max_content_bytes
    if "summary" in raw:
        summary = raw["summary"]
        record.summary = _bounded_text(_blocks_text(summary), limit) \
            if isinstance(summary, list) else ""
    if "error" in raw:
        error = raw["error"]
        record.error = _bounded_text(error, MAX_TEXT_BYTES) if isinstance(error, str) else None
    content.grow(record.size - before)
    return events or [CompactionChanged(content.session_id, compaction_id, False)]


def _summary_chunk(content: Entries, compaction_id: str, block: Any) -> list[Event]:
    record, events = _record(content, compaction_id)
    before = record.size
    limit = content.bounds.max_content_bytes
    if text_bytes(record.summary) <= limit:  # past it: cut already, the marker says so
        record.summary = _bounded_text(record.summary + _blocks_text([block]), limit)
    content.grow(record.size - before)
    return events or [CompactionChanged(content.session_id, compaction_id, False)]


def _blocks_text(blocks: list[Any]) -> str:
    """The text of content blocks; another kind of block as a short label."""
    parts = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            parts.append(f"[{str(block.get('type'))[:40]} ({json_size(block, 1 << 20)} bytes)]")
    return "".join(parts)
