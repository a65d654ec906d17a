"""The frame renderer: registry events to coalesced chat-buffer operations (pure)."""

from __future__ import annotations

from typing import Any

from louise.acp.schema import parse_update
from louise.nvim import chat_lines, render
from louise.nvim.render import ChatRenderer
from louise.session import Session, SessionBounds


def chunk(text: str, kind: str = "agent_message_chunk", message_id: str | None = None
          ) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id:
        update["messageId"] = message_id
    return update


class Harness:
    def __init__(self, bounds: SessionBounds | None = None) -> None:
        self.session = Session("demo:s1", "demo", "/ws", bounds=bounds)
        self.session.mark_ready()
        self.renderer = ChatRenderer(lambda key: self.session if key == "demo:s1" else None)

    def feed(self, *updates: dict[str, Any]) -> None:
        for update in updates:
            for event in self.session.apply(parse_update(update)):
                self.renderer.on_event(event)

    def batch(self) -> list[list[Any]]:
        ops: list[list[Any]] = self.renderer.take_batch(lambda s: {})["chats"].get("demo:s1", [])
        return ops


def test_unseen_sessions_get_no_ops_until_shown_then_one_reset() -> None:
    h = Harness()
    h.feed(chunk("hello "), chunk("world"))
    assert h.batch() == []
    h.renderer.attach("demo:s1")
    ops = h.batch()
    assert len(ops) == 1 and ops[0][0] == "reset"
    assert ops[0][1] == ["", "▌ demo", "hello world"]
    assert ops[0][2] == [["m0", "agent", 0, 3]]


def test_chunks_of_one_frame_coalesce_into_one_op() -> None:
    h = Harness()
    h.renderer.attach("demo:s1")
    h.batch()
    h.feed(*(chunk(f"{n} ") for n in range(1000)))
    ops = h.batch()
    # The new block carries all the text: one op for 1,000 chunks.
    assert len(ops) == 1 and ops[0][0] == "block"
    assert ops[0][3][-1] == "".join(f"{n} " for n in range(1000))
    h.feed(chunk("more\nlines"), chunk(" and more"))
    assert h.batch() == [["text", "m0", "more\nlines and more"]]


def test_a_message_cut_by_its_budget_shows_the_marker_as_it_streams() -> None:
    h = Harness(SessionBounds(max_message_chars=10))
    h.renderer.attach("demo:s1")
    h.batch()
    h.feed(chunk("12345678"))
    h.batch()
    h.feed(chunk("abcdef"), chunk("gh"))
    marker = "[… message truncated: too long to keep]"
    assert h.batch() == [["text", "m0", "ab\n" + marker]]
    # A full render shows it the same way.
    h.renderer.attach("demo:s1")
    ops = h.batch()
    assert ops[-1][0] == "reset" and ops[-1][1][-2:] == ["12345678ab", marker]


def test_interleaved_message_ids_append_to_their_own_blocks() -> None:
    h = Harness()
    h.renderer.attach("demo:s1")
    h.batch()
    h.feed(chunk("a", message_id="A"), chunk("t", "agent_thought_chunk", "T"),
           chunk("b", message_id="A"))
    h.batch()
    h.feed(chunk("c", message_id="A"), chunk("u", "agent_thought_chunk", "T"))
    assert h.batch() == [["text", "m0", "c"], ["text", "m1", "u"]]


