"""`louise.registry.transcripts.TranscriptWriter`: caps in real bytes, records too long for
a line, a bounded queue, one background writer that keeps waking, and a durable close."""

from __future__ import annotations

import json
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.registry.transcripts import TranscriptWriter, shrink
from louise.storage import transcript
from tests.integration.agents import wait_until

pytestmark = pytest.mark.anyio
KIB = 1024


@asynccontextmanager
async def running(writer: TranscriptWriter) -> AsyncIterator[TranscriptWriter]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        yield writer
        await writer.aclose()
        tg.cancel_scope.cancel()


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def tool_update(index: int, size: int) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call", "toolCallId": f"call-{index}", "title": f"t{index}",
            "rawInput": {"data": "r" * size}}


async def test_the_cap_is_in_bytes_on_disk_with_one_truncated_record(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path, lambda: 1.0, max_bytes=64 * KIB)
    file = writer.open("demo", "s1")
    assert file is not None
    async with running(writer):
        for index in range(40):
            writer.record_update(file, tool_update(index, 4 * KIB))
        await writer.flush()
        for index in range(40, 80):  # after the cap: nothing more, no second marker
            writer.record_update(file, tool_update(index, 4 * KIB))
    assert file.path.stat().st_size <= 64 * KIB
    written = records(file.path)
    assert [r["type"] for r in written].count("truncated") == 1
    assert written[-1]["type"] == "truncated"
    assert stat.S_IMODE(file.path.stat().st_mode) == 0o600


async def test_a_second_process_appending_shares_the_cap(tmp_path: Path) -> None:
    for _ in range(2):  # two writers, one after the other, as two processes would
        writer = TranscriptWriter(tmp_path, lambda: 1.0, max_bytes=32 * KIB)
        file = writer.open("demo", "s1")
        assert file is not None
        async with running(writer):
            for index in range(20):
                writer.record_update(file, tool_update(index, 2 * KIB))
    assert file.path.stat().st_size <= 32 * KIB
    assert [r["type"] for r in records(file.path)].count("truncated") == 1


async def test_a_record_too_long_for_a_line_is_cut_visibly(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path, lambda: 1.0, max_record_bytes=64 * KIB)
    file = writer.open("demo", "s1")
    assert file is not None
    async with running(writer):
        writer.record(file, {"type": "prompt", "prompt": [{"type": "text", "text": "go"}]})
        writer.record_update(file, {**tool_update(1, 200 * KIB), "kind": "edit"})
        writer.record_update(file, {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                                    "content": {"type": "text", "text": "a" * (300 * KIB)}})
        writer.record(file, {"type": "turn_end", "stopReason": "end_turn"})
    lines = file.path.read_bytes().splitlines()
    assert max(len(line) for line in lines) <= 64 * KIB
    replayed = transcript.load(file.path)
    assert replayed.skipped_lines == 0
    session = replayed.session
    record = session.tool_calls["call-1"]
    assert (record.title, record.kind) == ("t1", "edit"), "the tool call is all there but …"
    assert "not kept" in json.dumps(record.raw_input), "… its oversized input is a marker"
    agent = [m.text for m in session.messages() if m.role == "agent"]
    assert agent == ["a" * (300 * KIB)], "long text is split over records, not cut"


def test_shrink_replaces_the_largest_parts_first() -> None:
    value = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "keep me",
             "rawInput": {"big": "x" * 10_000, "small": "y"}}
    shrunk = shrink(value, 2_000)
    assert shrunk["title"] == "keep me" and shrunk["toolCallId"] == "c1"
    assert shrunk["rawInput"]["small"] == "y"
    assert "not kept" in shrunk["rawInput"]["big"]
    assert len(json.dumps(shrunk)) <= 2_000


async def test_a_full_queue_drops_records_and_says_how_many(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path, lambda: 1.0, max_pending_bytes=16 * KIB)
    file = writer.open("demo", "s1")
    assert file is not None
    for index in range(10):  # queued without a writer running: 40 KiB
        writer.record_update(file, tool_update(index, 4 * KIB))
    await writer.aclose()
    written = records(file.path)
    assert written[-1]["type"] == "dropped" and written[-1]["count"] > 0
    assert len(written) - 1 + written[-1]["count"] == 10
    notices = [n.text for n in transcript.load(file.path).session.entries
               if isinstance(n, transcript.Notice)]
    assert notices == [f"{written[-1]['count']} records missing here: the transcript writer "
                       "fell behind the agent"]


