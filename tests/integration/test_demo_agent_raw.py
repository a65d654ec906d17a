"""The demo agent over real stdio, driven with raw NDJSON (tests/integration/
demo_agent_driver.py): the piped transcript, initialize, sessions and their order,
account limits, fail modes. Its scenarios: test_demo_agent_scenarios.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.demo_agent_driver import (  # noqa: F401 (the fixtures)
    CWD,
    READ,
    TRANSCRIPT,
    UPDATED,
    WAIT,
    Agent,
    Msg,
    RawStdout,
    assert_valid_snapshot,
    final,
    session_fixture,
    start_fixture,
    text_of,
    updates,
)

# ---- the hand-typed transcript, piped through a shell ------------------------------------------


def run_transcript(state_dir: Path) -> tuple[list[Msg], subprocess.CompletedProcess[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUISE_DEMO_")}
    env["LOUISE_DEMO_STATE_DIR"] = str(state_dir)
    done = subprocess.run(
        ["sh", "-c", '"$0" -P -m louise.demo_agent < "$1"', sys.executable, str(TRANSCRIPT)],
        capture_output=True,
        timeout=60,
        env=env,
    )
    lines = done.stdout.decode().splitlines()
    return [json.loads(line) for line in lines], done  # every stdout line must be JSON


def test_piped_transcript_answers_every_request_and_exits_0(tmp_path: Path) -> None:
    messages, done = run_transcript(tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    replies = {m["id"]: m for m in messages if "method" not in m}
    assert set(replies) == {0, 1, 2, 3}
    init = replies[0]["result"]
    assert init["protocolVersion"] == 1
    assert init["agentInfo"]["name"] == "louise-demo-agent"
    assert init["agentCapabilities"]["_meta"]["io.github.euri10.louiselm"]["accountLimits"] == {
        "version": 1,
        "readMethod": READ,
        "updatedMethod": UPDATED,
    }
    assert replies[1]["result"]["sessionId"] == "demo-1"
    assert replies[2]["result"]["stopReason"] == "end_turn"
    assert_valid_snapshot(replies[3]["result"])
    # The chat scenario: thought, plan, a read tool call, markdown with a code fence.
    assert text_of(messages, "agent_thought_chunk")
    assert updates(messages, "plan")
    assert [u["kind"] for u in updates(messages, "tool_call")] == ["read"]
    assert "```python" in text_of(messages)
    # After the prompt reply: the usage, then the account limits.
    after = messages[messages.index(replies[2]) + 1 :]
    assert [u["sessionUpdate"] for u in updates(after)] == ["usage_update"]
    assert [m["method"] for m in after if m.get("method") == UPDATED] == [UPDATED]
    assert "Traceback" not in done.stderr.decode()


def test_piped_transcript_is_deterministic(tmp_path: Path) -> None:
    def normalised(state_dir: Path) -> str:
        messages, done = run_transcript(state_dir)
        assert done.returncode == 0
        text = json.dumps(messages)
        for stamp in ("resetsAt", "expiresAt"):  # wall-clock based by design
            text = re.sub(rf'"{stamp}": \d+', f'"{stamp}": 0', text)
        return re.sub(r'"updatedAt": "[^"]*"', '"updatedAt": ""', text)  # real dates too

    assert normalised(tmp_path / "first") == normalised(tmp_path / "second")


def test_piped_transcript_still_works_when_sessions_are_already_stored(tmp_path: Path) -> None:
    run_transcript(tmp_path)
    messages, done = run_transcript(tmp_path)  # its "demo-1" is now a stored session
    assert done.returncode == 0
    replies = {m["id"]: m for m in messages if "method" not in m}
    assert all("result" in reply for reply in replies.values()), replies
    assert replies[1]["result"]["sessionId"] == "demo-2"
    assert replies[2]["result"]["stopReason"] == "end_turn"


# ---- initialize, sessions, ordering ---------------------------------------------------------


def test_initialize_advertises_capabilities(start: Callable[..., Agent]) -> None:
    agent = start()
    result = agent.initialize()
    caps = result["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
    assert caps["sessionCapabilities"] == {"list": {}, "resume": {}, "close": {}, "delete": {},
                                          "fork": {}}
    assert result["authMethods"] == []
    assert agent.close() == 0


def test_updates_arrive_before_the_session_new_reply(start: Callable[..., Agent]) -> None:
    agent = start()
    agent.initialize()
    seen = agent.until_response(agent.request("session/new", {"cwd": CWD, "mcpServers": []}))
    reply = seen.pop()
    assert isinstance(reply, dict)
    session_id = reply["result"]["sessionId"]
    kinds = [u["sessionUpdate"] for u in updates(seen)]
    assert kinds == ["usage_update", "available_commands_update"]
    assert all(m["params"]["sessionId"] == session_id for m in seen if isinstance(m, dict))
    result = reply["result"]
    assert result["modes"]["currentModeId"] in [m["id"] for m in result["modes"]["availableModes"]]
    categories = {o["category"] for o in result["configOptions"]}
    assert {"mode", "model", "thought_level"} <= categories


def test_usage_update_and_limits_update_follow_the_prompt_reply(
    session: tuple[Agent, str],
) -> None:
    agent, session_id = session
    agent.turn(session_id, "hi")
    after = [agent.next(), agent.next()]
    assert updates(after, "usage_update")[0]["size"] > 0
    last = after[1]
    assert isinstance(last, dict) and last["method"] == UPDATED
    assert_valid_snapshot(last["params"])


def test_each_prompt_uses_a_little_more_of_the_account(session: tuple[Agent, str]) -> None:
    agent, session_id = session

    def short_window() -> float:
        snapshot = agent.result(READ, {})
        value: float = snapshot["buckets"][0]["windows"][0]["usedPercent"]
        return value

    before = short_window()
    assert short_window() == before  # deterministic: reading changes nothing
    agent.turn(session_id, "/scenario stream chunks=1")
    assert short_window() > before


def test_unknown_request_gets_method_not_found_with_the_id_echoed(
    start: Callable[..., Agent],
) -> None:
    agent = start()
    agent.initialize()
    agent.notify("_unknown/notification", {"x": 1})  # ignored: no answer
    for request_id in ("req-α", 2**40, None):
        reply = agent.until_response(agent.request("session/does_not_exist", {}, request_id))
        assert len(reply) == 1  # nothing else came first (the notification was ignored)
        error = reply[0]
        assert isinstance(error, dict)
        assert error["error"]["code"] == -32601
        assert error["error"]["data"] == {"method": "session/does_not_exist"}


def test_garbage_input_gets_a_parse_error_and_the_agent_carries_on(
    start: Callable[..., Agent],
) -> None:
    agent = start()
    agent.send_line(b"this is not json")
    error = agent.next()
    assert isinstance(error, dict) and error["error"]["code"] == -32700 and error["id"] is None
    assert agent.initialize()["protocolVersion"] == 1


def test_an_overlong_input_line_is_dropped(start: Callable[..., Agent]) -> None:
    agent = start({"LOUISE_DEMO_MAX_LINE": "4096"})
    agent.send_line(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * 10_000}).encode())
    assert agent.initialize()["protocolVersion"] == 1  # and no answer to the dropped line
    assert agent.close() == 0  # so that all of stderr has been read
    assert "longer than 4096" in agent.stderr_tail()


def test_session_list_pages_with_an_opaque_cursor(start: Callable[..., Agent]) -> None:
    agent = start({"LOUISE_DEMO_PAGE_SIZE": "2", "LOUISE_DEMO_SAVED_SESSIONS": "3"})
    agent.initialize()
    new_id = agent.new_session()
    first = agent.result("session/list", {})
    assert len(first["sessions"]) == 2 and first["sessions"][0]["sessionId"] == new_id
    second = agent.result("session/list", {"cursor": first["nextCursor"]})
    assert len(second["sessions"]) == 2 and "nextCursor" not in second
    ids = [s["sessionId"] for s in first["sessions"] + second["sessions"]]
    assert len(set(ids)) == 4
    assert all(s["updatedAt"].endswith("Z") for s in first["sessions"])
    bad = agent.call("session/list", {"cursor": "not-a-cursor"})
    assert bad["error"]["code"] == -32602


def test_session_load_replays_history_before_its_reply(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    agent.turn(session_id, "Hello history")
    agent.until(lambda m: m.get("method") == UPDATED)
    seen = agent.until_response(
        agent.request("session/load", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
    )
    reply = seen.pop()
    assert isinstance(reply, dict) and "modes" in reply["result"]
    kinds = [u["sessionUpdate"] for u in updates(seen)]
    assert kinds[0] == "user_message_chunk"
    assert {"agent_thought_chunk", "agent_message_chunk", "tool_call"} <= set(kinds)
    assert updates(seen, "user_message_chunk")[0]["content"]["text"] == "Hello history"
    assert updates(seen, "tool_call")[0]["status"] == "completed"


def test_a_saved_session_can_be_listed_and_loaded_in_a_fresh_process(
    start: Callable[..., Agent],
) -> None:
    agent = start()
    agent.initialize()
    listed = agent.result("session/list", {})["sessions"]
    saved = [s for s in listed if s["sessionId"].startswith("saved-")]
    assert saved
    target = saved[0]
    seen = agent.until_response(
        agent.request(
            "session/load", {"sessionId": target["sessionId"], "cwd": CWD, "mcpServers": []}
        )
    )
    assert updates(seen, "user_message_chunk") and updates(seen, "agent_message_chunk")
    missing = agent.call("session/load", {"sessionId": "nope", "cwd": CWD, "mcpServers": []})
    assert missing["error"]["code"] == -32002


def test_session_resume_does_not_replay(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    agent.turn(session_id, "/scenario stream chunks=2")
    agent.until(lambda m: m.get("method") == UPDATED)
    seen = agent.until_response(
        agent.request("session/resume", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
    )
    assert len(seen) == 1 and "configOptions" in final(seen)["result"]


def test_set_mode_replies_then_sends_current_mode_update(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    reply = agent.call("session/set_mode", {"sessionId": session_id, "modeId": "architect"})
    assert reply["result"] == {}
    mode_update = agent.next()
    assert updates([mode_update]) == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "architect"}
    ]
    bad = agent.call("session/set_mode", {"sessionId": session_id, "modeId": "nonsense"})
    assert bad["error"]["code"] == -32602


def test_set_config_option_returns_the_complete_set(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    result = agent.result(
        "session/set_config_option",
        {"sessionId": session_id, "configId": "model", "value": "demo-smart"},
    )
    options = {o["id"]: o for o in result["configOptions"]}
    assert set(options) == {"mode", "model", "thought_level"}
    assert options["model"]["currentValue"] == "demo-smart"
    config_update = updates([agent.next()], "config_option_update")
    assert config_update[0]["configOptions"] == result["configOptions"]


# ---- account limits ------------------------------------------------------------------------


def test_limits_read_answers_a_complete_snapshot(start: Callable[..., Agent]) -> None:
    agent = start()
    agent.initialize()
    snapshot = agent.result(READ, {})
    assert_valid_snapshot(snapshot)
    assert snapshot["defaultBucketId"] == "requests"
    windows = {
        b["id"]: [w["windowDurationMins"] for w in b["windows"]] for b in snapshot["buckets"]
    }
    assert windows == {"requests": [300, 10080], "tokens": [1440]}
    assert "credits" in snapshot["buckets"][1]
    assert snapshot["resetCredits"]["availableCount"] == 1


def test_limits_scenario_sends_updated_and_can_switch_state(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    seen, _ = agent.turn(session_id, "/scenario limits")
    (updated,) = [m for m in seen if isinstance(m, dict) and m.get("method") == UPDATED]
    assert "id" not in updated
    assert_valid_snapshot(updated["params"])
    agent.until(lambda m: m.get("method") == UPDATED)  # the one after the first reply
    seen, _ = agent.turn(session_id, "/scenario limits state=unlimited")
    (updated,) = [m for m in seen if isinstance(m, dict) and m.get("method") == UPDATED]
    assert updated["params"] == {"buckets": [], "unlimited": True}
    assert agent.result(READ, {}) == {"buckets": [], "unlimited": True}


@pytest.mark.parametrize("how", ["env", "prompt"])
def test_limits_invalid(start: Callable[..., Agent], how: str) -> None:
    agent = start({"LOUISE_DEMO_FAIL": "limits_invalid"} if how == "env" else {})
    agent.initialize()
    if how == "prompt":
        agent.turn(agent.new_session(), "/scenario fail limits_invalid")
    snapshot = agent.result(READ, {})
    used = [w["usedPercent"] for b in snapshot["buckets"] for w in b["windows"]]
    assert 150 in used


def test_limits_error_answers_a_safe_error_and_sends_no_update(start: Callable[..., Agent]) -> None:
    agent = start({"LOUISE_DEMO_FAIL": "limits_error"})
    agent.initialize()
    reply = agent.call(READ, {})
    assert reply["error"]["code"] == -32603 and "unavailable" in reply["error"]["message"]
    session_id = agent.new_session()
    agent.turn(session_id, "/scenario stream chunks=1")
    seen = agent.until_response(agent.request(READ, {}))
    assert [u["sessionUpdate"] for u in updates(seen)] == ["usage_update"]
    assert not [m for m in seen if isinstance(m, dict) and m.get("method") == UPDATED]
    assert "error" in final(seen)
    agent.turn(session_id, "/scenario fail off")
    assert_valid_snapshot(agent.result(READ, {}))


# ---- fail modes ----------------------------------------------------------------------------


def test_crash_exits_3_mid_turn_after_some_chunks(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    agent.prompt(session_id, "/scenario fail crash chunks=2")
    seen: list[Msg | RawStdout] = []
    while (item := agent.inbox.get(timeout=WAIT)) is not None:
        seen.append(item)
    assert len(updates(seen, "agent_message_chunk")) == 2
    assert not [m for m in seen if isinstance(m, dict) and "result" in m]
    assert agent.proc.wait(timeout=WAIT) == 3
    agent._stderr_thread.join(timeout=WAIT)
    assert "crashing on purpose" in agent.stderr_tail()


def test_garbage_line_then_a_normal_reply(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    seen, reply = agent.turn(session_id, "/scenario fail garbage")
    assert [m for m in seen if isinstance(m, RawStdout)]
    assert reply["result"]["stopReason"] == "end_turn"


def test_huge_line_defaults_to_10_mib(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    seen, reply = agent.turn(session_id, "/scenario fail huge")
    sizes = [len(c["content"]["text"]) for c in updates(seen, "agent_message_chunk")]
    assert max(sizes) == 10 * 1024 * 1024
    assert reply["result"]["stopReason"] == "end_turn"


def test_stderr_flood_during_initialize(start: Callable[..., Agent]) -> None:
    agent = start({"LOUISE_DEMO_FAIL": "stderr_flood"})
    assert agent.initialize()["protocolVersion"] == 1
    assert agent.close() == 0
    assert agent.stderr_total >= 5 * 1024 * 1024


def test_stderr_flood_in_a_turn(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    _, reply = agent.turn(session_id, "/scenario fail stderr_flood mb=1")
    assert reply["result"]["stopReason"] == "end_turn"
    assert agent.close() == 0
    assert agent.stderr_total >= 1024 * 1024


def test_never_answer_new_until_cancel_request(start: Callable[..., Agent]) -> None:
    agent = start({"LOUISE_DEMO_FAIL": "never_answer_new"})
    agent.initialize()
    new_id = agent.request("session/new", {"cwd": CWD, "mcpServers": []})
    listed = agent.until_response(agent.request("session/list", {}))
    assert len(listed) == 1  # the list was answered; session/new was not
    agent.notify("$/cancel_request", {"requestId": new_id})
    assert final(agent.until_response(new_id))["error"]["code"] == -32800


def test_unknown_request_from_the_agent(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    prompt_id = agent.prompt(session_id, "/scenario fail unknown_request")
    request = final(agent.until_request("_demo/unknown"))
    assert isinstance(request, dict)
    agent.send(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -32601, "message": "Method not found"},
        }
    )
    seen = agent.until_response(prompt_id)
    assert "-32601" in text_of(seen)
    assert agent.close() == 0
    assert "_demo/unknown with error -32601" in agent.stderr_tail()


def test_custom_notification(session: tuple[Agent, str]) -> None:
    agent, session_id = session
    seen, _ = agent.turn(session_id, "/scenario fail custom_notification")
    (custom,) = [
        m for m in seen if isinstance(m, dict) and m.get("method") == "_auth/status_update"
    ]
    assert "id" not in custom and custom["params"]["authStatus"]["kind"] == "none"


def test_env_fail_mode_replaces_the_default_scenario(start: Callable[..., Agent]) -> None:
    agent = start({"LOUISE_DEMO_FAIL": "garbage"})
    agent.initialize()
    seen, _ = agent.turn(agent.new_session(), "just chatting")
    assert [m for m in seen if isinstance(m, RawStdout)]


def test_bad_environment_exits_2_with_a_message() -> None:
    env = {**os.environ, "LOUISE_DEMO_FAIL": "explode"}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "louise.demo_agent"],
        input=b"",
        capture_output=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2 and b"LOUISE_DEMO_FAIL" in done.stderr and done.stdout == b""


def test_session_times_are_real_dates(start: Callable[..., Agent]) -> None:
    import datetime

    agent = start()
    agent.initialize()
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    agent.new_session()
    listed = agent.result("session/list", {})["sessions"]
    stamps = [datetime.datetime.strptime(s["updatedAt"], "%Y-%m-%dT%H:%M:%SZ")
              .replace(tzinfo=datetime.UTC) for s in listed]
    newest = max(stamps)
    assert newest >= before - datetime.timedelta(seconds=1), (before, listed)
    assert newest <= datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=1)
