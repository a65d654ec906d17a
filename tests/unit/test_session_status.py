"""`louise.session.Session`: the `session/update` variants beyond messages and tool calls
(plan, commands, modes, config options, info, usage, unknown and invalid ones), and the
status machine (turns, permissions, cancels, failures, close, agent notes). Messages, the
entry bound and tool calls: test_session.py, whose helpers these tests use.
"""

from __future__ import annotations

from typing import Any

import pytest

from louise.session import (
    CommandsChanged,
    ConfigOptionsChanged,
    InfoChanged,
    Message,
    MessageChunk,
    MessageStarted,
    ModeChanged,
    Notice,
    NoticeAdded,
    PermissionPending,
    PermissionSettled,
    PlanChanged,
    Session,
    SessionBounds,
    StatusChanged,
    ToolCallChanged,
    TurnEnded,
    UnknownUpdate,
    UsageChanged,
)
from tests.unit.test_session import (
    DIFF_NEW,
    SID,
    agent_chunk,
    new_session,
    prompt,
    send,
    texts,
    tool_call,
    tool_update,
    user_chunk,
)

# ----------------------------------------------------------------------------- other variants


PLAN_1 = [{"content": "Read hello.py", "priority": "high", "status": "completed"},
          {"content": "Edit hello.py", "priority": "medium", "status": "in_progress"},
          {"content": "Run it", "priority": "low", "status": "pending"}]
PLAN_2 = [{"content": "Run it", "priority": "low", "status": "completed"}]


def test_plan_replaces_the_whole_plan() -> None:
    session = new_session()
    assert send(session, {"sessionUpdate": "plan", "entries": PLAN_1}) == \
        [PlanChanged(SID, tuple(PLAN_1))]
    assert send(session, {"sessionUpdate": "plan", "entries": PLAN_2}) == \
        [PlanChanged(SID, tuple(PLAN_2))]
    assert session.plan == PLAN_2
    send(session, {"sessionUpdate": "plan", "entries": []})
    assert session.plan == []


def test_available_commands_update_replaces_the_list() -> None:
    session = new_session()
    first: list[dict[str, Any]] = [
        {"name": "compact", "description": "Compact the history",
         "input": {"hint": "instructions"}},
        {"name": "help", "description": "Show help", "input": None}]
    second = [{"name": "init", "description": "Create CLAUDE.md", "input": None}]
    assert send(session, {"sessionUpdate": "available_commands_update",
                          "availableCommands": first}) == [CommandsChanged(SID, tuple(first))]
    send(session, {"sessionUpdate": "available_commands_update", "availableCommands": second})
    assert session.commands == second


def test_setup_modes_then_current_mode_update_uses_current_mode_id() -> None:
    session = new_session(ready=False)
    modes = {"currentModeId": "default",
             "availableModes": [{"id": "default", "name": "Default"},
                                {"id": "plan", "name": "Plan Mode"}]}
    options = [{"id": "model", "name": "Model", "category": "model", "type": "select",
                "currentValue": "sonnet", "options": [{"value": "sonnet", "name": "Sonnet"}]}]
    assert session.apply_setup(modes, options) == [ModeChanged(SID, "default"),
                                                   ConfigOptionsChanged(SID, tuple(options))]
    assert session.modes == modes["availableModes"]

    events = send(session, {"sessionUpdate": "current_mode_update", "currentModeId": "plan"})
    assert events == [ModeChanged(SID, "plan")]
    assert session.current_mode_id == "plan"


def test_current_mode_update_with_the_docs_modeid_spelling_is_kept_raw() -> None:
    session = new_session()
    session.apply_setup({"currentModeId": "default", "availableModes": []}, None)
    raw = {"sessionUpdate": "current_mode_update", "modeId": "plan"}
    events = send(session, raw)

    assert events == [UnknownUpdate(SID, "current_mode_update", raw,
                                    "currentModeId: Field required")]
    assert session.current_mode_id == "default"
    assert list(session.unknown_updates) == [("current_mode_update", raw)]


def test_config_option_update_replaces_the_complete_set() -> None:
    session = new_session()
    session.apply_setup(None, [{"id": "mode", "name": "Mode", "type": "select",
                                "currentValue": "ask", "options": []},
                               {"id": "model", "name": "Model", "type": "select",
                                "currentValue": "a", "options": []}])
    updated = [{"id": "model", "name": "Model", "type": "select", "currentValue": "b",
                "options": [{"value": "b", "name": "B"}]}]
    events = send(session, {"sessionUpdate": "config_option_update", "configOptions": updated})

    assert events == [ConfigOptionsChanged(SID, tuple(updated))]
    assert session.config_options == updated


