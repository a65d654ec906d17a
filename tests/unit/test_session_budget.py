"""`louise.session`: byte budgets (cut content leaves a visible marker), the bounded info
table, replays that re-send messages, prompt echoes, and what the editor reads from it."""

from __future__ import annotations

import json
from typing import Any

from louise.nvim.tool_text import tool_details
from louise.session import InfoChanged, Session, SessionBounds, SessionRenamed, ToolCallRef
from louise.storage import transcript
from tests.unit.test_session import (
    SID,
    agent_chunk,
    new_session,
    prompt,
    send,
    texts,
    tool_call,
    user_chunk,
)

MIB = 1024 * 1024


def kept_bytes(session: Session) -> int:
    """Measured apart from the model's own accounting: the JSON of what it keeps."""
    total = 0
    for record in session.tool_calls.values():
        for value in (record.title, record.content, record.locations, record.raw_input,
                      record.raw_output):
            total += len(json.dumps(value).encode())
    for message in session.messages():
        total += len(message.text.encode()) + len(json.dumps(message.blocks).encode())
    return total


# ----------------------------------------------------------------------------- budgets


def test_1500_tool_calls_with_1_mib_of_raw_input_stay_within_the_budget() -> None:
    session = new_session()
    big = {"file_path": "/projects/hello/data.bin", "content": "x" * MIB}
    for index in range(1500):
        send(session, tool_call(f"call-{index}", kind="edit", rawInput=big))
    budget = 64 * MIB  # the default session budget
    assert kept_bytes(session) <= budget, "1.5 GB of raw input is not kept"
    assert session.bounds.max_session_bytes == budget
    assert session.size_bytes <= budget
    assert kept_bytes(session) <= session.size_bytes + 64 * len(session.tool_calls)
    record = session.tool_calls["call-1499"]
    assert record.truncated == {"raw_input"}
    assert record.raw_input == \
        f"[… raw input not kept: over the {session.bounds.max_raw_bytes}-byte limit]"
    assert any("raw input not kept" in line for line in tool_details(record))


