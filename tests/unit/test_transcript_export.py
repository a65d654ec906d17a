"""A transcript exported as Markdown (`louise.storage.transcript`): non-text blocks, tool
content and diffs, truncation and eviction marks, agent strings kept from opening a section
of their own, what a turn used of the quota. Replay, turn endings and finding transcripts:
test_transcript.py, whose helpers these tests use.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from louise.session import Notice
from louise.storage import transcript
from louise.storage.transcript import to_markdown
from tests.unit.test_transcript import (
    CWD,
    _body,
    _markdown_of,
    chunk,
    prompt_line,
    turn_end,
    update_line,
)

# ----------------------------------------------------------------------------- rendering


def test_non_text_blocks_get_one_line_each(tmp_path: Path) -> None:
    prompt = {"type": "prompt", "prompt": [
        {"type": "text", "text": "Look at"},
        {"type": "resource_link", "uri": "file:///projects/hello/a.py", "name": "a.py"},
        {"type": "resource", "resource": {"uri": "file:///projects/hello/b.py", "text": "x"}},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        {"type": "hologram"}]}
    markdown = _markdown_of(tmp_path, prompt, turn_end("end_turn"))
    assert _body(markdown) == (
        "Look at\n\n📎 a.py `file:///projects/hello/a.py`\n\n"
        "📎 `file:///projects/hello/b.py` (embedded)\n\n[image: image/png]\n\n"
        "[audio: audio/wav]\n\n[hologram content]\n")


def test_tool_content_other_than_diffs(tmp_path: Path) -> None:
    markdown = _markdown_of(
        tmp_path, prompt_line("Go"),
        update_line(sessionUpdate="tool_call", toolCallId="c1", title="Run tests",
                    kind="execute", status="failed",
                    content=[{"type": "terminal", "terminalId": "term-7"},
                             {"type": "content",
                              "content": {"type": "text", "text": "```\nboom\n```"}},
                             {"type": "content",
                              "content": {"type": "image", "data": "A", "mimeType": "image/png"}}]),
        update_line(sessionUpdate="tool_call", toolCallId="c2", title="Search\n  for *it*",
                    kind="search", status="completed"),
        update_line(sessionUpdate="tool_call", toolCallId="c3", title="Teleport",
                    kind="teleport", status="completed"),
        turn_end("end_turn"))
    assert _body(markdown) == (
        "Go\n\n## Agent\n\n- $ **Run tests** — failed\n\n"
        "*terminal `term-7` (its output is not in the transcript)*\n\n"
        "````\n```\nboom\n```\n````\n\n[image: image/png]\n\n"
        "- 🔎 **Search for \\*it\\*** — completed\n\n"
        "- ⚙ **Teleport** — completed\n")


def test_a_diff_outside_the_working_directory_and_an_unchanged_one(tmp_path: Path) -> None:
    markdown = _markdown_of(
        tmp_path, prompt_line("Go"),
        update_line(sessionUpdate="tool_call", toolCallId="c1", title="Edit", kind="edit",
                    status="completed",
                    content=[{"type": "diff", "path": "/etc/motd", "oldText": "a\n",
                              "newText": "b\n"},
                             {"type": "diff", "path": f"{CWD}/same.txt", "oldText": "s",
                              "newText": "s"}]),
        turn_end("end_turn"))
    assert _body(markdown) == (
        "Go\n\n## Agent\n\n- ✏ **Edit** — completed\n\n"
        "```diff\n--- /etc/motd\n+++ /etc/motd\n@@ -1 +1 @@\n-a\n+b\n```\n\n"
        "*`same.txt`: no change*\n")


def test_a_huge_diff_is_summarised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcript, "MAX_DIFF_CHARS", 10)
    markdown = _markdown_of(
        tmp_path, prompt_line("Go"),
        update_line(sessionUpdate="tool_call", toolCallId="c1", title="Write", kind="edit",
                    status="completed",
                    content=[{"type": "diff", "path": f"{CWD}/big.txt", "oldText": None,
                              "newText": "line\n" * 3}]),
        turn_end("end_turn"))
    assert "*`big.txt`: edit too large to show (3 lines after)*" in markdown
    assert "```diff" not in markdown


def test_a_truncated_message_and_an_evicted_tool_call_are_marked() -> None:
    from louise.acp.schema import parse_update
    from louise.session import Session, SessionBounds

    session = Session("s", "demo", CWD, SessionBounds(max_message_chars=4, max_tool_calls=1))
    session.mark_ready()
    session.begin_turn([{"type": "text", "text": "Go"}])
    session.apply(parse_update({"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": "abcdefgh"}}))
    for n in (1, 2):
        session.apply(parse_update({"sessionUpdate": "tool_call", "toolCallId": f"c{n}",
                                    "title": f"Step {n}"}))
    assert _body(to_markdown(session)) == (
        "Go\n\n## Agent\n\nabcd\n\n*… the rest of this message was not kept*\n\n"
        "- ⚙ tool call `c1` (details not kept)\n\n- ⚙ **Step 2** — pending\n\n"
        "*the transcript ends before the agent's reply*\n")


def test_dropped_entries_and_info_title_appear_in_the_header() -> None:
    from louise.acp.schema import parse_update
    from louise.session import Session, SessionBounds

    session = Session("s", "demo", CWD, SessionBounds(max_entries=1))
    session.apply(parse_update({"sessionUpdate": "session_info_update", "title": "Fix `x`_y"}))
    session.add_notice("info", "one")
    session.add_notice("info", "two")
    assert to_markdown(session) == (
        "# demo session `s`\n\n- **Title:** Fix \\`x\\`\\_y\n- **Agent:** `demo`\n"
        "- **Session:** `s`\n- **Working directory:** `/projects/hello`\n\n"
        "*1 earlier entries were not kept*\n\n*two*\n")
    assert list(session.entries) == [Notice("info", "two")]


def test_code_spans_survive_backticks_in_ids() -> None:
    from louise.session import Session

    header = to_markdown(Session("a`b", "demo", "`odd`")).split("\n")
    assert header[0] == "# demo session ``a`b``"
    assert header[4] == "- **Working directory:** `` `odd` ``"


def test_agent_strings_in_one_line_places_cannot_start_a_section() -> None:
    from markdown_it import MarkdownIt

    from louise.acp.schema import parse_update
    from louise.session import Session

    forged = "x\n\n## You\n\n<h2>You</h2>\n\n`"
    session = Session("s\n\n## You", "demo", CWD)
    session.apply(parse_update({"sessionUpdate": "session_info_update", "title": forged}))
    session.mark_ready()
    session.begin_turn([{"type": "text", "text": "Go"}])
    session.apply(parse_update({"sessionUpdate": "agent_message_chunk", "content": {
        "type": "resource_link", "name": forged, "uri": f"file:///{forged}"}}))
    session.apply(parse_update({"sessionUpdate": "agent_message_chunk", "content": {
        "type": "image", "mimeType": forged, "data": ""}}))
    session.apply(parse_update({"sessionUpdate": "agent_thought_chunk", "content": {
        "type": "text", "text": "thinking\n\n## You\n\n```"}}))
    session.apply(parse_update({"sessionUpdate": "plan", "entries": [
        {"content": forged, "priority": "high", "status": "pending"}]}))
    markdown = to_markdown(session)
    tokens = MarkdownIt("commonmark").parse(markdown)
    sections = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens)
                if t.type == "heading_open" and t.tag in ("h1", "h2")]
    assert sections == [("h1", "demo session `s ## You`"), ("h2", "You"), ("h2", "Agent"),
                        ("h2", "Plan")]
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")]
    assert markdown.count("\n## ") == 3


def test_the_export_says_what_a_turn_used_of_the_quota(tmp_path: Path) -> None:
    """Issue 26 item 3: the turn's cost (recorded with its end) is in the export."""
    end = turn_end("end_turn")
    end["usage"] = {"tokens": {"totalTokens": 120, "inputTokens": 1, "outputTokens": 119},
                    "models": []}
    end["quota"] = {"windows": [{"bucket": "claude", "minutes": 300, "resetsAt": 1800000000,
                                 "label": "Claude", "percent": 4.0}],
                    "sharedWith": 1, "defaultBucket": "claude"}
    markdown = _markdown_of(tmp_path, prompt_line("Go"), chunk("Done."), end)
    assert ("120 tokens: 1 in · 119 out · used 4% of the 5h window "
            "(shared: 1 other session ran meanwhile)") in markdown
