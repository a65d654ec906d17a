"""`louise chat` as a person runs it: every failure is one `louise: …` line (plus the
agent's stderr tail) and the documented exit status; Ctrl-C; permissions asked on a
terminal or refused without one; nothing an agent sends acts on the terminal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from louise.permissions.rules import PermissionMemory
from tests.integration.cli_helpers import (
    FAKES,
    LOUISE,
    TERMINAL_CONTROLS,
    Running,
    Terminal,
    environment,
    fake_config,
    louise,
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return environment(fake_config(tmp_path / "config.toml"))


def louise_lines(stderr: str) -> list[str]:
    """The `louise: …` (or `louise VERB: …`) lines: what louise itself says."""
    return [line for line in stderr.splitlines() if re.match(r"louise( [a-z]+)?: ", line)]


def assert_clean_failure(stderr: str) -> None:
    """No traceback, and one line of louise's saying what failed (a note of what it is
    waiting for, which a loaded machine can bring, ends with '…' and is not that line)."""
    assert "Traceback" not in stderr and "ExceptionGroup" not in stderr, stderr
    assert len([line for line in louise_lines(stderr) if not line.endswith("…")]) == 1, stderr


def assert_terminal_safe(text: str) -> None:
    found = [c for c in TERMINAL_CONTROLS if c in text]
    assert found == [], f"{found!r} reached the terminal: {text!r}"


# --------------------------------------------------------------------------- exit statuses


@pytest.mark.parametrize(("prompt", "status"), [
    ("hello", 0),
    ("stop refusal", 4),
    ("stop max_tokens", 5),
    ("stop max_turn_requests", 5),
    ("stop cancelled", 130),
])
def test_each_stop_reason_has_its_exit_status(env: dict[str, str], tmp_path: Path,
                                              prompt: str, status: int) -> None:
    result = louise("chat", "--cwd", str(tmp_path), prompt, env=env)
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr
    # A turn the agent ended as cancelled by itself says so (nobody pressed Ctrl-C).
    said = [] if status != 130 else [
        "louise: fake ended the turn itself as cancelled (louise did not cancel it; an agent "
        "may stop when a permission is refused)"]
    assert louise_lines(result.stderr) == said


def test_an_error_reply_to_the_prompt_is_one_line_and_the_stderr_tail(
        env: dict[str, str], tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), "error", env=env)
    assert result.returncode == 1
    assert_clean_failure(result.stderr)
    assert louise_lines(result.stderr)[0].startswith("louise: fake: ")
    assert "the model backend answered 529" in louise_lines(result.stderr)[0]  # data.details
    assert "backend: upstream overloaded" in result.stderr  # the agent's stderr tail
    # The detail the error's data carries, in words, once; the data itself never raw.
    assert louise_lines(result.stderr)[0].count("the model backend answered 529") == 1
    assert '"details"' not in result.stderr and "{" not in louise_lines(result.stderr)[0]
    # No JSON-RPC jargon in what a person reads (issue 23 item 9).
    assert "Internal error" not in result.stderr and "-32603" not in result.stderr
    assert "JSON-RPC" not in result.stderr


def test_an_agent_dying_mid_turn_is_one_line_and_the_stderr_tail(
        env: dict[str, str], tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), "die", env=env)
    assert result.returncode == 1
    assert_clean_failure(result.stderr)
    assert "exit status 7" in louise_lines(result.stderr)[0]
    assert "fatal: model backend went away" in result.stderr
    assert "partial answer" in result.stdout


def test_the_demo_agents_crash_scenario_exits_1(tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), "/scenario fail crash")
    assert result.returncode == 1
    assert_clean_failure(result.stderr)
    assert "crashing on purpose" in result.stderr


@pytest.mark.parametrize("where", ["session/new", "session/prompt"])
def test_authentication_required_exits_3(tmp_path: Path, where: str) -> None:
    extra = {"FAKE_AUTH_NEW": "1"} if where == "session/new" else {}
    env = environment(fake_config(tmp_path / "config.toml", **extra))
    prompt = "hello" if where == "session/new" else "auth"
    result = louise("chat", "--cwd", str(tmp_path), prompt, env=env)
    assert result.returncode == 3, result.stderr
    assert_clean_failure(result.stderr)
    assert "requires authentication" in louise_lines(result.stderr)[0]
    assert "API Key" in result.stderr


@pytest.mark.parametrize("args", [
    ["chat", "--agent", "nope", "hi"],
    ["chat", "--allow", "bogus", "hi"],
    ["sessions", "--agent", "nope"],
    ["limits", "refresh", "nope"],
])
def test_bad_usage_exits_2(env: dict[str, str], args: list[str]) -> None:
    result = louise(*args, env=env)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "nope" in result.stderr or "unknown tool kind 'bogus'" in result.stderr


def test_a_bad_config_exits_2_with_every_problem(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[agents.x]\nargs = "not a list"\n')
    result = louise("chat", "hi", env=environment(config))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "agents.x.command" in result.stderr and "agents.x.args" in result.stderr


def test_ctrl_c_cancels_the_turn_and_exits_130(tmp_path: Path) -> None:
    running = Running("chat", "--cwd", str(tmp_path), "/scenario fail never_end")
    running.wait_for("cancel it")
    running.interrupt()
    code, _, stderr = running.finish()
    assert code == 130, stderr
    assert "cancelling" in stderr and "Traceback" not in stderr


def test_ctrl_c_on_a_terminal_ends_the_replys_line_once(tmp_path: Path) -> None:
    """Mid-line on a terminal: `louise: cancelling` starts the next line, and the turn's
    end follows it at once (no blank line: the reply's line is not ended twice)."""
    terminal = Terminal("chat", "--cwd", str(tmp_path),
                        "/scenario slow delay_ms=100 chunks=200")
    terminal.expect("tick 3 ")
    terminal.send("\x03")
    terminal.expect("[cancelled]")
    assert terminal.wait() == 130, terminal.text
    text = terminal.text.replace("\r\n", "\n")
    before, _, after = text.partition("louise: cancelling (Ctrl-C again to quit)\n")
    assert after.startswith("[cancelled]"), text
    assert "tick 3 " in before and before.endswith("\n") and not before.endswith("\n\n"), text


def test_a_second_ctrl_c_quits_without_a_traceback(env: dict[str, str], tmp_path: Path) -> None:
    running = Running("chat", "--cwd", str(tmp_path), "hang", env=env)
    running.wait_for("working on it")
    running.interrupt()
    running.wait_for("cancelling", stderr=True)
    running.interrupt()  # the agent ignores session/cancel: quit
    code, _, stderr = running.finish()
    assert code == 130, stderr
    assert "Traceback" not in stderr and "ExceptionGroup" not in stderr


def test_a_reader_that_leaves_cancels_the_turn_without_a_word(tmp_path: Path) -> None:
    """`louise chat … | head -c 20`: the turn is cancelled (the agent does not work on for
    nobody), nothing is printed about the closed pipe, the exit status is 0."""
    chat = subprocess.Popen([*LOUISE, "chat", "--agent", "demo", "--cwd", str(tmp_path),
                             "/scenario slow delay_ms=50 chunks=2000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert chat.stdout is not None
        assert chat.stdout.read(20).startswith(b"tick 0 ")
        chat.stdout.close()  # the reader leaves
        _out, err = chat.communicate(timeout=60)
    finally:
        chat.kill()
        chat.wait()
    stderr = err.decode()
    assert chat.returncode == 0, stderr
    assert "[cancelled]" in stderr, stderr  # cancelled, not run to its 2,000th chunk
    assert not louise_lines(stderr) and "Exception" not in stderr and "Broken" not in stderr, \
        stderr


def test_a_stderr_reader_that_leaves_lets_the_reply_go_on(tmp_path: Path) -> None:
    """`louise chat … 2>&1 >reply.md | head -1`: the notes' reader left; the reply is
    still whole on stdout, the exit status the turn's."""
    reply = tmp_path / "reply.md"
    with open(reply, "wb") as out:
        chat = subprocess.Popen([*LOUISE, "chat", "--agent", "demo", "--cwd", str(tmp_path),
                                 "hello there"], stdout=out, stderr=subprocess.PIPE)
        try:
            assert chat.stderr is not None
            chat.stderr.readline()
            chat.stderr.close()
            assert chat.wait(60) == 0
        finally:
            chat.kill()
            chat.wait()
    assert reply.read_text().startswith("## Hello from the demo agent")
    assert reply.read_text().endswith("\n")


def test_version() -> None:
    import louise as package

    result = louise("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"louise {package.__version__}"


def test_thoughts_end_their_line_and_stdout_has_only_the_reply(tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), "hello there")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("## Hello from the demo agent"), result.stdout[:80]
    thoughts = [line for line in result.stderr.splitlines() if line.startswith("💭")]
    assert thoughts, result.stderr
    # Each thought is a line of its own: nothing else printed on it.
    assert all("[" not in line and "plan:" not in line for line in thoughts), thoughts
    assert result.stderr.endswith("\n")


# --------------------------------------------------------------------------- permissions


def test_a_headless_refusal_says_why_and_how_to_allow(env: dict[str, str],
                                                       tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), "ask standard", env=env)
    assert result.returncode == 0, result.stderr
    assert "outcome: selected:r1" in result.stdout  # reject once, not "cancelled"
    assert "run again with --allow edit" in result.stderr


def test_allow_never_answers_always_nor_remembers(env: dict[str, str], tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), "--allow", "edit", "ask always_only",
                    env=env)
    assert result.returncode == 0, result.stderr
    assert "outcome: selected:r1" in result.stdout
    assert "offers none" in result.stderr
    assert PermissionMemory().list() == []
    allowed = louise("chat", "--cwd", str(tmp_path), "--allow", "edit", "ask standard", env=env)
    assert "outcome: selected:a1" in allowed.stdout
    assert PermissionMemory().list() == []


def test_dismissing_refuses_once_and_a_typo_asks_again(env: dict[str, str],
                                                       tmp_path: Path) -> None:
    terminal = Terminal("chat", "--cwd", str(tmp_path), "ask standard", env=env)
    terminal.expect("choose:")
    terminal.send("yes\n")  # not an answer: asked again, not cancelled
    terminal.expect("type a number from 1 to 4")
    terminal.send("q\n")
    assert terminal.wait() == 0, terminal.text
    assert "outcome: selected:r1" in terminal.text
    # An agent that offers no one-time refusal: dismissing is answered cancelled.
    terminal = Terminal("chat", "--cwd", str(tmp_path), "ask no_reject", env=env)
    terminal.expect("choose:")
    terminal.send("q\n")
    assert terminal.wait() == 0, terminal.text
    assert "outcome: cancelled" in terminal.text


def test_an_ambiguous_option_id_is_refused_and_never_remembered(env: dict[str, str],
                                                                 tmp_path: Path) -> None:
    terminal = Terminal("chat", "--cwd", str(tmp_path), "ask dup", env=env)
    terminal.expect("choose:")
    assert "several options one id" in terminal.text
    terminal.send("2\n")  # "Allow once", whose id is also "Always allow"'s
    assert terminal.wait() == 0, terminal.text
    assert "outcome: selected:r" in terminal.text
    assert PermissionMemory().list() == []


def test_a_prompt_settled_by_the_agent_exiting_ends_at_once(tmp_path: Path) -> None:
    go = tmp_path / "go"
    env = environment(fake_config(tmp_path / "config.toml", FAKE_GO_FILE=str(go)))
    terminal = Terminal("chat", "--cwd", str(tmp_path), "ask-exit", env=env)
    terminal.expect("choose:")
    go.touch()  # the agent exits with the question open; nobody types anything
    status = terminal.wait(timeout=60)
    assert status == 1, terminal.text
    assert "louise: the agent exited" in terminal.text
    assert "Traceback" not in terminal.text


def test_an_abandoned_prompt_does_not_swallow_the_next_answer(tmp_path: Path) -> None:
    go = tmp_path / "go"
    env = environment(fake_config(tmp_path / "config.toml", FAKE_GO_FILE=str(go)))
    terminal = Terminal("chat", "--cwd", str(tmp_path), "ask-withdraw", env=env)
    terminal.expect("choose:")
    go.touch()  # the agent withdraws the first request ($/cancel_request), asks again
    terminal.expect("choose:", count=2)
    terminal.send("1\n")  # answers the second prompt, the only one still open
    assert terminal.wait(timeout=60) == 0, terminal.text
    assert "second: selected:a1" in terminal.text
    assert "first: selected" not in terminal.text


def test_rate_limit_data_of_the_wrong_type_is_a_warning_line_never_a_traceback(
        tmp_path: Path) -> None:
    """claude-agent-acp's `_claude/rateLimit` with a `status` that is a list or an object
    (issue 21, item 6: a `TypeError` and its traceback on stderr)."""
    import sys

    config = tmp_path / "config.toml"
    config.write_text(f"[agents.claude]\ncommand = {sys.executable!r}\n"
                      f"args = ['-P', {str(FAKES / 'claude_limits_agent.py')!r}]\n")
    result = louise("chat", "--agent", "claude", "--cwd", str(tmp_path), "BADSTATUS",
                    env=environment(config))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Hello from fake claude."
    assert "Traceback" not in result.stderr and "TypeError" not in result.stderr
    warnings = [line for line in result.stderr.splitlines()
                if "ignored claude rate-limit metadata" in line]
    assert len(warnings) == 3, result.stderr
    assert all(line.startswith("louise: warning: claude: ") for line in warnings)


# --------------------------------------------------------------------------- the terminal


def test_nothing_an_agent_sends_reaches_the_terminal_raw(env: dict[str, str],
                                                         tmp_path: Path) -> None:
    for prompt in ("escape", "error", "die", "auth"):
        result = louise("chat", "--cwd", str(tmp_path), prompt, env=env)
        assert_terminal_safe(result.stdout + result.stderr)
        assert "\r" not in result.stdout + result.stderr
    # The permission prompt on a terminal: the diff line carries the path's escapes.
    terminal = Terminal("chat", "--cwd", str(tmp_path), "escape", env=env)
    terminal.expect("choose:")
    terminal.send("3\n")
    assert terminal.wait() == 0, terminal.text
    assert "diff: " in terminal.text
    assert_terminal_safe(terminal.text)


def test_session_listings_are_sanitized_and_json_stays_exact(env: dict[str, str]) -> None:
    listed = louise("sessions", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "title" in listed.stdout
    assert_terminal_safe(listed.stdout)
    as_json = louise("sessions", "--json", env=env)
    assert_terminal_safe(as_json.stdout)
    sessions = json.loads(as_json.stdout)
    assert sessions[0]["title"].startswith("title \x1b[2K")  # the data itself, escaped in JSON


def test_export_to_a_terminal_is_sanitized_and_to_a_file_escaped(env: dict[str, str],
                                                                 tmp_path: Path) -> None:
    chat = louise("chat", "--cwd", str(tmp_path), "escape", env=env)
    assert chat.returncode == 0, chat.stderr
    out = tmp_path / "out.md"
    exported = louise("export", "cli-1", "-o", str(out), env=env)
    assert exported.returncode == 0, exported.stderr
    text = out.read_bytes().decode("utf-8")  # as written: no newline translation
    assert_terminal_safe(text)
    assert "\r" not in text
    # Visible in the file, as in Neovim: the pictures of ESC, CR and BEL; C1 CSI as on
    # the terminal.
    assert "reply ␛[2K␍␛]0;pwned␇\ufffd31m end" in text
    terminal = Terminal("export", "cli-1", env=env)
    assert terminal.wait() == 0, terminal.text
    assert "reply " in terminal.text
    assert_terminal_safe(terminal.text)


def test_an_export_holds_no_section_the_agent_wrote_nor_its_control_bytes(
        env: dict[str, str], tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    chat = louise("chat", "--cwd", str(tmp_path), "forge", env=env)
    assert chat.returncode == 0, chat.stderr
    out = tmp_path / "out.md"
    exported = louise("export", "cli-1", "-o", str(out), env=env)
    assert exported.returncode == 0, exported.stderr
    text = out.read_bytes().decode("utf-8")  # as written: no newline translation
    assert_terminal_safe(text)
    assert "␛]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==␇" in text  # the OSC 52, visible
    tokens = MarkdownIt("commonmark").parse(text)
    headings = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens)
                if t.type == "heading_open"]
    # louise's sections only; the agent's own headings sit below them.
    assert [h for h in headings if h[0] in ("h1", "h2")] == [
        ("h1", "fake session `cli-1`"), ("h2", "You"), ("h2", "Agent")]
    assert ("h4", "You") in headings and ("h4", "Agent") in headings
    assert "You\n\\===" in [t.content for t in tokens if t.type == "inline"]  # text
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")]
    # The fence the agent left open is closed: the comment in it is code, as it was.
    (code,) = [t for t in tokens if t.type == "fence"]
    assert code.content == "# a comment stays as it is\n"


def test_a_reply_past_the_message_budget_shows_the_marker_and_says_so(
        env: dict[str, str], tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), "huge", env=env)
    assert result.returncode == 0, result.stderr  # the turn itself ended as it should
    lines = result.stdout.splitlines()
    assert lines[-1] == "[… message truncated: too long to keep]", lines[-3:]
    assert "the last line" not in result.stdout  # past the 8 MiB budget: not kept
    assert len(result.stdout) > 8 * 1024 * 1024  # what was kept is all there
    (said,) = louise_lines(result.stderr)
    assert said == ("louise: the agent's reply passed the limit of one message "
                    "(8,388,608 characters); the rest of it was not kept")


