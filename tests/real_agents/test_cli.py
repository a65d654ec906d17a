"""louise's command line against each real agent: turns, permissions, side effects on
disk, cancel, the agent's session list, export, and loading a session back. Every check
runs for claude, codex and vibe (`FULL`, the `agent` fixture's default); gemini and qwen
run the smoke set (`AGENTS`): a turn, permissions, edits, new files, commands, cancel,
load, resume and continue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.real_agents.conftest import RealAgent, sessions_json
from tests.real_agents.harness import AGENTS, FULL

REPLY_START = "Here is a streamed reply from the **mock** model."
REPLY_END = "That was a code fence; this is the end."
OLD_TEXT = "first\nold line\nlast\n"
NEW_TEXT = "first\nnew line by mock\nlast\n"
WRITTEN = "written by mock\n"
SHELL_OUT = "hello-from-shell\n"


def option_kind(request: dict[str, Any], answer: dict[str, Any] | None) -> str | None:
    """The kind of the option louise chose in `answer` to a permission `request`."""
    assert answer is not None, f"louise never answered {request}"
    outcome = answer["result"]["outcome"]
    if outcome.get("outcome") != "selected":
        return str(outcome.get("outcome"))
    chosen = [o for o in request["params"]["options"] if o["optionId"] == outcome["optionId"]]
    assert len(chosen) == 1, (request, answer)
    return str(chosen[0]["kind"])


def transcript_body(markdown: str) -> str:
    """An export without its header: from the first message heading on."""
    assert "\n## " in markdown, markdown
    return markdown[markdown.index("\n## "):]


def only_permission(agent: RealAgent) -> tuple[dict[str, Any], str | None]:
    answers = agent.wire.permission_answers()
    assert len(answers) == 1, f"expected one permission request, got {answers}"
    request, answer = answers[0]
    return request, option_kind(request, answer)


@pytest.mark.parametrize("agent", AGENTS, indirect=True)
def test_a_text_turn_streams_is_listed_exported_and_continued(agent: RealAgent) -> None:
    """One turn: its whole reply streamed; the session listed (the agent's own list, or
    for gemini, which has no `session/list`, what louise recorded); its export with the
    prompt and the reply once (vibe echoes the prompt as a user_message_chunk). Then a
    newer conversation, and `louise chat --continue PROMPT` takes the newest of this
    directory, so a script holds a conversation without ids."""
    prompt = "export me, please"
    result = agent.chat(prompt)
    assert result.status == 0, str(result)
    assert REPLY_START in result.stdout and REPLY_END in result.stdout, str(result)
    assert result.stdout.count(REPLY_START) == 1, str(result)
    assert "def hello():\n    return 'world'" in result.stdout, str(result)
    assert agent.stop_reasons() == ["end_turn"]
    [session_id] = agent.session_ids()
    exported = agent.louise("export", f"{agent.name}:{session_id}")
    assert exported.status == 0, str(exported)
    body = transcript_body(exported.stdout)  # the header may carry the prompt as the title
    assert body.count(prompt) == 1, exported.stdout
    assert body.count(REPLY_START) == 1, exported.stdout
    assert body.count(REPLY_END) == 1, exported.stdout
    assert body.index("## You") < body.index(prompt) < body.index("## Agent") \
        < body.index(REPLY_START), exported.stdout
    assert agent.chat("remember the word heron").status == 0
    older, newer = agent.session_ids()
    listed = sessions_json(agent.louise("sessions", "--agent", agent.name, "--json"))
    for known in (older, newer):
        mine = [info for info in listed if info.get("sessionId") == known]
        assert len(mine) == 1, listed
        assert Path(str(mine[0].get("cwd"))).resolve() == agent.workspace.resolve()
    agent.come_back_later()
    again = agent.louise("chat", "--agent", agent.name, "--continue", "what was the word")
    assert again.status == 0, str(again)
    assert REPLY_START in again.stdout, str(again)
    attached = [m["params"]["sessionId"] for method in ("session/load", "session/resume")
                for m in agent.wire.sent(method)]
    assert attached == [newer], (older, newer)
    assert agent.session_ids() == [older, newer], "no new session was created"
    asked = [r for r in agent.mock.requests() if "what was the word" in str(r.get("prompt"))]
    assert any("remember the word heron" in str(r["body"]) for r in asked), asked
    assert not any(prompt in str(r["body"]) for r in asked), asked


@pytest.mark.parametrize("agent", AGENTS, indirect=True)
def test_an_allowed_edit_changes_the_file(agent: RealAgent) -> None:
    target = agent.workspace / "notes.txt"
    target.write_text(OLD_TEXT)
    result = agent.chat(f"MOCK-EDIT {target}", "edit")
    assert result.status == 0, str(result)
    assert target.read_text() == NEW_TEXT
    _, kind = only_permission(agent)
    assert kind == "allow_once"
    assert agent.stop_reasons() == ["end_turn"]


@pytest.mark.parametrize("agent", AGENTS, indirect=True)
def test_a_refused_edit_leaves_the_file_alone(agent: RealAgent) -> None:
    target = agent.workspace / "notes.txt"
    target.write_text(OLD_TEXT)
    result = agent.chat(f"MOCK-EDIT {target}")  # no terminal, nothing allowed
    _, kind = only_permission(agent)
    assert kind == "reject_once", "a refusal picks the agent's own reject option"
    assert target.read_text() == OLD_TEXT
    assert "no terminal to ask on; to allow it, run again with --allow edit" in result.stderr, \
        str(result)
    # claude and vibe carry on and end the turn; codex's only reject option ("No, and tell
    # Codex what to do differently") ends it as cancelled. louise reports what it got, and
    # that it was the agent that stopped.
    [reason] = agent.stop_reasons()
    assert result.status == {"end_turn": 0, "cancelled": 130}[reason], str(result)
    stopped_itself = f"louise: {agent.name} ended the turn itself as cancelled"
    assert (stopped_itself in result.stderr) == (reason == "cancelled"), str(result)


def test_the_terminal_prompt_shows_the_hunk_of_the_edit(agent: RealAgent) -> None:
    """claude and vibe send only the changed region, codex the whole file: on a terminal
    the permission prompt shows the hunk, put onto the file as it is (with its context
    lines), where it printed only `diff: notes.txt (edit, 1 lines)`."""
    from tests.integration.cli_helpers import Terminal

    target = agent.workspace / "notes.txt"
    target.write_text(OLD_TEXT)
    terminal = Terminal("chat", "--agent", agent.name, f"MOCK-EDIT {target}",
                        env=agent.env, cwd=agent.workspace)
    terminal.expect("choose:", timeout=300)
    prompt = terminal.text.replace("\r\n", "\n")
    hunk = prompt[prompt.index("diff: notes.txt (edit)"):]
    assert "@@ -1,3 +1,3 @@\n     first\n    -old line\n    +new line by mock\n     last\n" \
        in hunk, prompt
    terminal.send("yes please\n")  # a typo asks again; it never cancels
    terminal.expect("type a number from 1 to", timeout=60)
    terminal.send("q\n")
    status = terminal.wait(timeout=300)
    assert target.read_text() == OLD_TEXT
    _, kind = only_permission(agent)
    assert kind == "reject_once"
    [reason] = agent.stop_reasons()
    assert status == {"end_turn": 0, "cancelled": 130}[reason], terminal.text


@pytest.mark.parametrize("agent", AGENTS, indirect=True)
def test_a_new_file_is_written(agent: RealAgent) -> None:
    target = agent.workspace / "sub" / "created.txt"
    target.parent.mkdir()
    result = agent.chat(f"MOCK-WRITE {target}", "edit")
    assert result.status == 0, str(result)
    assert target.read_text() == WRITTEN
    _, kind = only_permission(agent)
    assert kind == "allow_once"


@pytest.mark.parametrize("agent", AGENTS, indirect=True)
def test_a_shell_command_runs_once_allowed(agent: RealAgent) -> None:
    result = agent.chat("MOCK-SHELL", "execute")
    assert result.status == 0, str(result)
    assert (agent.workspace / "shell-out.txt").read_text() == SHELL_OUT
    _, kind = only_permission(agent)
    assert kind == "allow_once"
    assert agent.stop_reasons() == ["end_turn"]


def test_a_refused_shell_command_does_not_run(agent: RealAgent) -> None:
    result = agent.chat("MOCK-SHELL")
    _, kind = only_permission(agent)
    assert kind == "reject_once"
    assert not (agent.workspace / "shell-out.txt").exists()
    [reason] = agent.stop_reasons()
    assert result.status == {"end_turn": 0, "cancelled": 130}[reason], str(result)


@pytest.mark.parametrize("agent", AGENTS, indirect=True)
def test_ctrl_c_cancels_the_turn_and_tells_the_agent(agent: RealAgent) -> None:
    running = agent.start_chat("MOCK-SLOW")
    running.wait_for_stdout("slow chunk 2.")
    running.interrupt()
    result = running.finish()
    assert result.status == 130, str(result)
    assert "slow chunk 59." not in result.stdout, "the turn went on to its end"
    assert "ended the turn itself" not in result.stderr, "the person cancelled it"
    [session_id] = agent.session_ids()
    cancels = list(agent.wire.sent("session/cancel"))
    assert [c["params"]["sessionId"] for c in cancels] == [session_id]
    assert agent.stop_reasons() == ["cancelled"]


# qwen and copilot come back through --session below (qwen resumes, copilot loads).
@pytest.mark.parametrize("agent", [*FULL, "gemini"], indirect=True)
def test_a_loaded_session_replays_takes_a_further_turn_and_exports_each_message_once(
        agent: RealAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    """`session/load` through louise's registry: the replay, a further turn with the
    first behind it; the replay goes into the session louise already has a transcript
    for, so the export still has each message once."""
    first = "remember the word pelican"
    assert agent.chat(first).status == 0
    [session_id] = agent.session_ids()
    agent.come_back_later()
    monkeypatch.setenv("LOUISE_CONFIG", str(agent.config_path))
    monkeypatch.setenv("LOUISE_STATE_DIR", str(agent.state_dir))
    monkeypatch.chdir(agent.workspace)

    async def load_and_prompt() -> tuple[list[tuple[str, str, bool]], str]:
        from louise.config.loading import load_config
        from louise.permissions.broker import AllowKinds
        from louise.registry import SessionRegistry

        async with SessionRegistry(load_config(), decider=AllowKinds(frozenset())) as registry:
            session = await registry.load_session(agent.name, session_id, str(agent.workspace))
            assert session.status == "ready"
            replay = [(str(m.role), m.text, m.replayed) for m in session.messages()]
            reason = await registry.prompt(session.session_id, "and now a second turn")
        return replay, reason

    replay, reason = anyio.run(load_and_prompt)
    assert reason == "end_turn"
    users = [text for role, text, _ in replay if role == "user"]
    agents = [text for role, text, _ in replay if role == "agent"]
    if agent.name == "gemini":
        # It replays its own context message (`<session_context>…`) as the person's too,
        # and the prompt after it without a messageId: one message of the person's.
        [context] = users
        assert context.startswith("<session_context>") and context.endswith(first), users
    else:
        assert users == [first], replay
    assert any(REPLY_START in text for text in agents), replay
    assert all(replayed for _, _, replayed in replay), replay
    assert [m["params"]["sessionId"] for m in agent.wire.sent("session/load")] == [session_id]
    # The agent really continued the conversation: its model request for the second turn
    # carried the first one.
    second = [r for r in agent.mock.requests() if "and now a second turn" in r.get("prompt", "")]
    assert second, "the second turn never reached the model"
    # Any of them: claude also sends side requests (a title) that carry only the new prompt.
    assert any(first in json.dumps(r["body"]) for r in second), second
    result = agent.louise("export", f"{agent.name}:{session_id}")
    assert result.status == 0, str(result)
    body = transcript_body(result.stdout)
    assert body.count(first) == 1, result.stdout
    assert body.count("and now a second turn") == 1, result.stdout
    assert body.count(REPLY_START) == 2 and body.count(REPLY_END) == 2, result.stdout
    assert body.index(first) < body.index("and now a second turn"), result.stdout


@pytest.mark.parametrize("agent", AGENTS, indirect=True)
def test_louise_chat_session_continues_a_session_closed_at_the_agent(agent: RealAgent) -> None:
    """Before stdin closes, the turn's session is closed at the agent where it advertises
    `session/close` (claude, codex, vibe, copilot) and its answer awaited: with nothing left to
    finish, the agent gets a short grace instead of 2 s (codex does not exit by itself
    sooner). What the agent kept of the session survives: `louise chat --session ID
    PROMPT` resumes (or loads) it and takes a further turn in it; nothing of its history
    is printed again, and the export has each message once."""
    first = "remember the word pelican"
    assert agent.chat(first).status == 0
    [session_id] = agent.session_ids()
    [(_, init)] = agent.wire.pairs("initialize", ">>")
    assert init is not None
    closes = "close" in init["result"]["agentCapabilities"].get("sessionCapabilities", {})
    assert closes == (agent.name in (*FULL, "copilot")), "the agents changed what they advertise"
    entries = agent.wire.entries()
    close_at = [i for i, e in enumerate(entries) if e.get("dir") == ">>"
                and e.get("msg", {}).get("method") == "session/close"]
    if closes:
        request = entries[close_at[0]]["msg"]
        assert request["params"] == {"sessionId": session_id}
        [answered_at] = [i for i, e in enumerate(entries) if e.get("dir") == "<<"
                         and e.get("msg", {}).get("id") == request["id"]
                         and "method" not in e.get("msg", {})]
        assert "result" in entries[answered_at]["msg"], entries[answered_at]
        [eof_at] = [i for i, e in enumerate(entries) if e.get("event") == "stdin_eof"]
        assert close_at == [close_at[0]] and close_at[0] < answered_at < eof_at
    else:
        assert close_at == [], "session/close sent to an agent that does not advertise it"
    agent.come_back_later()
    result = agent.louise("chat", "--agent", agent.name, "--session", session_id,
                          "and a second turn")
    assert result.status == 0, str(result)
    assert REPLY_START in result.stdout, str(result)
    assert result.stdout.count(REPLY_START) == 1, "the replay is not printed"
    attached = [m["params"]["sessionId"] for method in ("session/load", "session/resume")
                for m in agent.wire.sent(method)]
    assert attached == [session_id]
    assert agent.session_ids() == [session_id], "no new session was created"
    second = [r for r in agent.mock.requests() if "and a second turn" in str(r.get("prompt"))]
    assert any(first in str(r["body"]) for r in second), second
    exported = agent.louise("export", f"{agent.name}:{session_id}")
    body = transcript_body(exported.stdout)
    assert body.count(first) == 1 and body.count("and a second turn") == 1, exported.stdout
    assert body.count(REPLY_START) == 2, exported.stdout