def test_the_session_budget_evicts_the_oldest_entries_and_says_so() -> None:
    bounds = SessionBounds(max_session_bytes=4 * MIB, max_content_bytes=MIB)
    session = new_session(bounds)
    item = {"type": "content", "content": {"type": "text", "text": "y" * (MIB // 2)}}
    for index in range(40):  # 20 MiB of tool output
        send(session, tool_call(f"call-{index}", content=[item]))
    assert session.size_bytes <= bounds.max_session_bytes
    assert kept_bytes(session) <= bounds.max_session_bytes
    assert session.entries_dropped > 0
    assert isinstance(session.entries[-1], ToolCallRef)
    assert session.entries[-1].tool_call_id == "call-39"
    assert f"*{session.entries_dropped} earlier entries were not kept*" in \
        transcript.to_markdown(session)


def test_tool_content_over_its_budget_keeps_what_fits_and_a_marker() -> None:
    bounds = SessionBounds(max_content_bytes=64 * 1024)
    session = new_session(bounds)
    item = {"type": "content", "content": {"type": "text", "text": "z" * 20_000}}
    send(session, tool_call("call-1", content=[item] * 10))
    record = session.tool_calls["call-1"]
    assert record.truncated == {"content"}
    assert record.content[:3] == [item] * 3
    marker = record.content[-1]["content"]["text"]
    assert marker == "[… 7 more content items not kept: over the 65536-byte limit]"
    assert marker in transcript.to_markdown(session)


def test_a_message_block_over_budget_becomes_a_flagged_stub() -> None:
    session = new_session(SessionBounds(max_content_bytes=1024))
    image = {"type": "image", "mimeType": "image/png", "data": "A" * 10_000}
    send(session, {"sessionUpdate": "agent_message_chunk", "content": image})
    message = session.messages()[0]
    assert message.truncated
    assert message.blocks == [{"type": "image", "mimeType": "image/png",
                               "truncated": "[… image content not kept: over the 1024-byte "
                                            "limit]"}]


def test_a_huge_unknown_update_is_kept_as_a_marker() -> None:
    session = new_session()
    send(session, {"sessionUpdate": "_vendor_dump", "payload": "p" * MIB})
    kind, raw = session.unknown_updates[-1]
    assert kind == "_vendor_dump"
    assert raw["truncated"] == "[… update not kept: over the 65536-byte limit]"
    assert session.size_bytes < 1024


# ----------------------------------------------------------------------------- info


def test_session_info_is_bounded_and_each_update_carries_only_its_change() -> None:
    session = new_session()
    for index in range(60_000):
        events = send(session, {"sessionUpdate": "session_info_update", f"_key{index}": index})
        assert len(session.info) <= 64, "the table is bounded (64 keys by default)"
        assert events == ([InfoChanged(SID, {f"_key{index}": index})] if index < 64 else []), \
            "an update carries its change, not a copy of the table"
    assert session.info_dropped == 60_000 - 64
    # A known key still updates when the table is full.
    assert send(session, {"sessionUpdate": "session_info_update", "_key0": "again"}) == \
        [InfoChanged(SID, {"_key0": "again"})]


def test_a_huge_info_value_is_cut_to_a_marker() -> None:
    session = new_session()
    send(session, {"sessionUpdate": "session_info_update", "title": "t" * MIB})
    assert session.info["title"] == "[… session info 'title' not kept: over the " \
                                    "16384-byte limit]"


# ----------------------------------------------------------------------------- replays


def test_a_replay_does_not_add_a_message_the_model_already_holds() -> None:
    session = new_session()
    prompt(session, "hello")
    send(session, agent_chunk("Hel", "m1"))
    send(session, agent_chunk("lo", "m1"))
    session.end_turn("end_turn")
    session.mark_starting()
    session.begin_replay()
    assert send(session, agent_chunk("Hello", "m1")) == []
    send(session, agent_chunk("New", "m2"))
    session.mark_ready()
    assert texts(session) == [("user", None, "hello"), ("agent", "m1", "Hello"),
                              ("agent", "m2", "New")]
    assert session.messages()[-1].replayed
    # Outside a replay, chunks of one messageId keep appending to their message.
    send(session, agent_chunk("!", "m2"))
    assert texts(session)[-1] == ("agent", "m2", "New!")


def test_a_prompt_the_agent_echoes_back_is_shown_once() -> None:
    session = new_session()
    prompt(session, "Fix the greeting")
    assert send(session, user_chunk("Fix the ", "u7")) == []
    assert send(session, user_chunk("greeting", "u7")) == []
    send(session, agent_chunk("Done.", "m7"))
    assert texts(session) == [("user", "u7", "Fix the greeting"), ("agent", "m7", "Done.")]


def test_a_user_chunk_that_is_not_the_prompt_is_a_message() -> None:
    session = new_session()
    prompt(session, "Fix the greeting")
    send(session, user_chunk("something else", "u8"))
    assert texts(session) == [("user", None, "Fix the greeting"),
                              ("user", "u8", "something else")]


def test_fresh_is_an_empty_model_of_the_same_session() -> None:
    session = Session(SID, "claude", "/projects/hello", SessionBounds(max_entries=7),
                      acp_id="acp-1")
    session.rename("mine")
    session.mark_ready()
    prompt(session)
    fresh = session.fresh()
    assert (fresh.session_id, fresh.acp_id, fresh.agent, fresh.cwd, fresh.name) == \
        (SID, "acp-1", "claude", "/projects/hello", "mine")
    assert fresh.bounds == session.bounds and fresh.turn == session.turn
    assert fresh.status == "starting" and not fresh.entries and fresh.size_bytes == 0


# ----------------------------------------------------------------------------- reading


OPTIONS: list[dict[str, Any]] = [
    {"id": "model", "name": "Model", "category": "model", "type": "select",
     "currentValue": "fast", "options": [
         {"group": "Fast", "name": "Fast", "options": [{"value": "fast", "name": "Fast"}]},
         {"value": "deep"}]},
    {"id": "mode", "name": "Mode", "category": "mode", "type": "select",
     "currentValue": "plan", "options": [{"value": "plan", "name": "Plan"}]},
    {"id": "web", "name": "Web search", "type": "boolean", "currentValue": True},
]


def test_option_choices_flatten_groups_and_offer_booleans_as_on_off() -> None:
    session = new_session()
    session.apply_setup({"availableModes": [], "currentModeId": "code"}, OPTIONS)
    assert session.option_choices() == [
        {"id": "model", "name": "Model", "current": "fast",
         "values": [{"value": "fast", "name": "Fast"}, {"value": "deep", "name": "deep"}]},
        {"id": "mode", "name": "Mode", "current": "plan",
         "values": [{"value": "plan", "name": "Plan"}]},
        {"id": "web", "name": "Web search", "current": True,
         "values": [{"value": True, "name": "on"}, {"value": False, "name": "off"}]},
    ]
    assert [c["id"] for c in session.option_choices("web")] == ["web"]
    assert (session.current_model, session.current_mode) == ("fast", "plan")


def test_the_mode_falls_back_to_the_legacy_current_mode_id() -> None:
    session = new_session()
    session.apply_setup({"availableModes": [{"id": "code", "name": "Code"}],
                         "currentModeId": "code"}, None)
    assert (session.current_model, session.current_mode) == (None, "code")


def test_rename_folds_whitespace_and_an_empty_name_clears() -> None:
    session = new_session()
    assert session.rename("  fix \n the  greeting ") == [SessionRenamed(SID, "fix the greeting")]
    assert session.rename("   ") == [SessionRenamed(SID, None)]
    assert session.name is None

