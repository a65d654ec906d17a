"""A recorded session's last exchange for a picker's preview: the end of the transcript
only, bounded in bytes read, lines and their length."""

from __future__ import annotations

import json
from pathlib import Path

from louise.storage import transcript_preview
from louise.storage.transcript_files import file_name


def write(directory: Path, records: list[dict[str, object]]) -> None:
    path = directory / file_name("demo", "s1")
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def chunk(text: str) -> dict[str, object]:
    return {"type": "update", "update": {"sessionUpdate": "agent_message_chunk",
                                         "content": {"type": "text", "text": text}}}


def test_the_last_exchange_with_a_reply_joined(tmp_path: Path) -> None:
    write(tmp_path, [{"type": "session", "agent": "demo", "cwd": "/ws", "sessionId": "s1"},
                     {"type": "prompt", "prompt": [{"type": "text", "text": "hello"}]},
                     chunk("Hi "), chunk("there.\nTwo lines."),
                     {"type": "update", "update": {"sessionUpdate": "tool_call"}}])
    assert transcript_preview.preview_lines(tmp_path, "demo", "s1") == [
        "▌ You", "hello", "", "▌ demo", "Hi there.", "Two lines."]


def test_bounded_and_a_missing_file_is_empty(tmp_path: Path) -> None:
    records: list[dict[str, object]] = []
    for n in range(5000):
        records.append({"type": "prompt", "prompt": [{"type": "text", "text": f"q{n}"}]})
        records.append(chunk("x" * 1000))
    write(tmp_path, records)
    lines = transcript_preview.preview_lines(tmp_path, "demo", "s1")
    assert len(lines) == transcript_preview.MAX_LINES
    assert lines[-1] == "x" * transcript_preview.MAX_LINE_CHARS
    assert "q4999" in lines
    assert transcript_preview.preview_lines(tmp_path, "demo", "nope") == []
