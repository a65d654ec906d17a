"""What `louise chat` prints on stderr for an agent's exit and a turn's notices says each
thing once (issue 23: `[cancelled] cancelled`, "exited: the agent exited")."""

from __future__ import annotations

import io
from typing import Any

from louise.acp.errors import ConnectionClosed
from louise.cli.console import ConsolePrinter
from louise.registry.events import AgentStatus
from louise.session.events import NoticeAdded
from louise.session.records import Notice


def printed(*events: Any) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    console = ConsolePrinter(registry=None, out=out, err=err)  # type: ignore[arg-type]
    for event in events:
        console(event)
    return err.getvalue().splitlines()


def test_a_cancelled_turn_says_cancelled_once() -> None:
    assert printed(NoticeAdded("s1", 3, Notice("cancelled", "cancelled"))) == ["[cancelled]"]
    assert printed(NoticeAdded("s1", 3, Notice("stop", "stopped: the model reached its "
                                                     "token limit"))) == [
        "[stop] stopped: the model reached its token limit"]


def test_an_agent_exit_says_exited_once() -> None:
    reason = str(ConnectionClosed("the agent exited: claude-agent-acp", 1, "boom\n"))
    lines = printed(AgentStatus("claude", "exited", reason))
    assert lines[0] == "claude exited: claude-agent-acp (exit status 1)", lines
    assert "boom" in lines  # the stderr tail still follows
    assert printed(AgentStatus("claude", "exited", "the agent closed its output: x")) == [
        "claude exited: the agent closed its output: x"]


def test_the_editor_line_of_an_exit_says_exited_once() -> None:
    # engine.py's notification: "louise: <headline> (:LouiseLog shows its stderr)".
    reason = str(ConnectionClosed("the agent exited: codex-acp", 2, "panic\n"))
    assert AgentStatus("codex", "exited", reason).headline() == \
        "codex exited: codex-acp (exit status 2)"
