"""Finding recorded transcripts: their file names (`file_name`), and the transcript a
person means by a session reference (`resolve`)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from louise.storage.digests import sha256_hex

TRANSCRIPTS_DIR = "transcripts"
SUFFIX = ".jsonl"
_SESSION_SEPARATOR = "--"  # older file names, and AGENT--SESSION references
_NAME_SEPARATOR = "@"


class TranscriptError(Exception):
    """A session reference that names no transcript, or more than one."""


class TranscriptNotFound(TranscriptError):
    pass


class AmbiguousTranscript(TranscriptError):
    pass



def find_transcripts(state_dir: Path) -> list[Path]:
    """Every transcript file under the state directory, sorted by name."""
    directory = state_dir / TRANSCRIPTS_DIR
    if not directory.is_dir():
        return []
    return sorted(path for path in directory.iterdir()
                  if path.name.endswith(SUFFIX) and path.is_file())


def safe_name(session_id: str) -> str:
    """A session id as the registry spells it in file names."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)[:120]


def digest(agent: str, session_id: str) -> str:
    """What tells apart two sessions whose ids read the same in a file name."""
    return sha256_hex(f"{agent}\0{session_id}".encode("utf-8", "surrogatepass"))[:16]


def file_name(agent: str, session_id: str) -> str:
    """The transcript file of an Agent's session: readable, and collision-free (`s/1` and
    `s_1` read the same; the digest of the exact pair differs). Agent names and safe ids
    hold no `@`, so the name splits back unambiguously."""
    return f"{agent}{_NAME_SEPARATOR}{safe_name(session_id)}{_NAME_SEPARATOR}" \
           f"{digest(agent, session_id)}{SUFFIX}"


def split_stem(path: Path) -> tuple[str, str, str | None]:
    """(agent, session, digest) from `<agent>@<session>@<digest>.jsonl`, or (agent,
    session, None) from an older `<agent>--<session>.jsonl` (split at the first `--`)."""
    stem = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.name
    parts = stem.split(_NAME_SEPARATOR)
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    agent, separator, session = stem.partition(_SESSION_SEPARATOR)
    return (agent, session, None) if separator else ("", stem, None)


def resolve(session_ref: str, state_dir: Path) -> Path:
    """The transcript a person means: a transcript file path, a session id, a unique prefix
    of one, or `AGENT--SESSION` / `AGENT:SESSION` (the registry's session key), or a prefix
    of those, to choose between Agents."""
    ref = session_ref.strip()
    if not ref:
        raise TranscriptNotFound("no session given")
    looks_like_path = os.sep in ref or (os.altsep is not None and os.altsep in ref) \
        or ref.endswith(SUFFIX)
    if looks_like_path and Path(ref).expanduser().is_file():
        return Path(ref).expanduser()
    files = find_transcripts(state_dir)
    key = safe_name(ref)
    stems = {key}
    agent, colon, rest = ref.partition(":")
    if colon and agent and rest:
        stems.add(f"{agent}{_SESSION_SEPARATOR}{safe_name(rest)}")

    def stem(path: Path) -> str:
        return path.name[: -len(SUFFIX)]

    def label(path: Path) -> str:
        file_agent, session, _ = split_stem(path)
        return f"{file_agent}{_SESSION_SEPARATOR}{session}" if file_agent else session

    def names_exactly(path: Path) -> bool:
        """The exact id (or AGENT:ID): the digest tells apart ids that read the same."""
        file_agent, _, file_digest = split_stem(path)
        if file_digest is None:
            return False
        return file_digest == digest(file_agent, ref) or (
            bool(colon) and file_agent == agent and file_digest == digest(agent, rest))

    exact = [path for path in files if names_exactly(path)] \
        or [path for path in files if split_stem(path)[1] == key or label(path) in stems]
    matches = exact or [path for path in files if split_stem(path)[1].startswith(key)
                        or any(label(path).startswith(prefix) for prefix in stems)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = ", ".join(stem(path) for path in matches[:10])
        more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
        raise AmbiguousTranscript(
            f"session {ref!r} is ambiguous: it matches {len(matches)} transcripts ({shown}{more});"
            " give more of the id, or AGENT:SESSION")
    where = state_dir / TRANSCRIPTS_DIR
    if looks_like_path:
        raise TranscriptNotFound(f"no transcript file {ref!r} and no session {ref!r} in {where}")
    count = len(files)
    known = f"{count} transcript{'' if count == 1 else 's'} there" if files \
        else "no transcripts there"
    raise TranscriptNotFound(f"no session {ref!r} in {where} ({known})")


def json_records(lines: list[bytes]) -> list[dict[str, Any]]:
    """The transcript records among `lines` (JSON objects); anything else is skipped."""
    records = []
    for line in lines:
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict):
                records.append(record)
    return records