async def test_the_background_writer_keeps_waking_after_flushes(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path, lambda: 1.0)
    file = writer.open("demo", "s1")
    assert file is not None
    async with running(writer):
        for index in range(3):
            writer.record(file, {"type": "prompt", "prompt": [{"type": "text",
                                                               "text": f"p{index}"}]})
            await wait_until(lambda i=index: f"p{i}" in _text(file.path))
            await wait_until(lambda: writer.waiting)  # the writer is back to waiting …
            await writer.flush()  # … when an export flushes
        writer.record(file, {"type": "prompt", "prompt": [{"type": "text", "text": "later"}]})
        await wait_until(lambda: "later" in _text(file.path))


async def test_streamed_text_waits_longer_but_any_other_record_ends_the_wait(
        tmp_path: Path) -> None:
    """Streamed text alone is written in longer batches (fewer wake-ups of the engine);
    a turn's end (or any record but streamed text) is written with it without that wait."""
    writer = TranscriptWriter(tmp_path, lambda: 1.0)
    file = writer.open("demo", "s1")
    assert file is not None
    async with running(writer):
        writer.record_update(file, {"sessionUpdate": "agent_message_chunk",
                                    "content": {"type": "text", "text": "streamed"}})
        await wait_until(lambda: writer._hurry is not None)  # the longer wait
        assert not file.path.exists()
        writer.record(file, {"type": "turn_end", "stopReason": "end_turn"})
        assert writer._hurry is not None and writer._hurry.is_set()  # the wait ends
        await wait_until(lambda: "turn_end" in _text(file.path))
        assert "streamed" in _text(file.path)


async def test_a_fast_stream_is_not_held_for_the_longer_wait(tmp_path: Path) -> None:
    """Streamed text past STREAM_BATCH_BYTES ends the longer wait: a fast stream's records
    are written as they come, not held in memory for the second."""
    from louise.registry.transcripts import STREAM_BATCH_BYTES

    writer = TranscriptWriter(tmp_path, lambda: 1.0)
    file = writer.open("demo", "s1")
    assert file is not None
    piece = "x" * 4096
    async with running(writer):
        writer.record_update(file, {"sessionUpdate": "agent_message_chunk",
                                    "content": {"type": "text", "text": piece}})
        await wait_until(lambda: writer._hurry is not None)  # the longer wait
        assert not writer._hurry.is_set()
        for _ in range(STREAM_BATCH_BYTES // len(piece) + 1):
            writer.record_update(file, {"sessionUpdate": "agent_message_chunk",
                                        "content": {"type": "text", "text": piece}})
        assert writer._urgent  # the wait ends
        await wait_until(lambda: file.path.exists() and len(_text(file.path)) > STREAM_BATCH_BYTES)


async def test_after_close_nothing_more_is_queued(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path, lambda: 1.0)
    file = writer.open("demo", "s1")
    assert file is not None
    writer.record(file, {"type": "session", "agent": "demo"})
    await writer.aclose()
    writer.record(file, {"type": "prompt", "prompt": []})
    await writer.flush()
    assert [r["type"] for r in records(file.path)] == ["session"]


def test_without_a_directory_nothing_is_recorded() -> None:
    assert TranscriptWriter(None, lambda: 1.0).open("demo", "s1") is None


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


async def test_a_file_that_cannot_be_written_does_not_stop_the_others(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path, lambda: 1.0)
    broken, good = writer.open("demo", "s1"), writer.open("demo", "s2")
    assert broken is not None and good is not None
    broken.path.mkdir(parents=True)  # a directory where the file should be
    writer.record(broken, {"type": "session", "agent": "demo"})
    writer.record(good, {"type": "session", "agent": "demo"})
    await writer.aclose()
    assert [r["type"] for r in records(good.path)] == ["session"]


async def test_a_symlink_planted_as_a_transcript_is_never_written_through(
        tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    state = tmp_path / "state"
    writer = TranscriptWriter(state, lambda: 1.0, max_bytes=64 * KIB)
    file = writer.open("demo", "s1")
    assert file is not None
    file.path.parent.mkdir(parents=True)
    file.path.symlink_to(outside)
    async with running(writer):
        writer.record_update(file, tool_update(0, 10))
        await writer.flush()
    assert outside.read_text() == "keep\n"
    assert stat.S_IMODE(file.path.parent.stat().st_mode) == 0o700
