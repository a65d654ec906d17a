"""The gate's pure parts: which commands and paths one turn's answers cover."""

from __future__ import annotations

from typing import Any

from louise.broker import extract_request
from louise.registry.gate import (
    MAX_APPROVED_TARGETS,
    TurnApprovals,
    absolute_paths,
    command_words,
    split_command,
)


def request(kind: str, **tool_call: Any) -> Any:
    return extract_request(1, "a", "k", "/ws", {"toolCall": {"kind": kind, **tool_call},
                                               "options": []}, None)


def test_a_shell_wrapper_runs_the_words_inside_it() -> None:
    assert command_words(["sh", "-c", "ls -la 'my dir'"]) == ("ls", "-la", "my dir")
    assert command_words(["/bin/bash", "-lc", "make test"]) == ("make", "test")
    assert command_words(["python", "-c", "print(1)"]) == ("python", "-c", "print(1)")
    assert split_command("echo 'unclosed") == ("echo 'unclosed",)


def test_an_approved_command_covers_the_same_words_however_spelled() -> None:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request("execute", rawInput={"command": "ls -la"}), True, [])
    assert approvals.command_decision(command_words(["ls", "-la"])) is True
    assert approvals.command_decision(command_words(["sh", "-c", "ls  -la"])) is True
    assert approvals.command_decision(command_words(["ls", "-la", "/"])) is None
    approvals.record(request("execute", rawInput={"command": ["rm", "x"]}), False, [])
    assert approvals.command_decision(("rm", "x")) is False


def test_answers_belong_to_one_turn() -> None:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request("edit"), True, ["/ws/a"])
    assert approvals.for_turn(1).path_decision(["/ws/a"]) is True
    assert approvals.for_turn(2).path_decision(["/ws/a"]) is None


def test_a_refusal_of_any_spelling_wins_and_reading_covers_no_write() -> None:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request("edit"), True, ["/ws/link"])
    approvals.record(request("edit"), False, ["/ws/real"])
    assert approvals.path_decision(["/ws/link", "/ws/real"]) is False
    approvals.record(request("read"), True, ["/ws/other"])
    assert approvals.path_decision(["/ws/other"]) is None


def test_the_latest_answer_for_a_target_wins_and_the_table_is_bounded() -> None:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request("edit"), False, ["/ws/a"])
    approvals.record(request("edit"), True, ["/ws/a"])
    assert approvals.path_decision(["/ws/a"]) is True
    for index in range(MAX_APPROVED_TARGETS + 5):
        approvals.record(request("edit"), True, [f"/ws/f{index}"])
    assert len(approvals.paths) == MAX_APPROVED_TARGETS
    assert approvals.path_decision(["/ws/a"]) is None  # the oldest went first


def test_paths_are_made_absolute_against_the_session_directory() -> None:
    assert absolute_paths(["src/x.py", "/ws/../ws/y.py", "", "a\x00b"], "/ws") == \
        ["/ws/src/x.py", "/ws/y.py"]
