"""`louise chat` is never silent while it waits: the time the agent takes to start and
the turn runs shows on stderr (in place on a terminal, plain lines in a pipe), and so do
the agent's own notes as they come (codex-acp's "Reconnecting... n/5")."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from tests.integration.cli_helpers import FAKES, TERMINAL_CONTROLS, Terminal, environment, louise
from tests.integration.test_watchdog import codex_note


def script_env(tmp_path: Path, start_delay: float = 0) -> dict[str, str]:
    agent = shlex.join([sys.executable, "-P", str(FAKES / "script_agent.py")])
    config = tmp_path / "config.toml"
    config.write_text("default_agent = 'script'\n[agents.script]\ncommand = 'sh'\n"
                      f"args = ['-c', {f'sleep {start_delay}; exec {agent}'!r}]\n")
    return environment(config)


def steps(*items: dict[str, Any]) -> str:
    return json.dumps(list(items))


def reply(text: str) -> dict[str, Any]:
    return {"update": {"sessionUpdate": "agent_message_chunk",
                       "content": {"type": "text", "text": text}}}


def test_in_a_pipe_the_wait_and_the_agents_notes_are_plain_lines(tmp_path: Path) -> None:
    prompt = steps(codex_note("Reconnecting... 1/5"), {"sleep": 7}, reply("back"))
    result = louise("chat", "--cwd", str(tmp_path), prompt, env=script_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "back\n"
    lines = result.stderr.splitlines()
    assert "[script] Reconnecting... 1/5" in lines, result.stderr
    assert any(re.fullmatch(r"louise: working [5-9]s · Reconnecting\.\.\. 1/5", line)
               for line in lines), result.stderr
    assert "\r" not in result.stderr


def test_an_agent_slow_to_start_says_so_while_it_starts(tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), steps(reply("hi")),
                    env=script_env(tmp_path, start_delay=7))
    assert result.returncode == 0, result.stderr
    assert re.search(r"^louise: starting script · [5-9]s$", result.stderr, re.M), result.stderr


def test_on_a_terminal_the_wait_counts_in_place(tmp_path: Path) -> None:
    prompt = steps(codex_note("waiting for network"), {"sleep": 5}, reply("back"))
    terminal = Terminal("chat", "--cwd", str(tmp_path), prompt, env=script_env(tmp_path))
    terminal.expect("s · waiting for network")  # counted in place: 1s, 2s, …
    terminal.expect("back")
    assert re.search(r"\rlouise: working [1-9]s · waiting for network", terminal.text)
    assert terminal.wait() == 0, terminal.text
    assert "[script] waiting for network" in terminal.text
    # Erased before the reply: the reply starts its own line, after spaces and a return.
    assert re.search(r"\r +\rback", terminal.text), terminal.text
    assert [c for c in TERMINAL_CONTROLS if c in terminal.text] == []
