"""The demo agent over real stdio, driven with raw NDJSON (no louise client, no SDK).

Each test starts `python -m louise.demo_agent` as a subprocess, writes JSON-RPC lines to
its stdin and reads its stdout and stderr on threads (stderr is always drained, or a
flood would block the agent). Nothing here asserts on wall-clock time; waits are
generous and only bound a hang.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

TRANSCRIPT = Path(__file__).resolve().parent.parent / "data" / "demo_transcript.ndjson"
WAIT = 30.0  # seconds: only a bound on a hang, never a performance claim
READ = "_io.github.euri10.louiselm/account_limits/read"
UPDATED = "_io.github.euri10.louiselm/account_limits/updated"
CWD = "/tmp/louise-demo-project"

Msg = dict[str, Any]


class RawStdout:
    """A line that was not JSON."""

    def __init__(self, text: str) -> None:
        self.text = text


class Agent:
    """The demo agent as a subprocess, with a tiny hand-rolled client side."""

    def __init__(self, env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("LOUISE_DEMO_")}
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "louise.demo_agent"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd,
        )
        self.inbox: queue.Queue[Msg | RawStdout | None] = queue.Queue()
        self.stderr = bytearray()
        self.stderr_total = 0
        self._next_id = 100
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        self._stderr_thread = threading.Thread(target=self._pump_stderr, daemon=True)
        self._stderr_thread.start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8").rstrip("\n")
            try:
                self.inbox.put(json.loads(line))
            except ValueError:
                self.inbox.put(RawStdout(line))
        self.inbox.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := os.read(self.proc.stderr.fileno(), 1 << 16):
            self.stderr_total += len(chunk)
            self.stderr += chunk
            del self.stderr[: max(0, len(self.stderr) - 64 * 1024)]  # keep a tail only

    # ---- sending ------------------------------------------------------------------------

    def send(self, message: Msg) -> None:
        self.send_line(json.dumps(message).encode())

    def send_line(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Msg, request_id: Any = None) -> Any:
        if request_id is None:
            request_id = self._next_id
            self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def notify(self, method: str, params: Msg) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def reply(self, message: Msg, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def reply_error(self, message: Msg, code: int, text: str) -> None:
        self.send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": code, "message": text}})

    # ---- receiving ----------------------------------------------------------------------

    def next(self) -> Msg | RawStdout:
        try:
            item = self.inbox.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(
                f"no message within {WAIT}s; stderr: {self.stderr_tail()}"
            ) from None
        if item is None:
            raise AssertionError(f"stdout closed; stderr: {self.stderr_tail()}")
        return item

    def until(self, predicate: Callable[[Msg], bool]) -> list[Msg | RawStdout]:
        """Every message up to and including the first that matches."""
        seen: list[Msg | RawStdout] = []
        while True:
            item = self.next()
            seen.append(item)
            if isinstance(item, dict) and predicate(item):
                return seen

    def until_response(self, request_id: Any) -> list[Msg | RawStdout]:
        return self.until(lambda m: is_response(m, request_id))

    def until_request(self, method: str) -> list[Msg | RawStdout]:
        return self.until(lambda m: m.get("method") == method and "id" in m)

    def call(self, method: str, params: Msg) -> Msg:
        """Request and wait for the response; returns the whole response message."""
        reply = self.until_response(self.request(method, params))[-1]
        assert isinstance(reply, dict)
        return reply

    def result(self, method: str, params: Msg) -> Any:
        reply = self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    def initialize(self, *, fs: bool = False, terminal: bool = False) -> Msg:
        result: Msg = self.result(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {
                    "fs": {"readTextFile": fs, "writeTextFile": fs},
                    "terminal": terminal,
                },
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        )
        return result

    def new_session(self, cwd: str = CWD) -> str:
        session_id: str = self.result("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        return session_id

    def prompt(self, session_id: str, text: str) -> Any:
        return self.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )

    def turn(self, session_id: str, text: str) -> tuple[list[Msg | RawStdout], Msg]:
        """Run a prompt with no client requests; returns (everything before, the reply)."""
        seen = self.until_response(self.prompt(session_id, text))
        reply = seen.pop()
        assert isinstance(reply, dict)
        return seen, reply

    def stderr_tail(self) -> str:
        return bytes(self.stderr[-2000:]).decode("utf-8", "replace")

    def close(self) -> int:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        code = self.proc.wait(timeout=WAIT)
        self._stderr_thread.join(timeout=WAIT)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT)


# ---- message helpers -----------------------------------------------------------------------


def is_response(message: Msg, request_id: Any) -> bool:
    return (
        "method" not in message
        and message.get("id") == request_id
        and (type(message.get("id")) is type(request_id))
    )


def final(seen: Sequence[Msg | RawStdout]) -> Msg:
    """The last message of `until…()`: the one that matched, so always a JSON object."""
    item = seen[-1]
    assert isinstance(item, dict)
    return item


def updates(messages: Sequence[Msg | RawStdout], kind: str | None = None) -> list[Msg]:
    found = [
        m["params"]["update"]
        for m in messages
        if isinstance(m, dict) and m.get("method") == "session/update"
    ]
    return [u for u in found if kind is None or u["sessionUpdate"] == kind]


def text_of(messages: Sequence[Msg | RawStdout], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates(messages, kind))


def assert_valid_snapshot(snapshot: Msg) -> None:
    """The account-limits v1 validation rules (shared/docs/account-limits-v1.md)."""
    buckets = snapshot["buckets"]
    assert isinstance(buckets, list)
    ids = [b["id"] for b in buckets]
    assert len(ids) == len(set(ids)) and all(isinstance(i, str) and i for i in ids)
    if buckets:
        assert snapshot["defaultBucketId"] in ids
    now = time.time()
    for bucket in buckets:
        assert isinstance(bucket["windows"], list)
        for window in bucket["windows"]:
            used = window["usedPercent"]
            assert isinstance(used, int | float) and not isinstance(used, bool)
            assert 0 <= used <= 100
            assert type(window["windowDurationMins"]) is int and window["windowDurationMins"] > 0
            assert type(window["resetsAt"]) is int and window["resetsAt"] > now
        credits = bucket.get("credits")
        if credits is not None:
            assert credits.get("balance", 0) >= 0
    reset = snapshot.get("resetCredits")
    if reset is not None:
        assert type(reset["availableCount"]) is int and reset["availableCount"] >= 0


@pytest.fixture
def start() -> Iterator[Callable[..., Agent]]:
    agents: list[Agent] = []

    def _start(env: dict[str, str] | None = None, cwd: str | None = None) -> Agent:
        agent = Agent(env, cwd)
        agents.append(agent)
        return agent

    yield _start
    for agent in agents:
        agent.kill()


@pytest.fixture
def session(start: Callable[..., Agent]) -> tuple[Agent, str]:
    """An initialized agent (fs and terminal offered) with one session, fast streaming."""
    agent = start({"LOUISE_DEMO_DELAY_MS": "0"})
    agent.initialize(fs=True, terminal=True)
    return agent, agent.new_session()


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
