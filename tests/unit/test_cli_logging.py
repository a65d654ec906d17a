"""The command line's log lines: one line a failure, never a traceback (unless asked)."""

from __future__ import annotations

import logging

import pytest

from louise.commands._common import setup_logging


def _fail_and_log(name: str) -> None:
    try:
        {}["missing"]  # the failure under test
    except KeyError:
        logging.getLogger(name).exception("handler for session/update failed")


def test_a_logged_exception_is_one_line_without_a_traceback(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOUISE_LOG", raising=False)
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        setup_logging()
        _fail_and_log("louise.test")
    finally:
        root.handlers[:], root.level = saved
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert err.startswith("louise: error: handler for session/update failed (KeyError: ")
    assert "LOUISE_LOG=debug" in err


def test_debug_keeps_the_traceback(capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOUISE_LOG", "debug")
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        setup_logging()
        _fail_and_log("louise.test")
    finally:
        root.handlers[:], root.level = saved
    assert "Traceback" in capsys.readouterr().err
