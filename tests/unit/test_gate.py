"""The gate's pure parts: which commands and paths one turn's answers cover."""

from __future__ import annotations

from typing import Any

import pytest

from louise.permissions.broker import extract_request
from louise.registry.approvals import (
    MAX_APPROVED_TARGETS,
    Target,
    TurnApprovals,
    absolute_paths,
)
from louise.registry.gate_commands import (
    CommandForm,
    argv_form,
    env_entries,
    line_form,
    plain_words,
    requested_command,
    run_directory,
    terminal_command,
)

WS = "/ws"


def request(kind: str, **tool_call: Any) -> Any:
    return extract_request(1, "a", "k", WS, {"toolCall": {"kind": kind, **tool_call},
                                             "options": []}, None)


def approvals_of(kind: str, allowed: bool, **raw_input: Any) -> TurnApprovals:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request(kind, rawInput=raw_input), allowed, [], WS)
    return approvals


def run(argv: list[str], env: Any = None, cwd: Any = None) -> Any:
    key = terminal_command(argv, env, cwd, WS)
    assert key is not None
    return key


def target(path: str, resolved: str | None = None) -> Target:
    return Target(path, resolved or path)


# ------------------------------------------------------------------ what a command runs


def test_a_plain_line_is_its_words_and_a_shell_around_it_changes_nothing() -> None:
    words = CommandForm(argv=("ls", "-la", "my dir"))
    assert line_form("ls -la 'my dir'") == words
    assert line_form("  ls   -la \"my dir\"\n") == words
    assert argv_form(["sh", "-c", "ls -la 'my dir'"]) == words
    assert argv_form(["/bin/bash", "-lc", "sh -c \"ls -la 'my dir'\""]) == words
    assert argv_form(["python", "-c", "print(1)"]) == CommandForm(
        argv=("python", "-c", "print(1)"))


@pytest.mark.parametrize("line", [
    "echo $(id>pwned)", "echo '$(id>pwned)'", "echo `id`", "a; b", "a | b", "a && b",
    "a > f", "a < f", "(a)", "ls *.py", "ls ?", "ls [ab]", "cat ~/x", "echo a\\ b",
    "echo a # b", "echo {a,b}", "echo !!", "FOO=1 cmd", "echo =ls", "echo 'unclosed",
    "echo a\rb", "echo\ta\x0bb", "echo ^x", "echo %self",
])
def test_a_line_a_shell_would_interpret_is_kept_as_the_line(line: str) -> None:
    assert plain_words(line) is None
    assert line_form(line) == CommandForm(shell_line=line.strip(" \t\n"))


def test_a_literal_and_its_expansion_are_different_commands() -> None:
    # Approving `echo '$(id>pwned)'` (prints a literal) is not approving the expansion.
    assert line_form("echo '$(id>pwned)'") != argv_form(["sh", "-c", "echo $(id>pwned)"])
    assert argv_form(["echo", "$(id)"]) != line_form("echo $(id)")


def test_only_a_usual_shell_is_unwrapped() -> None:
    assert argv_form(["./sh", "-c", "npm test"]) == CommandForm(argv=("./sh", "-c", "npm test"))
    assert argv_form(["/ws/bin/bash", "-c", "npm test"]).argv[0] == "/ws/bin/bash"
    assert argv_form(["bash", "-c", "npm test", "name"]).argv[0] == "bash"
    assert argv_form(["bash", "-x", "npm test"]).argv[0] == "bash"
    assert argv_form(["/usr/bin/zsh", "-c", "npm test"]) == CommandForm(argv=("npm", "test"))


def test_env_and_directory_are_read_as_the_terminal_host_applies_them() -> None:
    assert env_entries(None) == ()
    assert env_entries([{"name": "B", "value": "1"}, {"name": "A", "value": "2"},
                        {"name": "B", "value": "3"}]) == (("A", "2"), ("B", "3"))
    assert env_entries({"A": "2"}) == (("A", "2"),)
    for bad in (5, [5], [{"name": "A"}], [{"name": "A=B", "value": ""}], {"A": 1}):
        assert env_entries(bad) is None
    assert run_directory(None, WS) == WS
    assert run_directory("sub/./x//", WS) == "/ws/sub/x"
    assert run_directory("/ws/link/..", WS) == "/ws/link/.."  # not where it looks
    assert run_directory(7, WS) is None


def test_a_request_shows_its_command_as_a_line_an_argv_or_with_args() -> None:
    npm = CommandForm(argv=("npm", "test"))
    assert requested_command({"command": "npm test"}, WS).form == npm  # type: ignore[union-attr]
    assert requested_command({"command": ["npm", "test"]}, WS).form == npm  # type: ignore[union-attr]
    assert requested_command({"command": "npm", "args": ["test"]}, WS).form == npm  # type: ignore[union-attr]
    assert requested_command({"command": "  "}, WS) is None
    assert requested_command({"file_path": "/ws/x"}, WS) is None
    assert requested_command("npm test", WS) is None


# ------------------------------------------------------------------ what an answer covers


@pytest.mark.parametrize("argv", [
    ["npm", "test"], ["sh", "-c", "npm test"], ["bash", "-lc", "npm  test"],
    ["/bin/sh", "-c", "'npm' \"test\""],
])
def test_an_approved_command_covers_the_same_command_however_spelled(argv: list[str]) -> None:
    approvals = approvals_of("execute", True, command="npm test")
    assert approvals.command_decision(run(argv)) is True
    assert approvals.command_decision(run(argv, cwd=WS + "/")) is True


