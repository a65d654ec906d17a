"""The demo agent's scenarios over real stdio, driven with raw NDJSON
(tests/integration/demo_agent_driver.py): stream, edit and multi_edit, read, execute,
plan, usage, slow and cancels, sessions that outlive the process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.integration.demo_agent_driver import (  # noqa: F401 (the fixtures)
    CWD,
    READ,
    WAIT,
    Agent,
    Msg,
    RawStdout,
    final,
    is_response,
    session_fixture,
    start_fixture,
    text_of,
    updates,
)

# ---- scenarios ----------------------------------------------------------------------------


def test_stream_sends_n_chunks_of_size_s_with_one_message_id(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    seen, reply = agent.turn(session_id, "/scenario stream chunks=50 size=12 delay_ms=0")
    assert reply["result"]["stopReason"] == "end_turn"
    chunks = updates(seen, "agent_message_chunk")
    assert len(chunks) == 50
    assert {len(c["content"]["text"]) for c in chunks} == {12}
    assert len({c["messageId"] for c in chunks}) == 1 and chunks[0]["messageId"]
    assert chunks[0]["content"]["text"].startswith("00000 ")


def test_stream_knobs_come_from_the_environment(start: Callable[..., Agent]) -> None:
    agent = start(
        {"LOUISE_DEMO_SCENARIO": "stream", "LOUISE_DEMO_CHUNKS": "7", "LOUISE_DEMO_CHUNK_SIZE": "5"}
    )
    agent.initialize()
    seen, _ = agent.turn(agent.new_session(), "no scenario in this text")
    chunks = updates(seen, "agent_message_chunk")
    assert len(chunks) == 7 and {len(c["content"]["text"]) for c in chunks} == {5}


def test_a_bad_knob_or_scenario_is_explained_in_the_reply(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    seen, reply = agent.turn(session_id, "/scenario stream chunks=many")
    assert reply["result"]["stopReason"] == "end_turn" and "not a number" in text_of(seen)
    seen, _ = agent.turn(session_id, "/scenario nope")
    assert "Unknown scenario" in text_of(seen) and "`multi_edit`" in text_of(seen)


def test_help_lists_scenarios_and_fail_modes(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    seen, _ = agent.turn(session_id, "/help")
    text = text_of(seen)
    for name in ("chat", "stream", "edit", "multi_edit", "read", "execute", "slow", "limits"):
        assert f"`{name}`" in text
    for mode in ("crash", "garbage", "huge", "stderr_flood", "never_end", "limits_error"):
        assert f"`{mode}`" in text


def start_edit(agent: Agent, session_id: str, text: str = "/scenario edit") -> tuple[Any, Msg, Msg]:
    """Prompt an edit scenario up to its permission request: (prompt id, tool call, request)."""
    prompt_id = agent.prompt(session_id, text)
    seen = agent.until_request("session/request_permission")
    request = final(seen)
    (call,) = updates(seen, "tool_call")
    assert call["kind"] == "edit" and call["status"] == "pending"
    assert request["params"]["toolCall"]["toolCallId"] == call["toolCallId"]
    return prompt_id, call, request


def until_write(agent: Agent, files: dict[str, str] | None = None
                ) -> tuple[Msg, list[Msg | RawStdout]]:
    """Up to the next fs/write_text_file, answering the reads before it as a client does
    (a file of `files` with its text, any other as not found); (the write, all seen)."""
    seen: list[Msg | RawStdout] = []
    while True:
        seen += agent.until(lambda m: m.get("method") in ("fs/read_text_file",
                                                          "fs/write_text_file") and "id" in m)
        message = final(seen)
        if message["method"] == "fs/write_text_file":
            return message, seen
        path = message["params"]["path"]
        if files is not None and path in files:
            agent.reply(message, {"content": files[path]})
        else:
            agent.reply_error(message, -32002, "Resource not found")


def test_edit_asks_with_all_four_option_kinds_then_writes(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id, call, request = start_edit(agent, session_id)
    (diff,) = call["content"]
    assert diff["type"] == "diff" and diff["path"] == f"{CWD}/hello.py"
    assert diff["oldText"] and diff["newText"]
    kinds = sorted(o["kind"] for o in request["params"]["options"])
    assert kinds == ["allow_always", "allow_once", "reject_always", "reject_once"]
    agent.reply(request, {"outcome": {"outcome": "selected", "optionId": "allow-once"}})
    write, _ = until_write(agent)
    assert write["params"] == {
        "sessionId": session_id,
        "path": diff["path"],
        "content": diff["newText"],
    }
    agent.reply(write, None)
    seen = agent.until_response(prompt_id)
    assert final(seen)["result"]["stopReason"] == "end_turn"
    assert updates(seen, "tool_call_update")[-1]["status"] == "completed"


def test_edit_rejected_fails_the_tool_call_without_writing(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id, _, request = start_edit(agent, session_id)
    agent.reply(request, {"outcome": {"outcome": "selected", "optionId": "reject-once"}})
    seen = agent.until_response(prompt_id)
    assert not [m for m in seen if isinstance(m, dict) and m.get("method") == "fs/write_text_file"]
    assert updates(seen, "tool_call_update")[-1]["status"] == "failed"
    assert final(seen)["result"]["stopReason"] == "end_turn"


def test_edit_cancelled_during_permission_stops_with_cancelled(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id, _, request = start_edit(agent, session_id)
    agent.notify("session/cancel", {"sessionId": session_id})
    agent.reply(request, {"outcome": {"outcome": "cancelled"}})
    seen = agent.until_response(prompt_id)
    assert final(seen)["result"] == {"stopReason": "cancelled"}
    assert updates(seen, "tool_call_update")[-1]["status"] == "failed"


def test_allow_always_is_remembered(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id, _, request = start_edit(agent, session_id)
    agent.reply(request, {"outcome": {"outcome": "selected", "optionId": "allow-always"}})
    agent.reply(until_write(agent)[0], None)
    agent.until_response(prompt_id)
    prompt_id = agent.prompt(session_id, "/scenario edit")
    _, seen = until_write(agent)  # no permission request this time
    assert not [
        m for m in seen if isinstance(m, dict) and m.get("method") == "session/request_permission"
    ]
    agent.reply(final(seen), None)
    assert final(agent.until_response(prompt_id))["result"]["stopReason"] == "end_turn"


def test_edit_without_fs_asks_but_writes_nothing(start: Callable[..., Agent]) -> None:
    agent = start({"LOUISE_DEMO_DELAY_MS": "0"})
    agent.initialize(fs=False)
    session_id = agent.new_session()
    prompt_id, _, request = start_edit(agent, session_id)
    agent.reply(request, {"outcome": {"outcome": "selected", "optionId": "allow-once"}})
    seen = agent.until_response(prompt_id)
    assert not [m for m in seen if isinstance(m, dict) and m.get("method", "").startswith("fs/")]
    assert updates(seen, "tool_call_update")[-1]["status"] == "completed"


def test_multi_edit_has_diffs_for_several_files_one_new(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id, call, request = start_edit(agent, session_id, "/scenario multi_edit")
    diffs = call["content"]
    assert len(diffs) == 3 and all(d["type"] == "diff" for d in diffs)
    assert [d["oldText"] is None for d in diffs].count(True) == 1  # one new file
    agent.reply(request, {"outcome": {"outcome": "selected", "optionId": "allow-once"}})
    written = []
    for _ in range(3):
        write, _ = until_write(agent)
        written.append(write["params"]["path"])
        agent.reply(write, {})
    seen = agent.until_response(prompt_id)
    assert final(seen)["result"]["stopReason"] == "end_turn"
    assert sorted(written) == sorted(d["path"] for d in diffs)


def test_multi_edit_leaves_a_file_of_yours_as_it_is(session: tuple[Agent, str]) -> None:
    """Issue 23: the first /scenario multi_edit overwrote the scratch workspace's README."""
    agent, session_id = session
    prompt_id, call, request = start_edit(agent, session_id, "/scenario multi_edit")
    readme = next(d["path"] for d in call["content"] if d["path"].endswith("README.md"))
    agent.reply(request, {"outcome": {"outcome": "selected", "optionId": "allow-once"}})
    mine = {readme: "# My project\n\nNotes of mine.\n"}
    written = []
    for _ in range(2):
        write, _ = until_write(agent, mine)
        written.append(write["params"]["path"])
        agent.reply(write, {})
    seen = agent.until_response(prompt_id)
    assert readme not in written
    assert "I left `README.md` as it is" in text_of(seen)


