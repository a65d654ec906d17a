"""The CLI with an agent that speaks only the ACP quota RFD (tests/fakes/rfd_quota_agent.py):
`louise chat` exits 75 at a limit and waits for its reset with `--wait` (issue 26 item 4c),
its summary line says what the turn used (item 3), `louise limits refresh` and
`louise inspect --refresh` read with `quota/read` and no session (item 6)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from louise import limits as lim
from tests.integration.cli_helpers import FAKES, Running, environment, louise


def rfd_config(tmp_path: Path) -> dict[str, str]:
    env = {"FAKE_ACCOUNT": str(tmp_path / "account.json"),
           "FAKE_READ_LOG": str(tmp_path / "reads.log"),
           "FAKE_PROMPT_LOG": str(tmp_path / "prompts.log")}
    env_line = ", ".join(f"{key} = {json.dumps(value)}" for key, value in env.items())
    config = tmp_path / "config.toml"
    config.write_text("[agents.rfd]\n"
                      f"command = {json.dumps(sys.executable)}\n"
                      f"args = ['-P', {json.dumps(str(FAKES / 'rfd_quota_agent.py'))}]\n"
                      f"env = {{ {env_line} }}\n")
    return environment(config)


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def block(tmp_path: Path, seconds: float) -> float:
    until = time.time() + seconds
    (tmp_path / "account.json").write_text(json.dumps({"blockedUntil": until}))
    return until


def block_next(tmp_path: Path, seconds: float) -> None:
    """The account reaches its limit at its next prompt, for `seconds` from then."""
    (tmp_path / "account.json").write_text(json.dumps({"blockNext": seconds}))


def test_chat_at_a_limit_exits_75_and_says_when_it_resets(tmp_path: Path) -> None:
    env = rfd_config(tmp_path)
    until = block(tmp_path, 3 * 3600)
    done = louise("chat", "--agent", "rfd", "hello", env=env, cwd=tmp_path)
    assert done.returncode == 75, done.stderr
    [line] = [text for text in done.stderr.splitlines() if text.startswith("louise:")]
    assert line.startswith("louise: rfd: 5-hour limit reached; it resets in 3h (")
    assert lim.format_utc(int(until)) in line
    assert line.endswith("`louise chat --wait` waits for it and sends the prompt again")
    assert [p["outcome"] for p in lines(tmp_path / "prompts.log")] == ["refused"]


def test_chat_wait_parks_until_the_reset_then_sends_it_again(tmp_path: Path) -> None:
    env = rfd_config(tmp_path)
    block_next(tmp_path, 2)
    done = louise("chat", "--agent", "rfd", "--wait", "hello", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "echo: hello"
    assert "5-hour limit reached; parked until" in done.stderr, done.stderr
    assert "louise: sending the prompt again" in done.stderr
    prompts = lines(tmp_path / "prompts.log")
    assert [p["outcome"] for p in prompts] == ["refused", "answered"]
    assert prompts[1]["at"] >= prompts[0]["at"] + 2  # at the reset, not before


def test_chat_summary_line_says_what_the_turn_used(tmp_path: Path) -> None:
    env = rfd_config(tmp_path)
    done = louise("chat", "--agent", "rfd", "hello", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # The start-up read gave the figures before; the turn's push those after.
    assert "[usage] used 5% of the 5h window, 1% of the 7d window" in done.stderr, done.stderr


def test_limits_refresh_and_inspect_refresh_read_without_a_session(tmp_path: Path) -> None:
    env = rfd_config(tmp_path)
    done = louise("limits", "refresh", "rfd", "--detail", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("limits 76%/5h ↻2h 87%/7d")
    assert "Source: quota/read" in done.stdout
    assert "### Extra usage (extra_usage) · not enabled" in done.stdout
    assert {"session": None} in lines(tmp_path / "reads.log")
    assert all(read == {"session": None} for read in lines(tmp_path / "reads.log"))
    data = louise("inspect", "rfd", "--refresh", "--json", env=env, cwd=tmp_path)
    assert data.returncode == 0, data.stderr
    [state] = json.loads(data.stdout)["agents"]
    assert (state["status"], state["source"]) == ("fresh", "quota/read")
    assert state["label"].startswith("limits 76%/5h")
    pools = {pool["id"]: pool for pool in state["quota"]["pools"]}  # the RFD's own, whole
    assert pools["extra_usage"] == {"id": "extra_usage", "label": "Extra usage",
                                    "state": "not_enabled", "meters": []}
    cached = json.loads(louise("inspect", "rfd", "--json", env=env, cwd=tmp_path).stdout)
    assert cached["agents"][0]["status"] == "stale"  # no louise holds it any more


def test_ctrl_c_while_waiting_cancels(tmp_path: Path) -> None:
    env = rfd_config(tmp_path)
    block(tmp_path, 600)
    running = Running("chat", "--agent", "rfd", "--wait", "hello", env=env, cwd=tmp_path)
    running.wait_for("parked until", stderr=True)
    running.interrupt()
    status, _out, err = running.finish()
    assert status == 130, err
    assert [p["outcome"] for p in lines(tmp_path / "prompts.log")] == ["refused"]
