"""The sessions louise itself recorded for an Agent, from its transcripts: the session list
of an agent that can load a session but cannot list them (gemini-cli has `session/load`
and no `session/list`), so `louise sessions`, `:LouiseResume` and `louise chat --continue`
offer them too.

Each transcript's first record names its session (`{"type": "session", "agent", "cwd",
"sessionId"}`); the first prompt is its title, the file's last change its `updatedAt`, a
rename its name. Read within bounds: the head of each file only, at most
`MAX_RECORDED_SESSIONS` files (the newest), every field checked. Blocking (run it in a
worker thread).
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from louise.storage.transcript_files import SUFFIX, json_records, split_stem

MAX_RECORDED_SESSIONS = 200
HEAD_BYTES = 64 * 1024  # of a transcript: its session record and its first prompt
MAX_TITLE_CHARS = 200


def recorded_sessions(directory: Path, agent: str, cwd: str | None = None
                      ) -> list[dict[str, Any]]:
    """SessionInfo-shaped entries (`sessionId`, `cwd`, `title`, `updatedAt`) of `agent`'s
    recorded sessions (those of `cwd` only, when given), newest first."""
    dated: list[tuple[float, Path]] = []
    for path in _files(directory):
        if split_stem(path)[0] != agent:
            continue
        with contextlib.suppress(OSError):
            dated.append((path.stat().st_mtime, path))
    dated.sort(key=lambda pair: pair[0], reverse=True)
    out: list[dict[str, Any]] = []
    for mtime, path in dated:
        if len(out) >= MAX_RECORDED_SESSIONS:
            break
        info = _session_of(path, agent)
        if info is None or (cwd is not None and not _same_dir(info["cwd"], cwd)):
            continue
        info["updatedAt"] = datetime.fromtimestamp(mtime, UTC).isoformat() \
            .replace("+00:00", "Z")
        out.append(info)
    return out


def _files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return [p for p in directory.iterdir() if p.name.endswith(SUFFIX) and p.is_file()]


def _same_dir(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


def _session_of(path: Path, agent: str) -> dict[str, Any] | None:
    """The session a transcript records, from the head of the file (None: not one)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return None
    lines = head.split(b"\n")
    if len(head) == HEAD_BYTES:
        lines = lines[:-1]  # the last one may be cut
    records = json_records(lines)
    if not records:
        return None
    first = records[0]
    session_id, where = first.get("sessionId"), first.get("cwd")
    if first.get("type") != "session" or first.get("agent") != agent \
            or not isinstance(session_id, str) or not isinstance(where, str):
        return None
    info: dict[str, Any] = {"sessionId": session_id, "cwd": where}
    title = _title(records)
    if title:
        info["title"] = title
    return info


def _title(records: list[dict[str, Any]]) -> str | None:
    """The person's name for the session (its latest rename), else its first prompt."""
    names = [r.get("name") for r in records if r.get("type") == "rename"]
    if names and isinstance(names[-1], str) and names[-1].strip():
        return " ".join(names[-1].split())[:MAX_TITLE_CHARS]
    for record in records:
        if record.get("type") != "prompt" or not isinstance(record.get("prompt"), list):
            continue
        texts = [str(b["text"]) for b in record["prompt"]
                 if isinstance(b, dict) and isinstance(b.get("text"), str)]
        text = " ".join(" ".join(texts).split())
        if text:
            return text[:MAX_TITLE_CHARS]
    return None