def test_an_approval_covers_no_other_command_env_or_directory() -> None:
    approvals = approvals_of("execute", True, command="echo '$(id>pwned)'")
    assert approvals.command_decision(run(["sh", "-c", "echo $(id>pwned)"])) is None
    assert approvals.command_decision(run(["sh", "-c", "echo '$(id>pwned)'"])) is True
    approvals = approvals_of("execute", True, command="true")
    evil = [{"name": "BASH_ENV", "value": "evil.sh"}]
    assert approvals.command_decision(run(["bash", "-c", "true"], env=evil)) is None
    assert approvals.command_decision(run(["true"], cwd="/elsewhere")) is None
    assert approvals.command_decision(run(["true"], cwd="/ws/sub")) is None
    assert approvals.command_decision(run(["true", "x"])) is None
    assert approvals.command_decision(run(["true"], env=[{"name": "A"}])) is None
    assert approvals.command_decision(run(["true"])) is True


def test_an_approval_with_env_and_directory_covers_exactly_those() -> None:
    env = [{"name": "CI", "value": "1"}]
    approvals = approvals_of("execute", True, command="npm test", env=env, cwd="/ws/app")
    assert approvals.command_decision(run(["npm", "test"], env=env, cwd="/ws/app")) is True
    assert approvals.command_decision(run(["npm", "test"], cwd="/ws/app")) is None
    assert approvals.command_decision(run(["npm", "test"], env=env)) is None
    assert approvals.command_decision(run(["npm", "test"], env=[
        *env, {"name": "X", "value": "1"}], cwd="/ws/app")) is None
    unreadable = approvals_of("execute", True, command="npm test", env=5)
    assert unreadable.command_decision(run(["npm", "test"])) is None


def test_a_refused_command_is_refused_whatever_its_env_or_directory() -> None:
    approvals = approvals_of("execute", False, command=["rm", "x"])
    assert approvals.command_decision(run(["rm", "x"])) is False
    assert approvals.command_decision(run(["sh", "-c", "rm x"], cwd="/tmp",
                                          env=[{"name": "A", "value": "1"}])) is False
    approvals.record(request("execute", rawInput={"command": "rm x"}), True, [], WS)
    assert approvals.command_decision(run(["rm", "x"])) is True  # the latest answer
    assert approvals.command_decision(run(["rm", "x"], cwd="/tmp")) is None


def test_answers_belong_to_one_turn() -> None:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request("edit"), True, [target("/ws/a")], WS)
    assert approvals.for_turn(1).path_decision([], "/ws/a") is True
    assert approvals.for_turn(2).path_decision([], "/ws/a") is None


@pytest.mark.parametrize("kind", ["execute", "read", "search", "fetch", "other", "think"])
def test_only_an_edit_delete_or_move_answer_is_about_writing(kind: str) -> None:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request(kind), True, [target("/ws/victim.txt")], WS)
    approvals.record(request(kind), False, [target("/ws/kept.txt")], WS)
    assert approvals.path_decision(["/ws/victim.txt"], "/ws/victim.txt") is None
    assert approvals.path_decision(["/ws/kept.txt"], "/ws/kept.txt") is None
    for writing in ("edit", "delete", "move"):
        approvals.record(request(writing), True, [target(f"/ws/{writing}")], WS)
        assert approvals.path_decision([], f"/ws/{writing}") is True


def test_an_approval_covers_where_the_file_was_not_where_its_name_leads_now() -> None:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request("edit"), True, [target("/ws/notes.txt")], WS)
    # notes.txt swapped for a link to a hook after the approval: the write lands there.
    assert approvals.path_decision(["/ws/notes.txt"], "/ws/.git/hooks/post-checkout") is None
    approvals.record(request("edit"), True, [target("/ws/link", "/ws/real")], WS)
    assert approvals.path_decision(["/ws/link"], "/ws/real") is True
    assert approvals.path_decision(["/ws/real"], "/ws/real") is True
    assert approvals.path_decision(["/ws/link"], "/ws/other") is None


def test_a_refusal_of_any_name_wins_and_a_later_allow_lifts_it() -> None:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request("edit"), True, [target("/ws/link", "/ws/real")], WS)
    approvals.record(request("edit"), False, [target("/ws/real")], WS)
    assert approvals.path_decision(["/ws/link"], "/ws/real") is False
    approvals.record(request("edit"), False, [target("/ws/a", "/ws/b")], WS)
    assert approvals.path_decision(["/ws/a"], "/ws/elsewhere") is False
    approvals.record(request("edit"), True, [target("/ws/a", "/ws/b")], WS)
    assert approvals.path_decision(["/ws/a"], "/ws/b") is True


def test_the_latest_answer_for_a_target_wins_and_the_table_is_bounded() -> None:
    approvals = TurnApprovals().for_turn(1)
    approvals.record(request("edit"), False, [target("/ws/a")], WS)
    approvals.record(request("edit"), True, [target("/ws/a")], WS)
    assert approvals.path_decision([], "/ws/a") is True
    for index in range(MAX_APPROVED_TARGETS + 5):
        approvals.record(request("edit"), True, [target(f"/ws/f{index}")], WS)
    assert len(approvals.paths) == MAX_APPROVED_TARGETS
    assert approvals.path_decision([], "/ws/a") is None  # the oldest went first


def test_paths_are_made_absolute_against_the_session_directory() -> None:
    assert absolute_paths(["src/x.py", "/ws/../ws/y.py", "", "a\x00b"], "/ws") == \
        ["/ws/src/x.py", "/ws/y.py"]
