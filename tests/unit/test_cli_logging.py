"""The CLI's log lines: a record carrying an exception is one line, never a traceback
(unless LOUISE_LOG=debug asks for it)."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest

from louise.cli.commands._common import setup_logging, whole_writes


@pytest.fixture(autouse=True)
def restore_logging() -> object:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield None
    root.handlers[:] = handlers
    root.setLevel(level)


def log_a_failure() -> None:
    try:
        {}[["a list"]] = 1  # type: ignore[index]
    except TypeError:
        logging.getLogger("louise.test").exception("claude: handler for %s failed",
                                                   "session/update")


def test_an_exception_in_a_log_record_is_the_end_of_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("LOUISE_LOG", raising=False)
    setup_logging()
    log_a_failure()
    printed = capsys.readouterr().err
    assert printed == ("louise: error: claude: handler for session/update failed "
                       "(TypeError: unhashable type: 'list')\n")


def test_louise_log_debug_shows_the_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LOUISE_LOG", "debug")
    setup_logging()
    log_a_failure()
    printed = capsys.readouterr().err
    assert printed.startswith("louise: error: claude: handler for session/update failed\n")
    assert "Traceback (most recent call last)" in printed


class ShortWrites(io.RawIOBase):
    """A file whose every write takes at most 1,000 bytes, as a pipe write interrupted by
    a signal does."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        taken = bytes(b[:1000])
        self.data += taken
        return len(taken)


def test_the_cli_streams_keep_the_rest_of_a_write_the_system_cut_short() -> None:
    raw = ShortWrites()
    bare = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)  # as with -u
    stream = whole_writes(bare)
    stream.write("x" * 100_000)
    stream.flush()
    assert len(raw.data) == 100_000


def test_a_stream_with_its_own_buffer_is_kept_as_it_is() -> None:
    stream = io.TextIOWrapper(io.BufferedWriter(ShortWrites()), encoding="utf-8")
    assert whole_writes(stream) is stream
