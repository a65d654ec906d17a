"""Context in the transcript as a person reads it (issue 23, item 13): a mentioned file is
`@README.md`, not its URI, and a `:LouiseAdd` selection starts apart from the prompt's
words, in the transcript and for the agent."""

from __future__ import annotations

from louise.nvim import chat_lines
from louise.registry.prompt_content import prompt_blocks
from louise.session import Session


def person_message_lines(prompt: list[dict[str, object]]) -> list[str]:
    session = Session("demo:s1", "demo", "/ws")
    session.mark_ready()
    session.begin_turn([dict(block) for block in prompt])
    message = session.entries[-1]
    return chat_lines.message_lines(message, "demo")  # type: ignore[arg-type]


def test_a_mentioned_file_reads_as_its_mention() -> None:
    embedded = {"type": "resource", "resource": {"uri": "file:///ws/docs/README.md",
                                                 "text": "hi", "mimeType": "text/plain"}}
    link = {"type": "resource_link", "uri": "file:///ws/src/my%20app.py", "name": "x"}
    lines = person_message_lines([{"type": "text", "text": "look at @README.md"}, embedded,
                                  link])
    assert lines[-2:] == ["@README.md", "@my app.py"]
    assert not any("file://" in line for line in lines)


def test_a_link_is_named_by_where_it_points_not_by_the_name_it_claims() -> None:
    link = {"type": "resource_link", "uri": "file:///etc/passwd", "name": "README.md"}
    assert chat_lines.block_label(link) == "@passwd"


def test_other_blocks_keep_their_kind_with_a_short_name() -> None:
    assert chat_lines.block_label({"type": "image", "uri": "file:///ws/shot.png"}) \
        == "[image: shot.png]"
    assert chat_lines.block_label({"type": "audio"}) == "[audio]"


def test_a_selection_starts_a_paragraph_of_its_own() -> None:
    chip = {"kind": "selection", "path": "/ws/a.py", "first": 3, "last": 4,
            "text": "def add(a, b):\n    return a + b"}
    blocks = prompt_blocks("explain this", [chip], {})
    lines = person_message_lines(blocks)
    assert "explain this" in lines
    assert "Selection from /ws/a.py:3-4:" in lines
    assert not any("thisSelection" in line for line in lines)
    diagnostics = prompt_blocks("fix", [{"kind": "diagnostics", "path": "/ws/a.py",
                                         "text": "1:1 ERROR: x"}], {})
    assert person_message_lines(diagnostics)[2:5] == ["fix", "", "Diagnostics in /ws/a.py:"]