def test_session_info_update_merges_partially_and_null_clears() -> None:
    session = new_session()
    first = send(session, {"sessionUpdate": "session_info_update", "title": "Fix greeting",
                           "updatedAt": "2026-08-22T10:00:00Z"})
    assert first == [InfoChanged(SID, {"title": "Fix greeting",
                                       "updatedAt": "2026-08-22T10:00:00Z"})]

    send(session, {"sessionUpdate": "session_info_update", "updatedAt": "2026-08-22T11:00:00Z"})
    assert session.info == {"title": "Fix greeting", "updatedAt": "2026-08-22T11:00:00Z"}

    cleared = send(session, {"sessionUpdate": "session_info_update", "title": None})
    assert cleared == [InfoChanged(SID, {"title": None})], "only the change travels"
    assert session.info == {"updatedAt": "2026-08-22T11:00:00Z"}


def test_usage_update_with_cost_and_without() -> None:
    session = new_session(ready=False)
    # vibe sends one before the session/new reply, with counters of its own in _meta
    events = send(session, {"used": 0, "size": 209715,
                            "_meta": {"steps": 0, "promptTokens": 0},
                            "sessionUpdate": "usage_update"})
    assert events == [UsageChanged(SID, 0, 209715, None)]

    events = send(session, {"sessionUpdate": "usage_update", "used": 1200, "size": 1000000,
                            "cost": {"amount": 0.25, "currency": "USD"}})
    assert events == [UsageChanged(SID, 1200, 1000000, {"amount": 0.25, "currency": "USD"})]

    send(session, {"sessionUpdate": "usage_update", "used": 1500, "size": 1000000})
    assert (session.usage_used, session.usage_size, session.cost) == \
        (1500, 1000000, {"amount": 0.25, "currency": "USD"})


def test_an_unknown_variant_is_kept_raw_without_an_error() -> None:
    session = new_session()
    raw = {"sessionUpdate": "plan_upsert", "planId": "p1", "items": []}
    assert send(session, raw) == [UnknownUpdate(SID, "plan_upsert", raw, None)]
    assert list(session.unknown_updates) == [("plan_upsert", raw)]
    assert session.plan == []


def test_kept_raw_updates_are_bounded_to_the_newest() -> None:
    session = new_session(SessionBounds(max_unknown_updates=2))
    for n in range(4):
        send(session, {"sessionUpdate": f"future_{n}"})
    assert [kind for kind, _ in session.unknown_updates] == ["future_2", "future_3"]


@pytest.mark.parametrize(("raw", "error"), [
    ({"sessionUpdate": "tool_call_update", "status": "completed"}, "toolCallId: Field required"),
    ({"sessionUpdate": "plan"}, "entries: Field required"),
    ({"sessionUpdate": "agent_message_chunk", "messageId": "m1"}, "content: Field required"),
    ({"sessionUpdate": "available_commands_update", "availableCommands": "help"},
     "availableCommands: Input should be a valid list"),
])
def test_an_invalid_known_variant_is_kept_raw_with_its_error(raw: dict[str, Any],
                                                              error: str) -> None:
    session = new_session()
    events = send(session, raw)

    assert events == [UnknownUpdate(SID, raw["sessionUpdate"], raw, error)]
    assert list(session.unknown_updates) == [(raw["sessionUpdate"], raw)]
    assert (list(session.entries), dict(session.tool_calls), session.plan, session.commands) \
        == ([], {}, [], [])


def test_an_update_that_is_not_an_object_is_kept_raw() -> None:
    session = new_session()
    assert send(session, "junk") == [UnknownUpdate(SID, "", {"value": "junk"},  # type: ignore[arg-type]
                                                   "update is not an object")]


# ----------------------------------------------------------------------------- status machine


def test_a_new_session_starts_then_becomes_ready_once() -> None:
    session = new_session(ready=False)
    assert session.status == "starting"
    assert session.mark_ready() == [StatusChanged(SID, "starting", "ready")]
    assert session.mark_ready() == []
    assert session.status == "ready"  # type: ignore[comparison-overlap]  # mypy narrowed it


