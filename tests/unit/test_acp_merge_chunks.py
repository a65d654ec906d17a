"""Chunks of one message read at once are handled as one (louise/acp/handlers.py)."""

from __future__ import annotations

from typing import Any

from louise.acp.handlers import merge_chunks
from louise.acp.rpc_events import Notification


def chunk(text: str, *, session: str = "s1", kind: str = "agent_message_chunk",
          message_id: str | None = None, **extra: Any) -> Notification:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    update.update(extra)
    return Notification("session/update", {"sessionId": session, "update": update})


def texts(events: list[Notification]) -> list[tuple[str, str]]:
    return [(e.params["update"]["sessionUpdate"], e.params["update"]["content"]["text"])
            for e in events]


def test_consecutive_chunks_of_one_message_become_one() -> None:
    merged = merge_chunks([chunk("a"), chunk("b"), chunk("c", kind="agent_thought_chunk"),
                           chunk("d", kind="agent_thought_chunk")])
    assert texts(merged) == [("agent_message_chunk", "ab"), ("agent_thought_chunk", "cd")]
    assert merged[0].params == {"sessionId": "s1", "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ab"}}}


def test_other_sessions_messages_and_updates_keep_their_place_and_order() -> None:
    tool = Notification("session/update", {"sessionId": "s1", "update": {
        "sessionUpdate": "tool_call", "toolCallId": "t1"}})
    events = [chunk("a", message_id="m1"), chunk("b", message_id="m1"),
              chunk("c", message_id="m2"), chunk("x", session="s2"), tool, chunk("d"),
              Notification("_vendor/thing", {}), chunk("e")]
    merged = merge_chunks(events)
    assert [e.params.get("sessionId") for e in merged] == ["s1", "s1", "s2", "s1", "s1",
                                                           None, "s1"]
    assert merged[0].params["update"]["messageId"] == "m1"
    assert merged[0].params["update"]["content"]["text"] == "ab"
    assert merged[1] is events[2] and merged[3] is tool and merged[6] is events[7]


def test_chunks_with_more_than_text_and_user_chunks_are_kept_as_they_came() -> None:
    annotated = chunk("a", annotations=None)
    meta = Notification("session/update", {"sessionId": "s1", "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "b"}},
        "_meta": {"x": 1}})
    image = Notification("session/update", {"sessionId": "s1", "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": ""}}})
    users = [chunk("u", kind="user_message_chunk"), chunk("v", kind="user_message_chunk")]
    events = [annotated, chunk("c"), meta, image, *users]
    assert merge_chunks(events) == events


def test_only_a_caller_that_asks_for_it_gets_merged_chunks() -> None:
    from louise.acp.handlers import ClientHandlers, Dispatcher

    events = [chunk("a"), chunk("b")]
    plain = Dispatcher(ClientHandlers(), "agent")
    assert plain.coalesce(events) == events  # the CLI: every chunk as the agent sent it
    merging = Dispatcher(ClientHandlers(merge_text_chunks=True), "agent")
    assert texts(merging.coalesce(events)) == [("agent_message_chunk", "ab")]
