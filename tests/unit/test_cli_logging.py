"""The CLI's log lines: a record carrying an exception is one line, never a traceback
(unless LOUISE_LOG=debug asks for it)."""

from __future__ import annotations

import logging

import pytest

from louise.commands._common import setup_logging


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