def test_begin_turn_records_the_prompt_and_starts_prompting() -> None:
    session = new_session()
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    events = session.begin_turn([{"type": "text", "text": "What is in "}, image,
                                 {"type": "text", "text": "this picture?"}])

    assert events == [MessageStarted(SID, 0, "user", None),
                      MessageChunk(SID, 0, "user", "What is in "),
                      MessageChunk(SID, 0, "user", "", image),
                      MessageChunk(SID, 0, "user", "this picture?"),
                      StatusChanged(SID, "ready", "prompting")]
    message = session.messages()[0]
    assert (message.text, message.blocks, message.replayed) == \
        ("What is in this picture?", [image], False)
    assert (session.turn, session.status) == (1, "prompting")


@pytest.mark.parametrize("status", ["starting", "prompting", "closed", "error"])
def test_begin_turn_refuses_unless_ready(status: str) -> None:
    session = new_session(ready=False)
    if status == "prompting":
        session.mark_ready()
        prompt(session)
    elif status == "closed":
        session.close()
    elif status == "error":
        session.fail("agent exited with status 1")
    with pytest.raises(RuntimeError, match=f"^cannot prompt a session that is {status}$"):
        prompt(session)
    assert session.turn == (1 if status == "prompting" else 0)


def test_a_turn_through_a_permission_and_back() -> None:
    session = new_session()
    prompt(session, "Create hello.py")
    send(session, tool_call("call-1", "Edit hello.py", kind="edit", content=[DIFF_NEW]))

    assert session.permission_pending(7, "call-1") == [
        PermissionPending(SID, 7, "call-1", 1),
        StatusChanged(SID, "prompting", "waiting_permission")]
    assert session.permission_pending(8, None) == [PermissionPending(SID, 8, None, 2)]
    assert session.permission_settled(7, "selected:allow-once") == [
        PermissionSettled(SID, 7, "selected:allow-once", 1)]
    assert session.status == "waiting_permission"
    assert session.permission_settled(8, "selected:reject-once") == [
        PermissionSettled(SID, 8, "selected:reject-once", 0),
        StatusChanged(SID, "waiting_permission", "prompting")]

    send(session, tool_update("call-1", status="completed"))
    send(session, agent_chunk("Created hello.py."))
    assert session.end_turn("end_turn") == [TurnEnded(SID, "end_turn"),
                                            StatusChanged(SID, "prompting", "ready")]
    assert (session.status, session.last_stop_reason) == ("ready", "end_turn")
    assert all(not isinstance(entry, Notice) for entry in session.entries)


def test_end_turn_without_a_stop_reason_or_error_is_end_turn() -> None:
    session = new_session()
    prompt(session)
    assert session.end_turn(None)[0] == TurnEnded(SID, "end_turn")


def _cancel_scene() -> Session:
    """An earlier turn left `old` unfinished; this turn has one tool call in every status."""
    session = new_session()
    prompt(session, "first")
    send(session, tool_call("old", "Old step", status="in_progress"))
    session.end_turn("end_turn")
    prompt(session, "second")
    send(session, tool_call("pending", "Write a.py", kind="edit"))
    send(session, tool_call("running", "Run tests", kind="execute", status="in_progress"))
    send(session, tool_call("done", "Read a.py", kind="read", status="completed"))
    send(session, tool_call("broken", "Fetch", kind="fetch", status="failed"))
    session.permission_pending(1, "pending")
    return session


def test_cancel_marks_only_this_turns_unfinished_tool_calls_at_once() -> None:
    session = _cancel_scene()
    events = session.request_cancel()

    assert events == [ToolCallChanged(SID, "pending", False, frozenset({"status"})),
                      ToolCallChanged(SID, "running", False, frozenset({"status"})),
                      StatusChanged(SID, "waiting_permission", "cancelling")]
    shown = {tool_call_id: record.display_status
             for tool_call_id, record in session.tool_calls.items()}
    assert shown == {"old": "in_progress", "pending": "cancelled", "running": "cancelled",
                     "done": "completed", "broken": "failed"}
    assert session.tool_calls["running"].status == "in_progress"  # the agent's value is kept
    assert session.cancel_requested is True
    assert session.request_cancel() == []  # already cancelling
    # The agent re-sending `tool_call` for a cancelled call does not undo the cancel.
    send(session, tool_call("pending", "Write a.py", kind="edit"))
    assert session.tool_calls["pending"].display_status == "cancelled"


