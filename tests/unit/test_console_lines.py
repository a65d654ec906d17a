"""What `louise chat` prints on stderr for an agent's exit and a turn's notices says each
thing once (issue 23: `[cancelled] cancelled`, "exited: the agent exited")."""

from __future__ import annotations

import io
import os
from pathlib import Path
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
    # With what the turn used after it: "[cancelled] used …", not "[cancelled] cancelled · …".
    assert printed(NoticeAdded("s1", 3, Notice("cancelled", "cancelled · used 4% of the 5h "
                                                          "window"))) == [
        "[cancelled] used 4% of the 5h window"]


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


def reply_with_a_note_inside(out: Any, err: Any) -> None:
    """A reply streamed with a note on stderr between two of its chunks."""
    from louise.session.events import MessageChunk, MessageStarted, TurnEnded

    console = ConsolePrinter(registry=None, out=out, err=err)  # type: ignore[arg-type]
    for event in (MessageStarted("s1", 0, "agent", None),
                  MessageChunk("s1", 0, "agent", "Here is a "),
                  NoticeAdded("s1", 1, Notice("info", "the model is busy")),
                  MessageChunk("s1", 0, "agent", "reply."),
                  TurnEnded("s1", "end_turn")):
        console(event)


def test_a_note_inside_a_reply_leaves_a_redirected_reply_whole(tmp_path: Path) -> None:
    """`louise chat … > reply.md`: the note goes to the terminal, the file gets the reply
    as the agent wrote it (a line break there would change it)."""
    with open(tmp_path / "reply.md", "w") as out, open(tmp_path / "err.txt", "w") as err:
        reply_with_a_note_inside(out, err)
    assert (tmp_path / "reply.md").read_text() == "Here is a reply.\n"
    assert (tmp_path / "err.txt").read_text() == "[info] the model is busy\n"


def test_a_note_inside_a_reply_on_one_screen_gets_a_line_of_its_own(tmp_path: Path) -> None:
    """Both streams in one place (a terminal, `2>&1`): the note is not written into the
    reply's line; the reply goes on after it."""
    with open(tmp_path / "both.txt", "w") as out, open(os.dup(out.fileno()), "w") as err:
        reply_with_a_note_inside(out, err)
    assert (tmp_path / "both.txt").read_text() == \
        "Here is a \n[info] the model is busy\nreply.\n"


def test_a_ctrl_c_over_the_wait_line_leaves_no_echo_behind() -> None:
    """On a terminal the wait line is drawn in place; Ctrl-C's `^C` echo follows it. The
    line louise then writes starts at the line's start, and what was there before it
    (the wait and the echo) is blanked first, the echo's two columns too."""
    from louise.cli.console_wait import WaitingLine

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Tty()
    clock = [0.0]
    waiting = WaitingLine(err, True, clock=lambda: clock[0])
    console = ConsolePrinter(registry=None, out=err, err=err,  # type: ignore[arg-type]
                             waiting=waiting)
    waiting.begin("working")
    clock[0] = 3.0
    waiting.tick()
    drawn = "louise: working 3s"
    assert err.getvalue() == "\r" + drawn
    err.write("^C")  # the terminal's echo, as the person sees it
    console.interrupted("louise: cancelling (Ctrl-C again to quit)")
    blank = "\r" + " " * (len(drawn) + 2) + "\r"
    assert err.getvalue() == "\r" + drawn + "^C" + "\r" + blank + \
        "louise: cancelling (Ctrl-C again to quit)\n"
