"""`louise.session.Session`: messages from chunks, the entry bound, tool calls (the other
`session/update` variants and the status machine: test_session_status.py).

Updates are raw camelCase payloads shaped like real agents' (acp-protocol-notes §3), parsed
with `parse_update` exactly as the registry does, so the model is tested behind the parser.
"""

from __future__ import annotations

from typing import Any

import pytest

from louise.acp.schema import parse_update
from louise.session import (
    Event,
    MessageChunk,
    MessageStarted,
    MessageTruncated,
    Notice,
    NoticeAdded,
    Session,
    SessionBounds,
    StatusChanged,
    ToolCall,
    ToolCallChanged,
    ToolCallRef,
)

SID = "ce69273e-0d0b-4bd4-9cf4-0d3a3e7f1a10"
CWD = "/projects/hello"


def new_session(bounds: SessionBounds | None = None, *, ready: bool = True) -> Session:
    session = Session(SID, "claude", CWD, bounds)
    if ready:
        session.mark_ready()
    return session


def send(session: Session, update: dict[str, Any]) -> list[Event]:
    return session.apply(parse_update(update))


def agent_chunk(text: str, message_id: str | None = None, *,
                kind: str = "agent_message_chunk") -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def thought_chunk(text: str, message_id: str | None = None) -> dict[str, Any]:
    return agent_chunk(text, message_id, kind="agent_thought_chunk")


def user_chunk(text: str, message_id: str | None = None) -> dict[str, Any]:
    return agent_chunk(text, message_id, kind="user_message_chunk")


