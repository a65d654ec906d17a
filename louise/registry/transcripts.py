"""The transcript writer: one background task, one lock, every session's records appended
to `transcripts/<agent>@<session>@<digest>.jsonl` (format: `louise.storage.transcript`).

Records are queued on the event loop (text chunks of one message merged) and written off
it, in batches. Every cap is in real bytes: a file stops at `max_bytes` with a
`truncated` record, a record longer than `max_record_bytes` is cut (its largest parts
replaced by markers, or an `omitted` record), and when more than `max_pending_bytes` wait
for the disk, further records are counted and written as one `dropped` record. So
`louise export` reads everything written here, or sees a marker where something is not.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from louise.session import json_size, text_bytes
from louise.session.budget import cut_text
from louise.storage import durable
from louise.storage.transcript_files import file_name

log = logging.getLogger("louise.registry")

TRANSCRIPT_MAX_BYTES = 64 * 1024 * 1024  # per session file, on disk
MAX_RECORD_BYTES = 4 * 1024 * 1024  # one line; the reader takes up to 16 MiB
MAX_PENDING_BYTES = 32 * 1024 * 1024  # queued for the disk, all sessions together
BATCH_SECONDS = 0.2  # a burst of chunks becomes one write per file
# Streamed text alone waits this long for its write: each write costs the engine's loop ~4
# rounds and a thread hand-off (at 0.2 s, ~0.15 rounds a frame while a chat streams). Any
# other record (a turn's end, a prompt, a tool call) ends the wait, so a turn is on disk
# within BATCH_SECONDS of its end as before.
STREAM_BATCH_SECONDS = 1.0
# ... and no more than this many bytes: a fast stream's records are not held in memory
# for the second (a 5 MB reply held whole cost 1.4 MiB more RSS per session).
STREAM_BATCH_BYTES = 256 * 1024
_MARKER_ROOM = 256  # kept free under max_bytes for the `truncated` record
_TRUNCATED = b'"type":"truncated"'
_CHUNK_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(slots=True)
class _ChunkRecord:
    """Text chunks of one message, merged until the transcript is written."""

    t: float
    kind: str
    message_id: str | None
    parts: list[str]
    size: int

    def as_json(self) -> dict[str, Any]:
        update: dict[str, Any] = {"sessionUpdate": self.kind,
                                  "content": {"type": "text", "text": "".join(self.parts)}}
        if self.message_id is not None:
            update["messageId"] = self.message_id
        return {"t": self.t, "type": "update", "update": update}


Record = dict[str, Any] | _ChunkRecord


@dataclass(eq=False)
class TranscriptFile:
    """One session's transcript file and what this process queued for it."""

    path: Path
    queued: int = 0  # estimated bytes queued by this process
    full: bool = False  # reached max_bytes (set by the writer)
    dropped: int = 0  # records not queued while the queue was over its bound
    records: list[Record] = field(default_factory=list)