def test_sanitized_output_keeps_ordinary_text(env: dict[str, str], tmp_path: Path) -> None:
    result = louise("chat", "--cwd", str(tmp_path), "hello", env=env)
    assert result.stdout == "hello from the fake agent\n"
    assert os.linesep == "\n"


@pytest.mark.parametrize(("args", "status"), [
    (["chat", "--cwd", "/nonexistent/dir", "hi"], 2),
    (["demo", "--cwd", "/nonexistent/dir"], 2),
    (["export", "nope"], 2),
    (["inspect", "nope"], 2),
    (["permissions", "revoke"], 2),
    (["permissions", "revoke", "nope"], 2),
    (["chat", "--cwd", "{tmp}", "stop no_such_reason"], 1),
])
def test_bad_input_to_any_verb_is_one_line_never_a_traceback(
        env: dict[str, str], tmp_path: Path, args: list[str], status: int) -> None:
    result = louise(*[arg.replace("{tmp}", str(tmp_path)) for arg in args], env=env)
    assert result.returncode == status, result.stderr
    assert_clean_failure(result.stderr)


def test_a_state_directory_that_is_a_file_gives_warnings_not_tracebacks(
        env: dict[str, str], tmp_path: Path) -> None:
    not_a_directory = tmp_path / "state-file"
    not_a_directory.write_text("")
    env = {**env, "LOUISE_STATE_DIR": str(not_a_directory)}
    chat = louise("chat", "--cwd", str(tmp_path), "hello", env=env)
    assert chat.returncode == 0, chat.stderr
    assert "Traceback" not in chat.stderr and "louise: warning: " in chat.stderr
    revoke = louise("permissions", "revoke", "abc", env=env)
    assert revoke.returncode == 1
    assert_clean_failure(revoke.stderr)