def tool_call(tool_call_id: str, title: str = "Edit hello.py", **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call", "toolCallId": tool_call_id, "title": title, **fields}


def tool_update(tool_call_id: str, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, **fields}


def texts(session: Session) -> list[tuple[str, str | None, str]]:
    return [(m.role, m.message_id, m.text) for m in session.messages()]


def prompt(session: Session, text: str = "Say hi") -> list[Event]:
    return session.begin_turn([{"type": "text", "text": text}])


DIFF_NEW = {"type": "diff", "path": f"{CWD}/hello.py", "oldText": None,
            "newText": "print('hello')\n"}
DIFF_EDIT = {"type": "diff", "path": f"{CWD}/hello.py", "oldText": "print('hello')\n",
             "newText": "print('hello, world')\n"}


# ----------------------------------------------------------------------------- chunks


def test_chunks_with_one_message_id_form_one_message() -> None:
    session = new_session()
    first = send(session, agent_chunk("Hello, ", "m1"))
    second = send(session, agent_chunk("world", "m1"))

    assert first == [MessageStarted(SID, 0, "agent", "m1"),
                     MessageChunk(SID, 0, "agent", "Hello, ")]
    assert second == [MessageChunk(SID, 0, "agent", "world")]
    assert texts(session) == [("agent", "m1", "Hello, world")]
    assert session.messages()[0].chars == 12


def test_interleaved_message_ids_keep_their_own_messages() -> None:
    session = new_session()
    send(session, agent_chunk("a1 ", "m1"))
    send(session, agent_chunk("b1 ", "m2"))
    third = send(session, agent_chunk("a2", "m1"))
    send(session, agent_chunk("b2", "m2"))

    assert third == [MessageChunk(SID, 0, "agent", "a2")]
    assert texts(session) == [("agent", "m1", "a1 a2"), ("agent", "m2", "b1 b2")]


def test_a_new_message_id_starts_a_new_message() -> None:
    session = new_session()
    send(session, agent_chunk("first", "m1"))
    events = send(session, agent_chunk("second", "m2"))

    assert events == [MessageStarted(SID, 1, "agent", "m2"),
                      MessageChunk(SID, 1, "agent", "second")]
    assert texts(session) == [("agent", "m1", "first"), ("agent", "m2", "second")]


def test_the_same_id_in_two_roles_is_two_messages() -> None:
    session = new_session()
    send(session, thought_chunk("thinking", "x"))
    send(session, agent_chunk("answer", "x"))
    send(session, thought_chunk(" more", "x"))

    assert texts(session) == [("thought", "x", "thinking more"), ("agent", "x", "answer")]


def test_chunks_without_ids_join_while_the_role_stays_the_same() -> None:
    session = new_session()
    send(session, agent_chunk("Client sent:"))
    joined = send(session, agent_chunk(" Hello from probe"))
    send(session, thought_chunk("hmm"))
    send(session, thought_chunk("..."))
    send(session, agent_chunk("again"))

    assert joined == [MessageChunk(SID, 0, "agent", " Hello from probe")]
    assert texts(session) == [("agent", None, "Client sent: Hello from probe"),
                              ("thought", None, "hmm..."),
                              ("agent", None, "again")]


def test_a_tool_call_between_chunks_without_ids_splits_the_message() -> None:
    session = new_session()
    send(session, agent_chunk("Let me look."))
    send(session, tool_call("call-1", "Read hello.py", kind="read"))
    events = send(session, agent_chunk("Found it."))

    assert events == [MessageStarted(SID, 2, "agent", None),
                      MessageChunk(SID, 2, "agent", "Found it.")]
    assert texts(session) == [("agent", None, "Let me look."), ("agent", None, "Found it.")]
    assert list(session.entries)[1] == ToolCallRef("call-1")


def test_a_chunk_without_id_does_not_join_a_message_that_has_one() -> None:
    session = new_session()
    send(session, agent_chunk("with id", "m1"))
    send(session, agent_chunk("without"))
    send(session, agent_chunk(" id"))

    assert texts(session) == [("agent", "m1", "with id"), ("agent", None, "without id")]


def test_a_message_id_continues_its_message_across_a_tool_call() -> None:
    session = new_session()
    send(session, agent_chunk("before ", "m1"))
    send(session, tool_call("call-1"))
    events = send(session, agent_chunk("after", "m1"))

    assert events == [MessageChunk(SID, 0, "agent", "after")]
    assert texts(session) == [("agent", "m1", "before after")]


def test_the_echo_agents_meta_is_tolerated() -> None:
    session = new_session()
    events = send(session, {"content": {"text": "Hello from probe", "_meta": {"echo": True},
                                        "type": "text"},
                            "_meta": {"echo": True}, "sessionUpdate": "agent_message_chunk"})

    assert events[1] == MessageChunk(SID, 0, "agent", "Hello from probe")
    assert texts(session) == [("agent", None, "Hello from probe")]


def test_non_text_content_blocks_are_kept_raw() -> None:
    session = new_session()
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    link = {"type": "resource_link", "uri": "file:///projects/hello/a.py", "name": "a.py"}
    send(session, agent_chunk("See:", "m1"))
    image_events = send(session, {"sessionUpdate": "agent_message_chunk", "content": image,
                                  "messageId": "m1"})
    send(session, {"sessionUpdate": "agent_message_chunk", "content": link, "messageId": "m1"})

    assert image_events == [MessageChunk(SID, 0, "agent", "", image)]
    message = session.messages()[0]
    assert message.text == "See:"
    assert message.blocks == [image, link]
    assert message.chars == 4


def test_message_text_is_bounded_and_flagged_truncated() -> None:
    session = new_session(SessionBounds(max_message_chars=10))
    send(session, agent_chunk("12345678", "m1"))
    cut = send(session, agent_chunk("abcdef", "m1"))
    after = send(session, agent_chunk("zz", "m1"))

    # Said once, where it happens: nothing after it is kept, nothing more is said.
    assert cut == [MessageChunk(SID, 0, "agent", "ab"), MessageTruncated(SID, 0, "agent")]
    assert after == []
    message = session.messages()[0]
    assert (message.text, message.chars, message.truncated) == ("12345678ab", 10, True)


def test_a_single_oversized_chunk_is_cut_and_other_messages_are_not() -> None:
    session = new_session(SessionBounds(max_message_chars=3))
    send(session, agent_chunk("abcdef", "m1"))
    send(session, agent_chunk("xyz", "m2"))

    first, second = session.messages()
    assert (first.text, first.truncated) == ("abc", True)
    assert (second.text, second.truncated) == ("xyz", False)


def test_text_can_be_read_while_chunks_still_arrive() -> None:
    session = new_session()
    send(session, agent_chunk("a", "m1"))
    send(session, agent_chunk("b", "m1"))
    assert session.messages()[0].text == "ab"
    send(session, agent_chunk("c", "m1"))
    assert session.messages()[0].text == "abc"


def test_a_long_streamed_reply_is_held_compactly() -> None:
    """Issue 25 item 5: a reply streamed in small chunks costs about its text, not a string
    object per chunk (a 5 MB reply of 60-byte chunks took twice its size); its text is
    whole and in order, also when read while it streams."""
    import tracemalloc

    def chunk(i: int) -> str:  # a new string each time, as decoding a line makes one
        return f"{i:05d} " + "x" * 53 + "\n"

    session = new_session()
    count = 20_000  # 60 bytes each: 1.2 MB
    update = parse_update(agent_chunk("", "m1"))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            update.raw["content"] = {"type": "text", "text": chunk(i)}
            session.apply(update)
            if i == 5_000:
                assert session.messages()[0].text == "".join(map(chunk, range(5_001)))
        update.raw["content"] = {}
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    whole = "".join(map(chunk, range(count)))
    assert held < 1.2 * len(whole), f"{held / len(whole):.2f} x the text"
    assert session.messages()[0].text == whole


# ----------------------------------------------------------------------------- entry bound


def test_the_entry_bound_evicts_the_oldest_and_keeps_absolute_indexes() -> None:
    session = new_session(SessionBounds(max_entries=3))
    started = [send(session, agent_chunk(f"text {n}", f"m{n}"))[0] for n in range(5)]

    assert [event.index for event in started if isinstance(event, MessageStarted)] == \
        [0, 1, 2, 3, 4]
    assert session.entries_dropped == 2
    assert texts(session) == [("agent", "m2", "text 2"), ("agent", "m3", "text 3"),
                              ("agent", "m4", "text 4")]
    assert session.entry_index(session.entries[0]) == 2
    assert session.entry_index(session.entries[-1]) == 4
    # A kept message still gets its absolute index; an evicted id starts a new message.
    assert send(session, agent_chunk("+", "m2")) == [MessageChunk(SID, 2, "agent", "+")]
    assert send(session, agent_chunk("again", "m0"))[0] == MessageStarted(SID, 5, "agent", "m0")
    assert session.entries_dropped == 3
    assert texts(session)[-1] == ("agent", "m0", "again")
    notice = session.add_notice("info", "hello")
    assert notice == [NoticeAdded(SID, 6, Notice("info", "hello"))]


def test_entry_index_refuses_an_entry_that_is_not_kept() -> None:
    session = new_session(SessionBounds(max_entries=1))
    send(session, agent_chunk("old", "m1"))
    old = session.entries[0]
    send(session, agent_chunk("new", "m2"))
    with pytest.raises(ValueError, match="entry not in transcript"):
        session.entry_index(old)


# ----------------------------------------------------------------------------- tool calls


def test_tool_call_creates_the_record() -> None:
    session = new_session()
    events = send(session, tool_call(
        "call-1", "Edit hello.py", kind="edit", status="pending", content=[DIFF_NEW],
        locations=[{"path": f"{CWD}/hello.py", "line": 1}],
        rawInput={"file_path": f"{CWD}/hello.py"}))

    assert events == [ToolCallChanged(SID, "call-1", True, frozenset(
        {"title", "kind", "status", "content", "locations", "raw_input"}))]
    assert session.tool_calls["call-1"] == ToolCall(
        "call-1", title="Edit hello.py", kind="edit", status="pending", content=[DIFF_NEW],
        locations=[{"path": f"{CWD}/hello.py", "line": 1}],
        raw_input={"file_path": f"{CWD}/hello.py"})
    assert list(session.entries) == [ToolCallRef("call-1")]


def test_tool_call_defaults_status_pending_and_kind_other() -> None:
    session = new_session()
    events = send(session, tool_call("call-1", "Thinking"))

    assert events == [ToolCallChanged(SID, "call-1", True, frozenset({"title"}))]
    record = session.tool_calls["call-1"]
    assert (record.kind, record.status, record.display_status, record.finished) == \
        ("other", "pending", "pending", False)


def test_tool_call_for_a_known_id_replaces_the_record() -> None:
    session = new_session()
    send(session, tool_call("call-1", "Edit hello.py", kind="edit", status="in_progress",
                            content=[DIFF_NEW], rawInput={"a": 1}))
    events = send(session, tool_call("call-1", "Run tests", kind="execute"))

    assert events == [ToolCallChanged(SID, "call-1", False, frozenset({"title", "kind"}))]
    assert session.tool_calls["call-1"] == ToolCall("call-1", title="Run tests", kind="execute")
    assert list(session.entries) == [ToolCallRef("call-1")]  # no second entry


def test_tool_call_update_changes_only_the_fields_present() -> None:
    session = new_session()
    send(session, tool_call("call-1", "Edit hello.py", kind="edit", content=[DIFF_NEW],
                            locations=[{"path": f"{CWD}/hello.py"}], rawInput={"a": 1}))
    events = send(session, tool_update("call-1", status="in_progress"))

    assert events == [ToolCallChanged(SID, "call-1", False, frozenset({"status"}))]
    assert session.tool_calls["call-1"] == ToolCall(
        "call-1", title="Edit hello.py", kind="edit", status="in_progress", content=[DIFF_NEW],
        locations=[{"path": f"{CWD}/hello.py"}], raw_input={"a": 1})

    send(session, tool_update("call-1", status="completed", rawOutput={"ok": True}))
    record = session.tool_calls["call-1"]
    assert (record.status, record.raw_output, record.raw_input, record.finished) == \
        ("completed", {"ok": True}, {"a": 1}, True)


def test_content_and_locations_replace_rather_than_append() -> None:
    session = new_session()
    send(session, tool_call("call-1", content=[DIFF_NEW],
                            locations=[{"path": f"{CWD}/a.py", "line": 3}]))
    output = {"type": "content", "content": {"type": "text", "text": "done"}}
    events = send(session, tool_update("call-1", content=[DIFF_EDIT, output],
                                       locations=[{"path": f"{CWD}/b.py"}]))
    assert events == [ToolCallChanged(SID, "call-1", False,
                                      frozenset({"content", "locations"}))]
    assert session.tool_calls["call-1"].content == [DIFF_EDIT, output]
    assert session.tool_calls["call-1"].locations == [{"path": f"{CWD}/b.py"}]

    send(session, tool_update("call-1", content=[], locations=[]))
    assert (session.tool_calls["call-1"].content, session.tool_calls["call-1"].locations) == \
        ([], [])


def test_explicit_null_leaves_a_field_unchanged() -> None:
    session = new_session()
    send(session, tool_call("call-1", "Edit hello.py", kind="edit", status="in_progress",
                            content=[DIFF_NEW], locations=[{"path": "p"}], rawInput={"a": 1},
                            rawOutput={"b": 2}))
    before = ToolCall("call-1", title="Edit hello.py", kind="edit", status="in_progress",
                      content=[DIFF_NEW], locations=[{"path": "p"}], raw_input={"a": 1},
                      raw_output={"b": 2})
    events = send(session, tool_update("call-1", title=None, kind=None, status=None,
                                       content=None, locations=None, rawInput=None,
                                       rawOutput=None))

    assert events == [ToolCallChanged(SID, "call-1", False, frozenset())]
    assert session.tool_calls["call-1"] == before


def test_an_update_for_an_unknown_id_creates_the_record() -> None:
    session = new_session()
    events = send(session, tool_update("call-9", status="in_progress",
                                       content=[{"type": "terminal", "terminalId": "term-1"}]))

    assert events == [ToolCallChanged(SID, "call-9", True, frozenset({"status", "content"}))]
    assert session.tool_calls["call-9"] == ToolCall(
        "call-9", title="", kind="other", status="in_progress",
        content=[{"type": "terminal", "terminalId": "term-1"}])
    assert list(session.entries) == [ToolCallRef("call-9")]


def test_the_tool_call_bound_evicts_the_oldest_record() -> None:
    session = new_session(SessionBounds(max_tool_calls=2))
    for n in range(3):
        send(session, tool_call(f"call-{n}", f"Step {n}"))

    assert list(session.tool_calls) == ["call-1", "call-2"]
    assert list(session.entries) == [ToolCallRef("call-0"), ToolCallRef("call-1"),
                                     ToolCallRef("call-2")]
    # An update for the evicted id is an update for an unknown id: it creates it again.
    events = send(session, tool_update("call-0", status="completed"))
    assert events == [ToolCallChanged(SID, "call-0", True, frozenset({"status"}))]
    assert list(session.tool_calls) == ["call-2", "call-0"]
    assert session.tool_calls["call-0"].title == ""


def test_the_tool_call_bound_also_bounds_the_turns_tool_call_ids() -> None:
    session = new_session(SessionBounds(max_tool_calls=2))
    prompt(session)
    for n in range(50):
        send(session, tool_call(f"call-{n}"))

    assert len(session.turn_tool_call_ids) == 2  # not 50: nothing an agent sends is unbounded
    events = session.request_cancel()
    assert events == [ToolCallChanged(SID, "call-48", False, frozenset({"status"})),
                      ToolCallChanged(SID, "call-49", False, frozenset({"status"})),
                      StatusChanged(SID, "prompting", "cancelling")]
