"""A recorded session's last exchange as a few lines, for a picker's preview
(`:LouiseResume` with telescope, fzf-lua or snacks): the person's prompts and the agent's
replies at the end of its transcript.

Read within bounds: the last `TAIL_BYTES` of the file only, at most `MAX_LINES` lines of
`MAX_LINE_CHARS` characters. Blocking (run it in a worker thread); a file missing or
unreadable gives no lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from louise.storage.transcript_files import file_name, json_records

TAIL_BYTES = 64 * 1024
MAX_LINES = 24
MAX_LINE_CHARS = 160
_AGENT_TEXT = "agent_message_chunk"


def _text_of(blocks: Any) -> str:
    if not isinstance(blocks, list):
        return ""
    return "\n".join(str(b["text"]) for b in blocks
                     if isinstance(b, dict) and isinstance(b.get("text"), str))


def _messages(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(role, text) of the records' prompts and replies, a reply's chunks joined."""
    out: list[tuple[str, str]] = []
    for record in records:
        kind = record.get("type")
        if kind == "prompt":
            text = _text_of(record.get("prompt"))
            if text.strip():
                out.append(("You", text))
        elif kind == "update" and isinstance(record.get("update"), dict):
            update = record["update"]
            content = update.get("content")
            if update.get("sessionUpdate") != _AGENT_TEXT or not isinstance(content, dict) \
                    or not isinstance(content.get("text"), str):
                continue
            if out and out[-1][0] == "agent":
                out[-1] = ("agent", out[-1][1] + content["text"])
            else:
                out.append(("agent", content["text"]))
    return out


def preview_lines(directory: Path, agent: str, session_id: str) -> list[str]:
    """The end of the session's transcript as lines (`▌ You`, `▌ agent` and their text)."""
    path = directory / file_name(agent, session_id)
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read(TAIL_BYTES)
    except OSError:
        return []
    lines = tail.split(b"\n")
    if size > TAIL_BYTES:
        lines = lines[1:]  # the first may be cut
    records = json_records(lines)
    out: list[str] = []
    for role, text in _messages(records):
        out.extend(["", f"▌ {agent if role == 'agent' else role}"])
        out.extend(line[:MAX_LINE_CHARS] for line in text.strip("\n").split("\n"))
    return out[-MAX_LINES:] if len(out) > MAX_LINES else out[1:]
