"""The gate and permission requests under `louise chat`, headless: `--allow KIND` allows
only what a request of that kind asked for, and a permission request louise cannot read
is refused with one `louise:` line, never a traceback. Real subprocesses throughout (the
CLI and tests/fakes/script_agent.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli_helpers import FAKES, environment, louise
from tests.integration.test_chat_cli import louise_lines


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text("[agents.script]\n"
                      f"command = {sys.executable!r}\n"
                      f"args = ['-P', {str(FAKES / 'script_agent.py')!r}]\n")
    return environment(config)


def chat(env: dict[str, str], cwd: Path, steps: list[dict[str, Any]],
         *allow: str) -> Any:
    flags = [arg for kind in allow for arg in ("--allow", kind)]
    return louise("chat", "--agent", "script", "--cwd", str(cwd), *flags, json.dumps(steps),
                  env=env)


def answers(stdout: str) -> list[Any]:
    return [json.loads(line.split(" ", 2)[2]) for line in stdout.splitlines()
            if line.startswith("ANSWER ")]


def test_allow_execute_does_not_let_an_unasked_write_through(env: dict[str, str],
                                                             tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    victim = workspace / "victim.txt"
    victim.write_text("kept\n")
    options = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
               {"optionId": "no", "name": "No", "kind": "reject_once"}]
    steps = [
        {"request": "session/request_permission", "params": {"options": options, "toolCall": {
            "toolCallId": "c1", "title": "Run cat", "kind": "execute",
            "rawInput": {"command": "cat victim.txt"}, "locations": [{"path": str(victim)}]}}},
        {"request": "fs/write_text_file", "params": {"path": str(victim), "content": "owned\n"}},
    ]
    result = chat(env, workspace, steps, "execute")
    assert result.returncode == 0, result.stderr
    allowed, refused = answers(result.stdout)
    assert allowed == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    assert refused["error"]["code"] == -32001
    assert "--allow edit" in result.stderr  # the write was asked for, as an edit
    assert victim.read_text() == "kept\n"


@pytest.mark.parametrize(("params", "why"), [
    ({"toolCall": {"toolCallId": "c1", "title": "T", "kind": "edit"}, "options": 5},
     "options must be a list"),
    ({"toolCall": {"toolCallId": "c1", "title": "T", "kind": "edit", "content": 7},
      "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]},
     "toolCall.content must be a list"),
])
def test_a_permission_request_louise_cannot_read_is_one_line_and_an_error_to_the_agent(
        env: dict[str, str], tmp_path: Path, params: dict[str, Any], why: str) -> None:
    result = chat(env, tmp_path, [{"request": "session/request_permission", "params": params}])
    assert result.returncode == 0, result.stderr
    (answer,) = answers(result.stdout)
    assert answer["error"]["code"] == -32602 and why in answer["error"]["message"]
    assert "Traceback" not in result.stderr, result.stderr
    (line,) = louise_lines(result.stderr)
    assert "permission request louise cannot read" in line and why in line
