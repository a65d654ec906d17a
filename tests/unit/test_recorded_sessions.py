"""The sessions louise recorded for an Agent, read from its transcripts' heads
(`louise/registry/recorded.py`): only well-formed session records of that Agent, titled by
the latest rename or the first prompt, newest first, within bounds."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from louise.registry import recorded
from louise.storage.transcript_files import file_name


def transcript(directory: Path, agent: str, session: str, *records: dict[str, Any],
               cwd: str = "/w", mtime: float = 1_000_000.0, head: Any = None) -> Path:
    path = directory / file_name(agent, session)
    first = head if head is not None else {"type": "session", "agent": agent, "cwd": cwd,
                                           "sessionId": session, "attach": "new"}
    path.write_text("".join(json.dumps(r) + "\n" for r in (first, *records)))
    os.utime(path, (mtime, mtime))
    return path


def prompt(text: str) -> dict[str, Any]:
    return {"type": "prompt", "prompt": [{"type": "text", "text": text}]}


def test_sessions_newest_first_titled_and_filtered(tmp_path: Path) -> None:
    transcript(tmp_path, "gemini", "old", prompt("first  words\nhere"), mtime=1_000)
    transcript(tmp_path, "gemini", "new", prompt("x"), {"type": "rename", "name": "Named"},
               mtime=2_000)
    transcript(tmp_path, "gemini", "other-dir", prompt("y"), cwd="/elsewhere", mtime=3_000)
    transcript(tmp_path, "qwen", "not-mine", prompt("z"), mtime=4_000)
    found = recorded.recorded_sessions(tmp_path, "gemini", "/w")
    assert [(s["sessionId"], s.get("title")) for s in found] == [
        ("new", "Named"), ("old", "first words here")]
    assert found[0]["updatedAt"] == "1970-01-01T00:33:20Z"
    assert [s["sessionId"] for s in recorded.recorded_sessions(tmp_path, "gemini")] == [
        "other-dir", "new", "old"]


def test_what_is_not_a_session_of_the_agent_is_left_out(tmp_path: Path) -> None:
    transcript(tmp_path, "gemini", "a", head={"type": "prompt", "prompt": []})
    transcript(tmp_path, "gemini", "b", head={"type": "session", "agent": "qwen",
                                              "cwd": "/w", "sessionId": "b"})
    transcript(tmp_path, "gemini", "c", head={"type": "session", "agent": "gemini",
                                              "cwd": "/w", "sessionId": 7})
    (tmp_path / file_name("gemini", "d")).write_bytes(b"\xff not json\n")
    assert recorded.recorded_sessions(tmp_path, "gemini") == []
    assert recorded.recorded_sessions(tmp_path / "missing", "gemini") == []


def test_only_the_head_of_a_file_is_read_and_at_most_so_many(tmp_path: Path,
                                                            monkeypatch: Any) -> None:
    monkeypatch.setattr(recorded, "HEAD_BYTES", 600)
    monkeypatch.setattr(recorded, "MAX_RECORDED_SESSIONS", 2)
    transcript(tmp_path, "gemini", "big", {"type": "update", "update": {"x": "y" * 1000}},
               prompt("too far to see"))
    for n in range(3):
        transcript(tmp_path, "gemini", f"s{n}", prompt("p" * 300), mtime=10 + n)
    found = recorded.recorded_sessions(tmp_path, "gemini")
    assert [s["sessionId"] for s in found] == ["big", "s2"]
    assert "title" not in found[0]
    assert found[1]["title"] == "p" * recorded.MAX_TITLE_CHARS
