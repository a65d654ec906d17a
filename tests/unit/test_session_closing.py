"""The `closing` state: a session being closed takes no new turn, also once the turn it
was in when closing began has ended."""

from __future__ import annotations

import pytest

from louise.session import Session, StatusChanged, TurnEnded

SID = "demo:closing-1"


def ready_session() -> Session:
    session = Session(SID, "demo", "/projects/hello")
    session.mark_ready()
    return session


def test_closing_an_idle_session_refuses_the_next_turn() -> None:
    session = ready_session()
    assert session.begin_close() == [StatusChanged(SID, "ready", "closing")]
    assert session.closing and not session.in_turn
    with pytest.raises(RuntimeError, match=r"^cannot prompt a session that is closing$"):
        session.begin_turn([{"type": "text", "text": "late"}])
    assert session.close() == [StatusChanged(SID, "closing", "closed")]
    assert not session.closing


def test_a_turn_running_when_closing_begins_ends_in_closing_not_ready() -> None:
    session = ready_session()
    session.begin_turn([{"type": "text", "text": "hello"}])
    assert session.begin_close() == []  # the turn's status stays until the turn ends
    session.request_cancel()
    assert session.end_turn("cancelled")[-2:] == [
        TurnEnded(SID, "cancelled"), StatusChanged(SID, "cancelling", "closing")]
    with pytest.raises(RuntimeError, match="closing"):
        session.begin_turn([{"type": "text", "text": "late"}])


def test_a_reattach_while_closing_stays_closing() -> None:
    session = ready_session()
    session.begin_close()
    assert session.fresh().mark_ready() == [StatusChanged(SID, "starting", "closing")]