# --------------------------------------------------------------------------- --session, --continue


def test_continue_without_a_session_here_says_so(env: dict[str, str], tmp_path: Path) -> None:
    # The fake lists one session, in another directory.
    result = louise("chat", "--cwd", str(tmp_path), "--continue", "hello", env=env)
    assert result.returncode == 1, result.stderr
    assert louise_lines(result.stderr) == [
        f"louise: fake has no session in {tmp_path} to continue; start one without --continue"]
    assert result.stdout == ""


def test_session_on_an_agent_that_cannot_continue_one_says_why(env: dict[str, str]) -> None:
    result = louise("chat", "--session", "abc", "hello", env=env)
    assert result.returncode == 1, result.stderr
    assert louise_lines(result.stderr) == [
        "louise: fake cannot continue a session (it has neither session/resume nor "
        "session/load)"]


def test_session_and_continue_do_not_go_together(env: dict[str, str]) -> None:
    result = louise("chat", "--session", "abc", "--continue", "hello", env=env)
    assert result.returncode == 2
    assert "not allowed with argument" in result.stderr


# --------------------------------------------------------------------------- streaming cost

# `louise chat` in-process with stdout counted at the file: each write that reaches it.
COUNTED_WRITES = """
import io, os, sys
class Counted(io.RawIOBase):
    writes = 0
    def writable(self): return True
    def write(self, data):
        Counted.writes += 1
        return os.write(1, data)
sys.stdout = io.TextIOWrapper(io.BufferedWriter(Counted()), encoding="utf-8")
from louise.cli.main import main
code = main(sys.argv[1:])
sys.stdout.flush()
print("WRITES", Counted.writes, file=sys.stderr)
sys.exit(code)
"""