class TranscriptWriter:
    """See the module docstring. `flush()` returns once everything queued before it is on
    disk; `aclose()` flushes, fsyncs and refuses further records."""

    def __init__(self, directory: Path | None, clock: Callable[[], float], *,
                 max_bytes: int = TRANSCRIPT_MAX_BYTES,
                 max_record_bytes: int = MAX_RECORD_BYTES,
                 max_pending_bytes: int = MAX_PENDING_BYTES) -> None:
        self.directory = directory
        self._clock = clock
        self.max_bytes = max_bytes
        self.max_record_bytes = max_record_bytes
        self.max_pending_bytes = max_pending_bytes
        self._pending: dict[TranscriptFile, None] = {}  # files with records, in order
        self._pending_bytes = 0
        self._written: set[Path] = set()
        self._lock = anyio.Lock()
        self._wake = anyio.Event()  # replaced only by `run`, the one task waiting on it
        self._woken = False  # `_wake` is set (asked per streamed chunk: no anyio call)
        self._urgent = False  # a record other than streamed text waits (BATCH_SECONDS)
        self._hurry: anyio.Event | None = None  # ends `run`'s wait for streamed text
        self._closed = False
        self.waiting = False  # `run` waits for records (what it was woken for is written)

    def open(self, agent: str, acp_id: str) -> TranscriptFile | None:
        if self.directory is None:
            return None
        return TranscriptFile(self.directory / file_name(agent, acp_id))

    # ------------------------------------------------------------------ queueing

    def _take(self, file: TranscriptFile, size: int) -> bool:
        """Room for `size` more bytes from `file`?"""
        if self._closed or file.full or file.queued >= self.max_bytes:
            return False
        if self._pending_bytes + size > self.max_pending_bytes:
            file.dropped += 1
            self._queue(file)
            return False
        file.queued += size
        self._pending_bytes += size
        if self._pending_bytes > min(self.max_pending_bytes // 2, STREAM_BATCH_BYTES):
            self._make_haste()
        return True

    def _make_haste(self) -> None:
        """Written within BATCH_SECONDS: not streamed text alone (or much of it)."""
        if not self._urgent:
            self._urgent = True
            hurry = self._hurry
            if hurry is not None:
                hurry.set()

    def _queue(self, file: TranscriptFile) -> None:
        self._pending[file] = None
        if not self._woken:
            self._woken = True
            self._wake.set()

    def record(self, file: TranscriptFile | None, entry: dict[str, Any]) -> None:
        """Queue one record (`{"type": …, …}`); serialized off the event loop."""
        if file is None:
            return
        size = json_size(entry, self.max_record_bytes) + 24
        if not self._take(file, size):
            return
        file.records.append({"t": round(self._clock(), 3), **entry})
        self._queue(file)
        self._make_haste()

    def record_update(self, file: TranscriptFile | None, raw: dict[str, Any]) -> None:
        """Queue a `session/update`; plain text chunks of one message merge into one
        record (the streaming hot path), split so no record outgrows a line."""
        if file is None:
            return
        content = raw.get("content")
        kind = raw.get("sessionUpdate")
        message_id = raw.get("messageId")
        if kind not in _CHUNK_KINDS or type(content) is not dict or len(raw) > 3 \
                or content.get("type") != "text" or type(content.get("text")) is not str \
                or (message_id is not None and type(message_id) is not str):
            self.record(file, {"type": "update", "update": raw})
            return
        text: str = content["text"]
        piece_chars = self.max_record_bytes // 8  # UTF-8 takes at most 4 bytes a char
        if len(text) <= piece_chars:  # a streamed chunk: one piece, not copied
            self._chunk(file, str(kind), message_id, text)
            return
        for start in range(0, len(text), piece_chars):
            self._chunk(file, str(kind), message_id, text[start:start + piece_chars])

    def _chunk(self, file: TranscriptFile, kind: str, message_id: str | None,
               text: str) -> None:
        size = text_bytes(text)
        if not self._take(file, size):
            return
        records = file.records
        last = records[-1] if records else None
        if type(last) is _ChunkRecord and last.kind == kind and last.message_id == message_id \
                and last.size + size <= self.max_record_bytes // 2:
            last.parts.append(text)
            last.size += size
        else:
            records.append(_ChunkRecord(round(self._clock(), 3), kind, message_id, [text],
                                        size + 128))
        self._queue(file)

    # ------------------------------------------------------------------ writing

    async def run(self) -> None:
        """The background writer: wakes on queued records, batches, writes."""
        while True:
            self.waiting = True
            await self._wake.wait()
            self.waiting = False
            self._wake = anyio.Event()
            self._woken = False
            if self._pending_bytes < self.max_pending_bytes // 2:
                await anyio.sleep(BATCH_SECONDS)
                if not self._urgent:  # streamed text alone: a longer batch
                    self._hurry = anyio.Event()
                    try:
                        with anyio.move_on_after(STREAM_BATCH_SECONDS - BATCH_SECONDS):
                            await self._hurry.wait()
                    finally:
                        self._hurry = None
            self._urgent = False  # (one coming from here on is in this write, or the next)
            await self.flush()

    async def flush(self, deadline: float | None = None) -> None:
        """Write everything queued so far; returns when it is written. With a `deadline`
        (anyio's clock; at shutdown), returns by then at the latest: a write still
        running goes on in its thread, and the process may leave meanwhile (each line is
        appended whole under the file's lock)."""
        with anyio.CancelScope(deadline=math.inf if deadline is None else deadline) as scope:
            async with self._lock:
                batches: list[tuple[TranscriptFile, list[Record], int]] = []
                for file in self._pending:
                    batches.append((file, file.records, file.dropped))
                    file.records = []
                    file.dropped = 0
                self._pending = {}
                self._pending_bytes = 0
                if not batches:
                    return
                if deadline is not None:
                    await anyio.to_thread.run_sync(self._write, batches, abandon_on_cancel=True)
                    return
                with anyio.CancelScope(shield=True):  # a write, once started, completes
                    await anyio.to_thread.run_sync(self._write, batches)
        if scope.cancelled_caught:
            log.warning("transcripts: the last records may not be written (no time left)")

    async def aclose(self, deadline: float | None = None) -> None:
        """Accept nothing more; write what is queued and make the files durable (by the
        `deadline`, anyio's clock, if given)."""
        self._closed = True
        await self.flush(deadline)
        written = sorted(self._written)
        if not written:
            return
        with anyio.CancelScope(shield=True,
                               deadline=math.inf if deadline is None else deadline):
            try:
                await anyio.to_thread.run_sync(_fsync_all, written,
                                               abandon_on_cancel=deadline is not None)
            except OSError as exc:
                log.warning("could not sync transcripts: %s", exc)

    def _write(self, batches: list[tuple[TranscriptFile, list[Record], int]]) -> None:
        """In a worker thread: encode, cap by real bytes, append under the file's lock."""
        for file, records, dropped in batches:
            lines = [self._line(record) for record in records]
            if dropped:
                lines.append(_encode({"t": round(self._clock(), 3), "type": "dropped",
                                      "count": dropped}))
            try:
                self._append(file, lines)
            except OSError as exc:  # one file's trouble does not stop the others
                log.warning("could not write the transcript %s: %s", file.path, exc)

    def _append(self, file: TranscriptFile, lines: list[bytes]) -> None:
        durable.ensure_private_dir(file.path.parent)
        with durable.locked(file.path):
            # Private, and never through a symlink planted in the state directory.
            fd = os.open(file.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_CLOEXEC, durable.PRIVATE_FILE_MODE)
            try:
                size = os.fstat(fd).st_size
                tail = os.pread(fd, _MARKER_ROOM, max(size - _MARKER_ROOM, 0))
                if _TRUNCATED in tail:
                    file.full = True  # another process ended the file
                else:
                    _write_all(fd, self._fit(file, size, lines))
            finally:
                os.close(fd)
        self._written.add(file.path)

    def _fit(self, file: TranscriptFile, size: int, lines: list[bytes]) -> bytes:
        """The lines that fit under max_bytes, then a `truncated` record once."""
        room = self.max_bytes - _MARKER_ROOM - size
        if room < 0:
            file.full = True
            return b""
        out = bytearray()
        for line in lines:
            if len(out) + len(line) > room:
                file.full = True
                out += _encode({"t": round(self._clock(), 3), "type": "truncated",
                                "limit": self.max_bytes})
                break
            out += line
        return bytes(out)

    def _line(self, record: Record) -> bytes:
        value = record.as_json() if isinstance(record, _ChunkRecord) else record
        line = _encode(value)
        if len(line) <= self.max_record_bytes:
            return line
        line = _encode(shrink(value, self.max_record_bytes // 2))
        if len(line) <= self.max_record_bytes:
            return line
        return _encode({"t": value.get("t"), "type": "omitted", "record": str(value.get("type")),
                        "bytes": len(line)})


def _encode(value: Any) -> bytes:
    return (_dumps(value) + "\n").encode("utf-8", "surrogatepass")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _fsync_all(paths: list[Path]) -> None:
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def shrink(value: Any, limit: int, depth: int = 0) -> Any:
    """A copy of `value` whose JSON takes about `limit` bytes at most: its largest parts
    are replaced by markers (a list keeps the items that fit)."""
    if json_size(value, limit) <= limit:
        return value
    if isinstance(value, str):
        return cut_text("text", limit)
    if isinstance(value, list):
        kept: list[Any] = []
        used = 0
        for item in value:
            size = json_size(item, limit)
            if used + size > limit - 128:
                break
            kept.append(item)
            used += size
        left = len(value) - len(kept)
        kept.append({"type": "content", "content": {"type": "text", "text": cut_text(
            f"{left} more item{'' if left == 1 else 's'}", limit)}})
        return kept
    if isinstance(value, dict) and depth < 8:
        out = dict(value)
        sizes = sorted(((json_size(item, limit), key) for key, item in out.items()),
                       reverse=True)
        for _size, key in sizes:
            out[key] = shrink(out[key], limit // 4, depth + 1)
            if json_size(out, limit) <= limit:
                return out
        return out if json_size(out, limit) <= limit else {"truncated": cut_text("record", limit)}
    return cut_text("value", limit)
