"""Terminals an agent runs itself and reports in its tool calls' `_meta` (codex always,
claude once the client advertises `_meta.terminal_output`): output and exit in the model,
bounded in bytes; the tool line finishes; the export carries the output. Updates are
shaped as tests/real_agents/captures/codex-shell.ndjson has them."""

from __future__ import annotations

from typing import Any

from louise.acp.schema import parse_update
from louise.nvim.chat_lines import tool_line
from louise.nvim.tool_text import tool_details
from louise.session import Session, SessionBounds, TerminalReported, ToolCallChanged
from louise.storage.transcript import to_markdown

TID = "call_2e6a43f37d50"


def session(bounds: SessionBounds | None = None) -> Session:
    model = Session("codex:s1", "codex", "/ws", bounds)
    model.mark_ready()
    return model


def send(model: Session, update: dict[str, Any]) -> list[Any]:
    return model.apply(parse_update(update))


def started(model: Session) -> list[Any]:
    return send(model, {
        "sessionUpdate": "tool_call", "toolCallId": TID, "kind": "execute",
        "title": "echo hello-from-shell | tee shell-out.txt", "status": "in_progress",
        "content": [{"type": "terminal", "terminalId": TID}],
        "rawInput": {"command": "echo hello-from-shell | tee shell-out.txt", "cwd": "/ws"},
        "_meta": {"terminal_info": {"cwd": "/ws", "terminal_id": TID}}})


def finished(model: Session, data: str = "hello-from-shell\n", code: Any = 0) -> list[Any]:
    return send(model, {
        "sessionUpdate": "tool_call_update", "toolCallId": TID, "status": "completed",
        "_meta": {"terminal_output_delta": {"data": data, "terminal_id": TID},
                  "terminal_exit": {"exit_code": code, "signal": None, "terminal_id": TID}}})


def test_output_and_exit_reach_the_model_and_the_tool_line() -> None:
    model = session()
    events = started(model)
    assert not [e for e in events if isinstance(e, TerminalReported)], \
        "terminal_info alone is announced with the first output"
    record = model.tool_calls[TID]
    assert tool_line(record, {}).endswith("· in_progress · running")
    events = finished(model)
    [changed] = [e for e in events if isinstance(e, ToolCallChanged)]
    assert "terminals" in changed.changed
    [report] = [e for e in events if isinstance(e, TerminalReported)]
    assert (report.terminal_id, report.data, report.exited, report.exit_code) == \
        (TID, "hello-from-shell\n", True, 0)
    assert report.command == "echo hello-from-shell | tee shell-out.txt"
    assert tool_line(record, {}).endswith("· completed · exit 0")
    assert any("hello-from-shell" in line for line in tool_details(record))


def test_output_deltas_append_and_the_command_is_announced_once() -> None:
    model = session()
    started(model)
    first = send(model, {"sessionUpdate": "tool_call_update", "toolCallId": TID,
                         "_meta": {"terminal_output": {"data": "a", "terminal_id": TID}}})
    second = send(model, {"sessionUpdate": "tool_call_update", "toolCallId": TID,
                          "_meta": {"terminal_output_delta": {"data": "b",
                                                              "terminal_id": TID}}})
    reports = [e for e in [*first, *second] if isinstance(e, TerminalReported)]
    assert [r.data for r in reports] == ["a", "b"]
    assert [r.command is not None for r in reports] == [True, False]
    assert model.tool_calls[TID].terminals[TID].text == "ab"


def test_output_is_bounded_in_bytes_and_says_where_it_was_cut() -> None:
    model = session(SessionBounds(max_agent_terminal_bytes=10))
    started(model)
    [report] = [e for e in finished(model, "é" * 8) if isinstance(e, TerminalReported)]
    terminal = model.tool_calls[TID].terminals[TID]
    assert terminal.cut and report.data.startswith("ééééé\n[… output cut")
    later = finished(model, "more")
    assert not [e for e in later if isinstance(e, TerminalReported) and e.data]
    assert terminal.text.count("output cut") == 1


def test_an_unknown_exit_or_a_signal_and_hostile_meta() -> None:
    model = session()
    started(model)
    finished(model, "", code=None)
    assert tool_line(model.tool_calls[TID], {}).endswith("· completed · exited")
    other = session()
    started(other)
    send(other, {"sessionUpdate": "tool_call_update", "toolCallId": TID,
                 "_meta": {"terminal_exit": {"exit_code": True, "signal": "SIGKILL",
                                             "terminal_id": TID}}})
    assert tool_line(other.tool_calls[TID], {}).endswith("· signal SIGKILL")
    for meta in ({"terminal_output_delta": {"data": 5, "terminal_id": TID}},
                 {"terminal_exit": {"exit_code": 0}}, {"terminal_info": "x"}, "junk",
                 {"terminal_output_delta": {"data": "x", "terminal_id": "t" * 300}}):
        hostile = session()
        started(hostile)
        events = send(hostile, {"sessionUpdate": "tool_call_update", "toolCallId": TID,
                                "_meta": meta})
        assert not [e for e in events if isinstance(e, TerminalReported) and
                    (e.data or e.exited)], meta


def test_a_tool_call_holds_a_bounded_number_of_terminals() -> None:
    model = session(SessionBounds(max_agent_terminals=2))
    started(model)
    for n in range(5):
        send(model, {"sessionUpdate": "tool_call_update", "toolCallId": TID,
                     "_meta": {"terminal_info": {"terminal_id": f"t{n}"}}})
    assert len(model.tool_calls[TID].terminals) == 2


def test_the_export_has_the_output_and_the_exit() -> None:
    model = session()
    model.begin_turn([{"type": "text", "text": "MOCK-SHELL"}])
    started(model)
    finished(model)
    markdown = to_markdown(model)
    assert f"*terminal `{TID}` · exit 0*" in markdown, markdown
    assert "```console\nhello-from-shell\n```" in markdown, markdown
    assert "its output is not in the transcript" not in markdown