def test_a_streamed_reply_reaches_the_terminal_in_a_write_per_frame_not_per_chunk(
        tmp_path: Path) -> None:
    """Issue 25 item 5: an agent streaming a chunk every few ms is read at most once per
    terminal frame, and what one read took is written at once (it was a wake-up, an event
    and a write per chunk: `louise chat` spent more CPU on a turn than Neovim and the
    engine together). The reply is whole and in order."""
    config = tmp_path / "config.toml"
    script = str(FAKES / "script_agent.py")
    config.write_text(f"[agents.script]\ncommand = {json.dumps(sys.executable)}\n"
                      f"args = ['-P', {json.dumps(script)}]\n")
    chunks = 80
    steps: list[dict[str, object]] = []
    for i in range(chunks):
        steps.append({"update": {"sessionUpdate": "agent_message_chunk",
                                 "content": {"type": "text", "text": f"piece {i:02d}\n"}}})
        steps.append({"sleep": 0.003})
    env = environment(config)
    result = subprocess.run(
        [sys.executable, "-P", "-c", COUNTED_WRITES, "chat", "--agent", "script",
         "--cwd", str(tmp_path), json.dumps(steps)],
        capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL,
        check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"piece {i:02d}" for i in range(chunks)]
    writes = int(re.findall(r"WRITES (\d+)", result.stderr)[-1])
    # 80 chunks over >= 240 ms: at most one read per 16.7 ms frame, so ~15 writes.
    assert writes <= chunks // 2, f"{writes} writes for {chunks} chunks"
