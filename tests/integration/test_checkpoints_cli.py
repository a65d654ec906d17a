"""`louise review` and `louise undo` after `louise chat` turns, as a person runs them:
real subprocesses (the CLI, tests/fakes/script_agent.py, git), in a pipe and under a
pseudo-terminal."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli_helpers import FAKES, TERMINAL_CONTROLS, Terminal, environment, louise
from tests.integration.test_checkpoints import TWENTY, edited, self_write, shell


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text("[agents.script]\n"
                      f"command = {sys.executable!r}\n"
                      f"args = ['-P', {str(FAKES / 'script_agent.py')!r}]\n")
    return environment(config)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes.txt").write_text(TWENTY)
    return folder


def chat(env: dict[str, str], cwd: Path, *steps: list[dict[str, Any]]) -> Any:
    flat = [step for group in steps for step in group]
    result = louise("chat", "--agent", "script", "--allow", "edit", "--allow", "execute",
                    json.dumps(flat), env=env, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result


def test_review_prints_the_turns_diff_and_undo_asks_first(env: dict[str, str],
                                                          work: Path) -> None:
    changed = edited(TWENTY, l2="agent two\n", l18="agent 18 \x1b[31mred\n")
    first = chat(env, work, self_write(work / "notes.txt", changed),
                 shell("echo from-the-shell > shell-out.txt"))
    assert "[changes] 2 files changed (+3 \u22122) · louise review" in first.stderr
    review = louise("review", env=env, cwd=work / ".")
    assert review.returncode == 0, review.stderr
    lines = review.stdout.splitlines()
    assert lines[0].startswith("turn 1 of script:script-1, ")
    assert ": 2 files changed (+3 \u22122) — " in lines[0]
    assert "modified notes.txt (+2 \u22122)" in lines
    assert "added shell-out.txt (+1 \u22120)" in lines
    assert "-line 2" in lines and "+agent two" in lines
    assert not any(control in review.stdout for control in TERMINAL_CONTROLS), \
        "a file's escape sequences are shown, never sent to the terminal"
    coloured = Terminal("review", env=env, cwd=work)
    assert coloured.wait() == 0
    assert "\x1b[31m-line 2\x1b[0m" in coloured.text and "\x1b[32m+agent two\x1b[0m" \
        in coloured.text, "coloured on a terminal"
    assert "agent 18 \x1b[31mred" not in coloured.text, "never a file's own escapes"
    (work / "notes.txt").write_text(edited(changed, l10="mine\n"))  # the person, after
    refused = louise("undo", env=env, cwd=work)
    assert refused.returncode == 2
    assert "no terminal to ask on: run again with --yes" in refused.stderr
    assert (work / "shell-out.txt").exists(), "nothing is done without a yes"
    terminal = Terminal("undo", env=env, cwd=work)
    terminal.expect("Restore 2 file(s)? [y/N]")
    shown = terminal.text
    assert "revert notes.txt" in shown and "remove shell-out.txt" in shown
    terminal.send("y\n")
    assert terminal.wait() == 0, terminal.text
    assert (work / "notes.txt").read_text() == edited(TWENTY, l10="mine\n")
    assert not (work / "shell-out.txt").exists()
    assert "script still remembers these turns. To tell it: louise chat --agent script " \
           "--session script-1" in terminal.text
    again = louise("undo", "--yes", env=env, cwd=work)
    assert again.returncode == 2 and "already undone" in again.stderr


def test_review_and_undo_pick_a_turn_and_say_when_there_is_none(env: dict[str, str],
                                                                work: Path,
                                                                tmp_path: Path) -> None:
    chat(env, work, self_write(work / "notes.txt", edited(TWENTY, l3="one\n")))
    chat(env, work, self_write(work / "notes.txt", edited(TWENTY, l3="two\n")))
    listed = louise("review", "--list", env=env, cwd=work)
    # The fake agent numbers its sessions from 1 in each process: one session id here.
    assert [line.split(",")[0] for line in listed.stdout.splitlines()] == [
        "turn 1 of script:script-1", "turn 2 of script:script-1"], listed.stdout
    sub = work / "sub"
    sub.mkdir()
    from_below = louise("review", "--turn", "1", env=env, cwd=sub)
    assert from_below.returncode == 0 and "+one" in from_below.stdout, from_below.stderr
    missing = louise("review", "--turn", "7", env=env, cwd=work)
    assert missing.returncode == 2
    assert missing.stderr.startswith(
        "louise review: session script:script-1 has no recorded turn 7 (recorded: 1, 2)")
    nowhere = tmp_path / "elsewhere"
    nowhere.mkdir()
    none = louise("undo", env=env, cwd=nowhere)
    assert none.returncode == 2 and "no checkpoints for" in none.stderr
    done = louise("undo", "--yes", env=env, cwd=work)
    assert done.returncode == 0, done.stderr
    assert (work / "notes.txt").read_text() == edited(TWENTY, l3="one\n"), \
        "the newest turn only"


def test_checkpoints_can_be_turned_off(env: dict[str, str], work: Path,
                                       tmp_path: Path) -> None:
    config = Path(env["LOUISE_CONFIG"])
    config.write_text(config.read_text() + "[checkpoints]\nenabled = false\n")
    result = chat(env, work, self_write(work / "notes.txt", "changed\n"))
    assert "[changes]" not in result.stderr
    review = louise("review", env=env, cwd=work)
    assert review.returncode == 2 and "no checkpoints for" in review.stderr
