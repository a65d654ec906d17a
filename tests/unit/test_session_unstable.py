"""The schema's unstable session updates in the session model: plans by id, notices and
context compactions, bounded, malformed ones kept raw with why."""

from __future__ import annotations

from typing import Any

from louise.session import (
    CompactionChanged,
    CompactionRef,
    IdPlan,
    NoticeAdded,
    PlanUpdated,
    SessionBounds,
    UnknownUpdate,
)
from louise.session.unstable import MAX_COMPACTIONS, MAX_PLANS
from tests.unit.test_session import SID, new_session, send


def items_plan(plan_id: str, *statuses: str) -> dict[str, Any]:
    return {"sessionUpdate": "plan_update", "plan": {
        "type": "items", "planId": plan_id,
        "entries": [{"content": f"step {n}", "priority": "medium", "status": status}
                    for n, status in enumerate(statuses, 1)]}}


def test_plans_by_id_are_replaced_whole_and_removed() -> None:
    session = new_session()
    (event,) = send(session, items_plan("a", "in_progress", "pending"))
    assert event == PlanUpdated(SID, "a", session.id_plans["a"])
    assert session.id_plans["a"].entries[0] == {"content": "step 1", "priority": "medium",
                                                "status": "in_progress"}
    send(session, {"sessionUpdate": "plan_update", "plan": {
        "type": "markdown", "planId": "b", "content": "## Notes\n- one"}})
    send(session, items_plan("a", "completed", "in_progress"))
    assert list(session.id_plans) == ["a", "b"]
    assert [e["status"] for e in session.id_plans["a"].entries] == ["completed", "in_progress"]
    assert session.id_plans["b"] == IdPlan("b", "markdown", 0, text="## Notes\n- one")
    size = session.size_bytes
    assert send(session, {"sessionUpdate": "plan_removed", "planId": "b"}) == \
        [PlanUpdated(SID, "b", None)]
    assert list(session.id_plans) == ["a"] and session.size_bytes < size
    assert send(session, {"sessionUpdate": "plan_removed", "planId": "never"}) == []
    assert session.plan == []  # the stable `plan` is another thing


def test_a_plan_keeps_where_it_first_showed() -> None:
    session = new_session()
    send(session, {"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": "hi"}})
    send(session, items_plan("a", "pending"))
    send(session, {"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": "more"}, "messageId": "m2"})
    send(session, {"sessionUpdate": "plan_update", "plan": {
        "type": "file", "planId": "a", "uri": "file:///tmp/plan.md"}})
    assert session.id_plans["a"] == IdPlan("a", "file", 1, text="file:///tmp/plan.md")


def test_plans_are_bounded_oldest_first() -> None:
    session = new_session()
    for n in range(MAX_PLANS):
        send(session, items_plan(f"p{n}", "pending"))
    events = send(session, items_plan("new", "pending"))
    assert events[0] == PlanUpdated(SID, "p0", None)
    assert len(session.id_plans) == MAX_PLANS and "p0" not in session.id_plans


def test_malformed_unstable_updates_are_kept_raw_with_why() -> None:
    session = new_session()
    cases = [
        ({"sessionUpdate": "plan_update", "plan": {"type": "items", "entries": []}},
         "plan_update without a planId"),
        ({"sessionUpdate": "plan_update", "plan": {"type": "slides", "planId": "x"}},
         "plan_update of an unknown kind 'slides' or without its content"),
        ({"sessionUpdate": "plan_removed"}, "plan_removed without a planId"),
        ({"sessionUpdate": "notice", "severity": "info", "title": "  "},
         "notice without a title"),
        ({"sessionUpdate": "compaction_update", "status": "completed"},
         "compaction_update without a compactionId"),
        ({"sessionUpdate": "compaction_update", "compactionId": "c", "status": 3},
         "compaction_update without a status"),
    ]
    for raw, why in cases:
        assert send(session, raw) == [UnknownUpdate(SID, raw["sessionUpdate"], raw, why)]
    assert not session.id_plans and not session.compactions and not session.entries


