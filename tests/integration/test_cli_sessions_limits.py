"""`louise sessions`, `louise limits refresh` and `louise chat` as a person runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FAKES = Path(__file__).resolve().parent.parent / "fakes"


def louise(*args: str, config: Path | None = None, cwd: Path | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "louise.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)


def test_limits_refresh_prints_the_label_and_inspect_sees_it_afterwards() -> None:
    refreshed = louise("limits", "refresh", "demo")
    assert refreshed.returncode == 0, refreshed.stderr
    assert refreshed.stdout.startswith("limits Requests ")
    inspected = louise("inspect", "demo")
    assert inspected.returncode == 0
    row = next(line for line in inspected.stdout.splitlines() if line.startswith("demo"))
    assert "stale" in row  # nothing holds a live session any more
    assert "no live limits-capable Session" in row


def test_limits_times_show_the_local_time_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23: the detail's times were in UTC only."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30 all year: no DST to guess
    refreshed = louise("limits", "refresh", "demo", "--detail")
    assert refreshed.returncode == 0, refreshed.stderr
    updated = next(line for line in refreshed.stdout.splitlines()
                   if line.startswith("Updated:"))
    assert " UTC · " in updated and "IST" in updated, updated
    resets = [line for line in refreshed.stdout.splitlines() if "Resets:" in line]
    assert resets and all("IST" in line for line in resets), resets
    inspected = louise("inspect", "demo", "--detail")
    assert "IST" in inspected.stdout, inspected.stdout


def v1_agent_config(**env: str) -> None:
    """config.toml (where LOUISE_CONFIG points) with `hung`: tests/fakes/v1_limits_agent.py
    and a short request timeout."""
    env_line = ", ".join(f"{key} = {value!r}" for key, value in env.items())
    Path(os.environ["LOUISE_CONFIG"]).write_text(
        "request_timeout = 1\n"
        "[agents.hung]\n"
        f"command = {sys.executable!r}\n"
        f"args = ['-P', {str(FAKES / 'v1_limits_agent.py')!r}]\n"
        f"env = {{ {env_line} }}\n")


def test_limits_refresh_that_times_out_says_so_once(tmp_path: Path) -> None:
    """Issue 11.14: a read that never answers is one timeout (not three), the label says
    unavailable (not `loading`), and the `louise:` line says it timed out."""
    reads = tmp_path / "reads.log"
    v1_agent_config(FAKE_HANG_FROM="1", FAKE_READ_LOG=str(reads))
    refreshed = louise("limits", "refresh", "hung")
    assert refreshed.returncode == 1
    assert refreshed.stdout.strip() == "limits unavailable"
    assert "louise: limits refresh hung: ACP account limits read timed out" in refreshed.stderr
    assert reads.read_text().splitlines() == ["read 1"]


def test_limits_refresh_of_an_agent_without_the_extension_says_where_figures_come_from(
) -> None:
    Path(os.environ["LOUISE_CONFIG"]).write_text(
        "[agents.claude]\n"
        f"command = {sys.executable!r}\n"
        f"args = ['-P', {str(FAKES / 'claude_limits_agent.py')!r}]\n")
    refreshed = louise("limits", "refresh", "claude")
    assert refreshed.returncode == 1
    assert refreshed.stdout.strip() == "limits n/a"
    assert "no figures yet: claude sends them with its replies, for a claude.ai subscription" \
        in refreshed.stderr
    assert "louise chat --agent claude" in refreshed.stderr


def test_sessions_lists_what_the_agent_has(tmp_path: Path) -> None:
    chat = louise("chat", "--cwd", str(tmp_path), "remember me")
    assert chat.returncode == 0, chat.stderr
    listed = louise("sessions")
    assert listed.returncode == 0
    assert str(tmp_path) in listed.stdout
    # The columns are named (issue 23: a bare list of ids, times and paths).
    lines = listed.stdout.splitlines()
    assert lines[0].split("\t") == ["session", "updated", "directory", "title"], lines
    assert all(len(line.split("\t")) == 4 for line in lines[1:]), lines


def test_chat_streams_the_reply_to_stdout_and_tools_to_stderr(tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), "hello there")
    assert result.returncode == 0, result.stderr
    assert "You wrote: *hello there*" in result.stdout
    assert "Read README.md" in result.stderr  # tool activity is not mixed into the reply


def test_chat_without_a_terminal_refuses_permissions_unless_allowed(tmp_path: Path) -> None:
    refused = louise("chat", "--cwd", str(tmp_path), "/scenario edit")
    assert refused.returncode == 0
    assert not (tmp_path / "hello.py").exists()
    allowed = louise("chat", "--cwd", str(tmp_path), "--allow", "edit", "/scenario edit")
    assert allowed.returncode == 0, allowed.stderr
    assert (tmp_path / "hello.py").exists()


def test_chat_with_an_agent_that_needs_authentication_says_so(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "[agents.locked]\n"
        f"command = {str(sys.executable)!r}\n"
        f"args = [{str(FAKES / 'raw_agent.py')!r}]\n"
        "env = { FAKE_MODE = \"auth_required\" }\n"
    )
    import os

    env = dict(os.environ, LOUISE_CONFIG=str(config))
    result = subprocess.run([sys.executable, "-m", "louise.cli", "chat", "--agent", "locked",
                             "hi"], capture_output=True, text=True, timeout=60, env=env,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 3, result.stderr
    assert "requires authentication" in result.stderr
    assert "ChatGPT, API Key" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_agent_is_a_usage_error() -> None:
    result = louise("limits", "refresh", "nope")
    assert result.returncode == 2
    assert "unknown agent 'nope'" in result.stderr


def test_permissions_lists_and_revokes_remembered_choices() -> None:
    from louise.permissions.rules import PermissionMemory, RememberedRule

    empty = louise("permissions")
    assert empty.returncode == 0 and "no remembered permission choices" in empty.stdout
    rule = PermissionMemory().remember(RememberedRule(
        agent_key='["demo-agent"]', workspace="/ws", kind="edit", target="/ws/a.py",
        decision="allow"))
    listed = louise("permissions")
    assert listed.returncode == 0
    assert rule.id in listed.stdout and "/ws/a.py" in listed.stdout
    assert louise("permissions", "revoke", "nope").returncode == 2
    revoked = louise("permissions", "revoke", rule.id)
    assert revoked.returncode == 0
    assert PermissionMemory().list() == []


def test_chat_asks_permission_on_the_terminal(tmp_path: Path) -> None:
    """Under a real pseudo-terminal, as a person at a shell: the request is shown with
    every option and the typed number answers it."""
    import os
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: louise chat with the pty as its controlling terminal
        os.chdir(tmp_path)
        os.execv(sys.executable, [sys.executable, "-m", "louise.cli", "chat", "/scenario edit"])
    output = b""
    answered = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:
            break  # the child exited and closed the terminal
        if not data:
            break
        output += data
        if not answered and b"choose:" in output:
            os.write(fd, b"1\n")
            answered = True
    _, status = os.waitpid(pid, 0)
    text = output.decode("utf-8", "replace")
    assert answered, text
    assert "4) ✗✗ Always reject" in text
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert (tmp_path / "hello.py").exists()


def huge_cache(path: Path, size: int = 47_000_000) -> int:
    """A limits cache of `size` bytes or more, as an unbounded louise could leave it: one
    entry per Agent, each a valid state (parsing it all took seconds; five passes of it
    made `louise limits refresh` run past 90 s)."""
    import json

    from louise.limits import accepted, parse_snapshot, state_to_json

    snapshot = parse_snapshot({"defaultBucketId": "b", "buckets": [{"id": "b", "windows": [
        {"usedPercent": 10, "windowDurationMins": 300, "resetsAt": 4_000_000_000}]}]})
    template = json.dumps({"agent-NAME": {"holders": [{"pid": 1, "start": None}],
                                          "state": state_to_json(accepted(
                                              "agent-NAME", snapshot, 1.7e9))}})[1:-1]
    count = size // len(template) + 1
    entries = ", ".join(template.replace("NAME", str(i)) for i in range(count))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"version": 1, "agents": {' + entries + "}}")
    return path.stat().st_size


def test_a_47_mb_cache_is_not_read_and_the_next_write_is_within_its_bound() -> None:
    """Issue 21, item 10: `louise inspect` and `louise limits refresh` say the file is too
    large and work on; the refresh rewrites it within the bound."""
    from louise.storage.limits_cache import LimitsCache
    from louise.storage.limits_cache_bounds import MAX_CACHE_BYTES

    path = Path(os.environ["LOUISE_STATE_DIR"]) / "limits.json"
    size = huge_cache(path)
    assert size >= 47_000_000
    warning = (f"louise: warning: limits cache {path} is {size:,} bytes, over its bound of "
               f"{MAX_CACHE_BYTES:,} bytes, so it was not read; treating it as empty; the "
               "next update rewrites it (or delete the file)")

    inspected = louise("inspect")
    assert inspected.returncode == 0, inspected.stderr
    assert inspected.stderr.splitlines() == [warning]
    assert "No account limits have been observed yet" in inspected.stdout
    assert path.stat().st_size == size  # inspecting writes nothing

    refreshed = louise("limits", "refresh", "demo")
    assert refreshed.returncode == 0, refreshed.stderr
    assert refreshed.stdout.startswith("limits Requests ")
    assert refreshed.stderr.splitlines() == [warning]  # said once
    assert path.stat().st_size <= MAX_CACHE_BYTES
    view = LimitsCache(path).load()
    assert (view.file_status, view.warnings, list(view.states)) == ("ok", (), ["demo"])

    inspected = louise("inspect", "demo")
    assert inspected.returncode == 0 and inspected.stderr == ""
    assert "limits Requests " in inspected.stdout