def test_updates_keep_being_accepted_after_cancel_and_an_error_reply_counts_as_cancelled(
) -> None:
    session = _cancel_scene()
    session.request_cancel()

    assert session.permission_settled(1, "cancelled") == [PermissionSettled(SID, 1, "cancelled",
                                                                            0)]
    assert session.status == "cancelling"
    send(session, tool_update("running", status="completed"))
    send(session, agent_chunk("Stopping."))
    send(session, tool_call("late", "Late step"))
    assert session.tool_calls["running"].display_status == "completed"
    assert texts(session)[-1] == ("agent", None, "Stopping.")

    events = session.end_turn(None, "Internal error")
    notice_index = session.entries_dropped + len(session.entries) - 1
    assert events == [ToolCallChanged(SID, "late", False, frozenset({"status"})),
                      NoticeAdded(SID, notice_index, Notice("cancelled", "cancelled")),
                      TurnEnded(SID, "cancelled"),
                      StatusChanged(SID, "cancelling", "ready")]
    assert (session.last_stop_reason, session.cancel_requested, session.error) == \
        ("cancelled", False, None)
    assert session.tool_calls["late"].display_status == "cancelled"
    assert session.tool_calls["old"].display_status == "in_progress"


def test_a_turn_louise_cancelled_for_silence_ends_as_an_error_that_says_why() -> None:
    session = _cancel_scene()
    session.request_cancel()
    events = session.end_turn(None, "claude made no progress for 300 s", timed_out=True)
    assert TurnEnded(SID, "error", "claude made no progress for 300 s") in events
    assert session.last_stop_reason == "error" and session.status == "ready"
    assert session.entries[-1] == Notice("error", "claude made no progress for 300 s")


def test_cancel_when_no_turn_runs_does_nothing() -> None:
    session = new_session()
    assert session.request_cancel() == []
    assert session.cancel_requested is False


def test_an_error_without_a_cancel_is_an_error() -> None:
    session = new_session()
    prompt(session)
    events = session.end_turn(None, "claude: Authentication required")

    assert events == [NoticeAdded(SID, 1, Notice("error", "claude: Authentication required")),
                      TurnEnded(SID, "error", "claude: Authentication required"),
                      StatusChanged(SID, "prompting", "ready")]
    # claude sends a usage_update after the error reply: accepted
    send(session, {"sessionUpdate": "usage_update", "used": 0, "size": 1000000,
                   "cost": {"amount": 0, "currency": "USD"}})
    assert (session.usage_used, session.cost) == (0, {"amount": 0, "currency": "USD"})


@pytest.mark.parametrize(("reason", "text"), [
    ("refusal", "the agent refused; this prompt and what followed are not in its context"),
    ("max_tokens", "stopped: the model reached its token limit"),
    ("max_turn_requests", "stopped: the turn reached its request limit"),
])
def test_stop_reasons_that_need_telling_add_a_notice(reason: str, text: str) -> None:
    session = new_session()
    prompt(session)
    send(session, agent_chunk("partial"))
    events = session.end_turn(reason)

    assert events == [NoticeAdded(SID, 2, Notice("stop", text)), TurnEnded(SID, reason),
                      StatusChanged(SID, "prompting", "ready")]
    assert session.last_stop_reason == reason


def test_fail_marks_in_flight_tool_calls_failed_and_the_session_error() -> None:
    session = _cancel_scene()
    events = session.fail("agent exited with status 1; stderr: boom")

    assert events == [ToolCallChanged(SID, "pending", False, frozenset({"status"})),
                      ToolCallChanged(SID, "running", False, frozenset({"status"})),
                      StatusChanged(SID, "waiting_permission", "error",
                                    "agent exited with status 1; stderr: boom")]
    statuses = {tool_call_id: record.status for tool_call_id, record in session.tool_calls.items()}
    assert statuses == {"old": "in_progress", "pending": "failed", "running": "failed",
                        "done": "completed", "broken": "failed"}
    assert (session.status, session.error) == ("error", "agent exited with status 1; stderr: boom")

    # The registry then ends the turn with the same error: the status stays error.
    events = session.end_turn(None, "connection closed")
    assert [type(event) for event in events] == [NoticeAdded, TurnEnded]
    assert session.status == "error"

    assert session.mark_ready() == [StatusChanged(SID, "error", "ready")]
    assert session.error is None


def test_fail_outside_a_turn_only_changes_the_status() -> None:
    session = new_session()
    send(session, tool_call("call-1", status="in_progress"))
    assert session.fail("session/load failed: boom") == [
        StatusChanged(SID, "ready", "error", "session/load failed: boom")]
    assert session.tool_calls["call-1"].status == "in_progress"