def test_read_uses_fs_and_echoes_the_content(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario read path=notes.txt line=2 limit=5")
    request = final(agent.until_request("fs/read_text_file"))
    assert isinstance(request, dict)
    assert request["params"] == {
        "sessionId": session_id,
        "path": f"{CWD}/notes.txt",
        "line": 2,
        "limit": 5,
    }
    agent.reply(request, {"content": "line two\n```\nfenced\n```\n"})
    seen = agent.until_response(prompt_id)
    assert "line two\n```\nfenced\n```\n" in text_of(seen)
    assert updates(seen, "tool_call_update")[-1]["status"] == "completed"


def test_read_reports_a_client_error(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario read")
    request = final(agent.until_request("fs/read_text_file"))
    agent.reply_error(request, -32002, "Resource not found")
    seen = agent.until_response(prompt_id)
    assert updates(seen, "tool_call_update")[-1]["status"] == "failed"
    assert "Resource not found" in text_of(seen)


def test_read_without_fs_does_not_call_the_client(start: Callable[..., Agent]) -> None:
    agent = start()
    agent.initialize(fs=False)
    seen, reply = agent.turn(agent.new_session(), "/scenario read")
    assert reply["result"]["stopReason"] == "end_turn"
    assert not [m for m in seen if isinstance(m, dict) and "id" in m]
    assert "fs.readTextFile" in text_of(seen)


ALLOW_ONCE = {"outcome": {"outcome": "selected", "optionId": "allow-once"}}


def test_execute_drives_a_client_terminal(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario execute")
    methods = []
    answers: dict[str, Any] = {
        "session/request_permission": ALLOW_ONCE,  # it asks before it runs, as real agents do
        "terminal/create": {"terminalId": "term-1"},
        "terminal/wait_for_exit": {"exitCode": 0, "signal": None},
        "terminal/output": {"output": "hello\n", "truncated": False, "exitStatus": {"exitCode": 0}},
        "terminal/release": {},
    }
    seen_all: list[Msg | RawStdout] = []
    while True:
        seen = agent.until(lambda m: ("id" in m and "method" in m) or is_response(m, prompt_id))
        seen_all += seen
        last = seen[-1]
        assert isinstance(last, dict)
        if "method" not in last:
            break
        methods.append(last["method"])
        assert last["params"]["sessionId"] == session_id
        agent.reply(last, answers[last["method"]])
    assert methods == list(answers)
    (call,) = updates(seen_all, "tool_call")
    assert call["kind"] == "execute"
    contents = [u.get("content") for u in updates(seen_all, "tool_call_update")]
    assert [{"type": "terminal", "terminalId": "term-1"}] in contents
    assert updates(seen_all, "tool_call_update")[-1]["status"] == "completed"
    assert "hello" in text_of(seen_all)


def test_cancel_while_waiting_on_a_terminal_withdraws_and_releases(
    session: tuple[Agent, str],
) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario execute")
    agent.reply(final(agent.until_request("session/request_permission")), ALLOW_ONCE)
    agent.reply(final(agent.until_request("terminal/create")), {"terminalId": "term-9"})
    wait = final(agent.until_request("terminal/wait_for_exit"))
    agent.notify("session/cancel", {"sessionId": session_id})  # and never answer the wait
    seen = agent.until_request("terminal/release")
    withdrawn = [m for m in seen if isinstance(m, dict) and m.get("method") == "$/cancel_request"]
    assert [m["params"] for m in withdrawn] == [{"requestId": wait["id"]}]
    assert final(seen)["params"] == {"sessionId": session_id, "terminalId": "term-9"}
    agent.reply(final(seen), {})
    seen = agent.until_response(prompt_id)
    assert final(seen)["result"] == {"stopReason": "cancelled"}
    assert updates(seen, "tool_call_update")[-1]["status"] == "failed"


def test_execute_without_terminal_reports_raw_output(start: Callable[..., Agent]) -> None:
    agent = start()
    agent.initialize(terminal=False)
    prompt_id = agent.prompt(agent.new_session(), "/scenario execute")
    asked = final(agent.until_request("session/request_permission"))
    assert asked["params"]["toolCall"]["kind"] == "execute"
    agent.reply(asked, ALLOW_ONCE)
    seen = agent.until_response(prompt_id)
    assert not [m for m in seen if isinstance(m, dict) and "method" in m and "id" in m]
    last = updates(seen, "tool_call_update")[-1]
    assert last["status"] == "completed" and last["rawOutput"]["exitCode"] == 0


def test_execute_asks_first_and_a_refusal_runs_nothing(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario execute")
    asked = final(agent.until_request("session/request_permission"))
    assert asked["params"]["toolCall"]["title"].startswith("Run `echo")
    agent.reply(asked, {"outcome": {"outcome": "selected", "optionId": "reject-once"}})
    seen = agent.until_response(prompt_id)
    assert not [m for m in seen if isinstance(m, dict) and "method" in m and "id" in m]
    assert updates(seen, "tool_call_update")[-1]["status"] == "failed"
    assert "did not run" in text_of(seen)


def test_plan_is_sent_whole_and_ends_completed(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    seen, _ = agent.turn(session_id, "/scenario plan delay_ms=0")
    plans = updates(seen, "plan")
    assert len(plans) >= 2 and len({len(p["entries"]) for p in plans}) == 1
    assert {e["status"] for e in plans[-1]["entries"]} == {"completed"}
    assert plans[0]["entries"][0]["status"] == "in_progress"


def test_the_prompt_result_reports_the_turns_tokens_like_claude(
        session: tuple[Agent, str]) -> None:
    agent, session_id = session
    _, reply = agent.turn(session_id, "hello")
    usage = reply["result"]["usage"]
    assert set(usage) == {"totalTokens", "inputTokens", "outputTokens", "cachedReadTokens",
                          "cachedWriteTokens"}
    assert usage["outputTokens"] > 0 and usage["inputTokens"] > 0
    assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"]


def test_usage_reports_cost_in_usd(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    seen, _ = agent.turn(session_id, "/scenario usage tokens=2000")
    (usage,) = updates(seen, "usage_update")
    assert usage["used"] >= 2000 and usage["cost"]["currency"] == "USD"
    assert usage["cost"]["amount"] > 0


def test_slow_stops_on_session_cancel(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario slow delay_ms=5")
    for _ in range(3):
        agent.until(lambda m: bool(updates([m], "agent_message_chunk")))
    agent.notify("session/cancel", {"sessionId": session_id})
    seen = agent.until_response(prompt_id)
    assert final(seen)["result"] == {"stopReason": "cancelled"}


def test_cancel_request_on_a_prompt_answers_32800(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario fail never_end")
    agent.until(lambda m: bool(updates([m], "agent_message_chunk")))
    agent.notify("$/cancel_request", {"requestId": prompt_id})
    seen = agent.until_response(prompt_id)
    assert final(seen)["error"]["code"] == -32800


def test_never_end_ends_only_when_cancelled(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario fail never_end")
    agent.until(lambda m: bool(updates([m], "agent_message_chunk")))
    # Other requests are still served while the prompt hangs.
    assert agent.result(READ, {})["buckets"]
    agent.notify("session/cancel", {"sessionId": session_id})
    assert final(agent.until_response(prompt_id))["result"] == {"stopReason": "cancelled"}


def test_session_close_cancels_the_running_prompt(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario slow delay_ms=5")
    agent.until(lambda m: bool(updates([m], "agent_message_chunk")))
    assert agent.result("session/close", {"sessionId": session_id}) == {}
    assert final(agent.until_response(prompt_id))["result"] == {"stopReason": "cancelled"}
    unknown = agent.call("session/prompt", {"sessionId": "no-such-session", "prompt": []})
    assert unknown["error"]["code"] == -32002


def test_sessions_outlive_the_process(start: Callable[..., Agent], tmp_path: Path) -> None:
    env = {"LOUISE_DEMO_STATE_DIR": str(tmp_path), "LOUISE_DEMO_DELAY_MS": "0"}
    first = start(env)
    first.initialize()
    session_id = first.new_session()
    first.turn(session_id, "remember me")
    assert first.close() == 0
    second = start(env)
    second.initialize()
    listed = {s["sessionId"]: s for s in second.result("session/list", {})["sessions"]}
    assert listed[session_id]["title"] == "remember me"
    seen = second.until_response(
        second.request("session/load", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
    )
    assert updates(seen, "user_message_chunk")[0]["content"]["text"] == "remember me"
    assert "remember me" in text_of(seen)  # the chat reply echoed it
    assert second.new_session() != session_id  # ids are never handed out twice


def test_a_scenario_session_is_named_after_the_scenario(start: Callable[..., Agent],
                                                        tmp_path: Path) -> None:
    """Issue 23: sessions were named from the raw `/scenario …` text."""
    agent = start({"LOUISE_DEMO_STATE_DIR": str(tmp_path), "LOUISE_DEMO_DELAY_MS": "0"})
    agent.initialize()
    titles = {}
    for prompt in ("/scenario plan delay_ms=0", "/help"):
        session_id = agent.new_session()
        agent.turn(session_id, prompt)
        titles[prompt] = session_id
    listed = {s["sessionId"]: s["title"] for s in agent.result("session/list", {})["sessions"]}
    assert listed[titles["/scenario plan delay_ms=0"]] == "Scenario: plan"
    assert listed[titles["/help"]] == "Help"
    from louise.demo_agent.catalog import session_title
    assert session_title("/scenario multi_edit delay_ms=0") == "Scenario: multi edit"


def test_session_ids_never_become_paths_outside_the_store(
    start: Callable[..., Agent], tmp_path: Path
) -> None:
    agent = start({"LOUISE_DEMO_STATE_DIR": str(tmp_path / "store")})
    agent.initialize()
    for evil in ("../escape", "/tmp/escape", "a/../../escape"):
        reply = agent.call("session/load", {"sessionId": evil, "cwd": CWD, "mcpServers": []})
        assert reply["error"]["code"] == -32002
    assert agent.close() == 0
    assert not (tmp_path / "escape.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_stdin_eof_mid_prompt_exits_cleanly(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario slow delay_ms=5")
    agent.until(lambda m: bool(updates([m], "agent_message_chunk")))
    assert agent.close() == 0
    replies = []
    while (item := agent.inbox.get(timeout=WAIT)) is not None:
        if isinstance(item, dict) and is_response(item, prompt_id):
            replies.append(item)
    assert replies == [{"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "cancelled"}}]