def test_tool_call_updates_replace_the_pending_block_in_place() -> None:
    h = Harness()
    h.renderer.attach("demo:s1")
    h.batch()
    h.feed({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a", "kind": "read",
            "locations": [{"path": "/ws/a", "line": 3}]},
           {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    ops = h.batch()
    assert ops[0] == ["block", "ht1", "agent", ["", "▌ demo"]]  # the reply begins here
    ops = ops[1:]
    assert ops[0] == ["block", "tt1", "tool", ["  ● read: Read a · completed"]]
    assert ops[1][:2] == ["meta", "tt1"]
    assert ops[1][2]["locations"] == [{"path": "/ws/a", "line": 3}]
    assert ops[1][2]["terminals"] == []
    assert ops[1][2]["details"][:3] == ["    title: Read a",
                                        "    kind: read · status: completed",
                                        "    at /ws/a:3"]
    h.feed({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"})
    ops = h.batch()
    assert ops[0] == ["replace", "tt1", ["  ✗ read: Read a · failed"]]
    assert ops[1][0] == "meta" and "status: failed" in ops[1][2]["details"][1]


def test_terminal_exit_reaches_the_tool_line() -> None:
    h = Harness()
    h.renderer.attach("demo:s1")
    h.feed({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Run ls",
            "kind": "execute", "content": [{"type": "terminal", "terminalId": "term1"}]})
    h.batch()
    h.renderer.terminal_exited("demo:s1", "term1", "exit 3")
    assert h.batch()[0] == ["replace", "tt1", ["  ○ execute: Run ls · pending · exit 3"]]


def test_a_released_terminal_is_named_on_its_tool_line() -> None:
    """Issue 21 item 9: Neovim keeps a chat's newest terminals only; the tool line of an
    older one still says what ran and how it ended, and that its output is gone."""
    h = Harness()
    h.renderer.attach("demo:s1")
    h.feed({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Run ls",
            "kind": "execute", "content": [{"type": "terminal", "terminalId": "term1"}]})
    h.renderer.terminal_exited("demo:s1", "term1", "exit 0")
    h.batch()
    h.renderer.terminal_released("demo:s1", "term1")
    line = "  ○ execute: Run ls · pending · exit 0 · output not kept"
    assert h.batch()[0] == ["replace", "tt1", [line]]
    h.renderer.attach("demo:s1")
    assert line in h.batch()[0][1], "a full render says so too"


def test_the_plan_is_one_block_per_turn_replaced_in_place() -> None:
    h = Harness()
    h.renderer.attach("demo:s1")
    h.batch()
    entry = {"content": "step", "priority": "high", "status": "pending"}
    h.feed({"sessionUpdate": "plan", "entries": [entry]})
    h.batch()
    h.feed({"sessionUpdate": "plan", "entries": [{**entry, "status": "completed"}]})
    ops = h.batch()
    assert len(ops) == 1 and ops[0][0] == "replace" and ops[0][2][-1] == "- [x] step"


def test_pending_ops_are_bounded_when_neovim_stops_taking_frames() -> None:
    h = Harness()
    h.renderer.attach("demo:s1")
    h.batch()
    for n in range(render.MAX_PENDING_OPS + 50):
        h.feed({"sessionUpdate": "tool_call", "toolCallId": f"t{n}", "title": f"T{n}"})
    ops = h.batch()
    assert len(ops) <= render.MAX_PENDING_OPS + 1
    assert any(op[0] == "reset" for op in ops)


def test_a_full_render_cuts_a_long_line_like_streaming_does() -> None:
    h = Harness()
    line = "é" * 3000 + "x" * 5000  # 11,000 bytes, a two-byte character at a cut
    h.feed(chunk(line))
    h.renderer.attach("demo:s1")
    (op,) = h.batch()
    lines, blocks = op[1], op[2]
    assert blocks == [["m0", "agent", 0, len(lines)]]
    assert all(len(piece.encode()) <= chat_lines.MAX_LINE_BYTES for piece in lines)
    assert "".join(lines[2:]) == line and len(lines) == 2 + 3


def test_a_turns_changes_line_carries_its_review_live_and_after_a_full_render() -> None:
    """The line a checkpoint adds after a turn ("± 3 files changed (+12 −4) · review"):
    <CR> on it opens that turn's review, so its block has the turn as metadata."""
    h = Harness()
    h.renderer.attach("demo:s1")
    h.batch()
    review = {"review": {"seq": 7, "turn": 2}}
    for event in h.session.add_notice("changes", "3 files changed (+12 −4) · review", review):
        h.renderer.on_event(event)
    assert h.batch() == [["block", "n0", "usage", ["", "± 3 files changed (+12 −4) · review"]],
                         ["meta", "n0", review]]
    h.renderer.attach("demo:s1")
    [reset] = h.batch()
    assert reset[0] == "reset" and reset[3] == {"n0": review}


def test_a_reply_that_begins_with_a_tool_call_is_under_the_agents_heading() -> None:
    """Issue 23: a tool line came right under "▌ You", as if the person had run it."""
    h = Harness()
    h.renderer.attach("demo:s1")
    h.batch()
    for event in h.session.begin_turn([{"type": "text", "text": "look"}]):
        h.renderer.on_event(event)
    h.feed({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a",
            "kind": "read", "status": "completed"}, chunk("found it"))
    live = h.batch()
    kinds = [(op[1], op[2]) for op in live if op[0] == "block"]
    assert kinds == [("m0", "user"), ("ht1", "agent"), ("tt1", "tool"), ("m2", "agent")]
    assert next(op for op in live if op[:2] == ["block", "m2"])[3][:1] == [""]  # no 2nd heading
    h.renderer.attach("demo:s1")  # a full render reads the same
    text = h.batch()[-1][1]
    assert text == ["", "▌ You", "look", "", "▌ demo", "  ● read: Read a · completed", "",
                    "found it"], text


def test_a_block_added_and_taken_away_in_one_frame_is_never_sent() -> None:
    """A permission answered at once (a remembered choice): its "waiting" line comes and
    goes within a frame. Sent as an empty block it swallowed the next block's lines (the
    note saying why the tool failed)."""
    h = Harness()
    h.renderer.attach("demo:s1")
    h.batch()
    h.feed({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit a",
            "kind": "edit"})
    h.batch()
    chat = h.renderer.chats["demo:s1"]
    h.renderer._block(chat, "w9", "notice", ["", "! waiting"])
    for event in h.session.add_notice("info", "refused"):
        h.renderer.on_event(event)
    h.renderer._replace(chat, "w9", [])
    ops = h.batch()
    assert [op[1] for op in ops if op[0] == "block"] == ["n1"], ops
    assert all(op[3] for op in ops if op[0] == "block"), ops