def test_close_ends_the_session() -> None:
    session = new_session()
    prompt(session)
    session.permission_pending(3, None)
    assert session.close() == [StatusChanged(SID, "waiting_permission", "closed")]
    assert session.close() == []
    # A reply that arrives after the close ends the turn but does not reopen the session.
    assert session.end_turn("end_turn") == [TurnEnded(SID, "end_turn")]
    assert session.status == "closed"
    with pytest.raises(RuntimeError, match="closed"):
        prompt(session)


def test_the_replay_of_a_load_is_flagged_until_ready() -> None:
    session = new_session(ready=False)
    session.begin_replay()
    session.mark_starting()
    send(session, user_chunk("Create hello.py"))
    send(session, agent_chunk("Done.", "m1"))
    send(session, tool_call("call-1", status="completed"))
    assert session.mark_ready() == [StatusChanged(SID, "starting", "ready")]
    send(session, agent_chunk("live", "m2"))
    prompt(session, "next")

    assert [(m.role, m.text, m.replayed) for m in session.messages()] == [
        ("user", "Create hello.py", True), ("agent", "Done.", True),
        ("agent", "live", False), ("user", "next", False)]
    assert session.replaying is False


def test_events_carry_the_session_id_and_messages_are_messages() -> None:
    session = new_session()
    events = [*prompt(session), *send(session, agent_chunk("x")), *session.end_turn(None)]
    assert {event.session_id for event in events} == {SID}
    assert all(isinstance(entry, Message) for entry in session.entries)


def test_agent_notes_are_read_from_codex_and_air_shapes_and_end_with_progress() -> None:
    from louise.session import AgentNoted
    from louise.session.agent_notes import is_progress, note_of

    codex = {"sessionUpdate": "session_info_update", "_meta": {"codex": {"error": {
        "message": "Reconnecting...\n 2/5", "additionalDetails": "secret", "willRetry": True}}}}
    air = {"sessionUpdate": "session_info_update", "_meta": {"jetbrains": {"air": {
        "sessionFailure": {"title": "Reconnecting to Claude, attempt 1 of 10.",
                           "severity": "warning"}}}}}
    assert note_of(codex) == "Reconnecting... 2/5"
    assert note_of(air) == "Reconnecting to Claude, attempt 1 of 10."
    assert note_of({"sessionUpdate": "session_info_update", "title": "x"}) is None
    assert note_of({"_meta": {"codex": {"threadStatus": "active"}}}) is None
    assert len(note_of({"_meta": {"codex": {"error": {"message": "x" * 10_000}}}}) or "") == 200
    assert not is_progress("session_info_update") and not is_progress("usage_update")
    assert is_progress("agent_message_chunk") and is_progress("tool_call_update")

    session = new_session()
    session.begin_turn([{"type": "text", "text": "hi"}])
    events = send(session, (codex))
    assert AgentNoted(SID, "Reconnecting... 2/5") in events
    assert session.agent_note == "Reconnecting... 2/5"
    assert "secret" not in str(events[-1])
    events = send(session, ({"sessionUpdate": "agent_message_chunk",
                                   "content": {"type": "text", "text": "back"}}))
    assert events[0] == AgentNoted(SID, None) and session.agent_note is None
    send(session, (codex))
    session.end_turn("end_turn")
    assert session.agent_note is None


# ---- another window's turn, watched through the session host


def test_a_watched_turn_runs_from_ready_and_ends_at_its_end() -> None:
    session = new_session()
    assert session.watch_turn() == [StatusChanged(SID, "ready", "prompting")]
    assert session.watching and session.in_turn
    assert session.request_cancel() == [StatusChanged(SID, "prompting", "cancelling")]
    assert session.end_watched_turn() == [StatusChanged(SID, "cancelling", "ready")]
    assert not session.watching and not session.cancel_requested
    assert session.end_watched_turn() == []  # a second end changes nothing


def test_a_session_prompting_itself_or_starting_is_not_watching() -> None:
    session = new_session()
    prompt(session)
    assert session.watch_turn() == [] and not session.watching
    assert session.end_watched_turn() == [] and session.status == "prompting"
    starting = new_session(ready=False)
    assert starting.watch_turn() == [] and starting.status == "starting"


def test_a_watched_turn_never_outlives_a_failure_or_its_own_prompt() -> None:
    session = new_session()
    session.watch_turn()
    session.fail("the session host closed the connection")
    assert not session.watching and session.status == "error"
    mine = new_session()
    mine.watch_turn()
    mine.end_watched_turn()
    prompt(mine)
    assert not mine.watching
    assert mine.end_watched_turn() == [] and mine.status == "prompting"