def test_a_notice_is_a_transcript_notice() -> None:
    session = new_session()
    (event,) = send(session, {"sessionUpdate": "notice", "severity": "warning",
                              "title": "MCP server \"x\"\nfailed to start",
                              "description": "Its tools are unavailable."})
    assert isinstance(event, NoticeAdded)
    assert (event.notice.kind, event.notice.text) == (
        "agent_warning", "MCP server \"x\" failed to start\nIts tools are unavailable.")
    (event,) = send(session, {"sessionUpdate": "notice", "severity": "_busy", "title": "Hm"})
    assert isinstance(event, NoticeAdded)
    assert (event.notice.kind, event.notice.text) == ("agent_info", "_busy: Hm")
    big = "x" * 100_000
    (event,) = send(session, {"sessionUpdate": "notice", "severity": "error", "title": big,
                              "description": big})
    assert isinstance(event, NoticeAdded) and len(event.notice.text) < 66_000


def test_a_compaction_is_placed_once_and_patched_in_place() -> None:
    session = new_session()
    events = send(session, {"sessionUpdate": "compaction_update", "compactionId": "c1",
                            "status": "in_progress"})
    assert events == [CompactionChanged(SID, "c1", True)]
    assert list(session.entries) == [CompactionRef("c1")]
    for text in ("The person wanted ", "a small change."):
        assert send(session, {"sessionUpdate": "compaction_summary_chunk",
                              "compactionId": "c1", "content": {"type": "text",
                                                                "text": text}}) == \
            [CompactionChanged(SID, "c1", False)]
    send(session, {"sessionUpdate": "compaction_update", "compactionId": "c1",
                   "status": "completed"})  # summary omitted: left as it is
    record = session.compactions["c1"]
    assert (record.status, record.summary, record.error) == (
        "completed", "The person wanted a small change.", None)
    send(session, {"sessionUpdate": "compaction_update", "compactionId": "c1",
                   "status": "completed", "summary": [{"type": "text", "text": "Short."},
                                                      {"type": "image", "data": "AAAA"}]})
    assert record.summary.startswith("Short.[image (")
    send(session, {"sessionUpdate": "compaction_update", "compactionId": "c1",
                   "status": "failed", "summary": None, "error": "too long"})
    assert (record.status, record.summary, record.error) == ("failed", "", "too long")
    assert list(session.entries) == [CompactionRef("c1")]  # still where it began
    # A chunk for a compaction not announced starts it.
    assert send(session, {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c2",
                          "content": {"type": "text", "text": "x"}}) == \
        [CompactionChanged(SID, "c2", True)]


def test_compactions_are_bounded_in_bytes_and_count() -> None:
    session = new_session(SessionBounds(max_content_bytes=1000))
    send(session, {"sessionUpdate": "compaction_update", "compactionId": "c",
                   "status": "in_progress"})
    for _ in range(50):
        send(session, {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c",
                       "content": {"type": "text", "text": "y" * 100}})
    summary = session.compactions["c"].summary
    assert summary.startswith("y" * 1000) and summary.endswith("over the 1000-byte limit]")
    assert len(summary) < 1100
    for n in range(MAX_COMPACTIONS + 5):
        send(session, {"sessionUpdate": "compaction_update", "compactionId": f"k{n}",
                       "status": "completed"})
    assert len(session.compactions) == MAX_COMPACTIONS
    before = session.size_bytes
    while session.entries:  # evicting the entries frees the records too
        session.drop_oldest()
    assert not session.compactions and session.size_bytes < before


def test_they_are_advertised_only_where_updates_are_taken() -> None:
    from louise.acp.handlers import ClientHandlers

    def take(_session_id: str, _update: Any) -> None:
        return None

    quiet = ClientHandlers().capabilities()
    assert "plan" not in quiet and "compaction" not in quiet.get("session", {})
    caps = ClientHandlers(on_update=take).capabilities()
    assert caps["plan"] == {}
    assert caps["session"] == {"configOptions": {"boolean": {}}, "compaction": {},
                               "notices": {}}
