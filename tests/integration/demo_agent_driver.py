"""Driving the demo agent over real stdio with raw NDJSON (no louise client, no SDK): the
`Agent` a test starts, message helpers, and the `start` and `session` fixtures (a test
module imports `start_fixture` and `session_fixture` to use them).

`python -m louise.demo_agent` runs as a subprocess; JSON-RPC lines go to its stdin, its
stdout and stderr are read on threads (stderr always drained, or a flood would block the
agent). Nothing here asserts on wall-clock time; waits are generous and only bound a hang.
"""

from __future__ import annotations

import json
import os
import queue
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


@pytest.fixture(name="start")
def start_fixture() -> Iterator[Callable[..., Agent]]:
    agents: list[Agent] = []

    def _start(env: dict[str, str] | None = None, cwd: str | None = None) -> Agent:
        agent = Agent(env, cwd)
        agents.append(agent)
        return agent

    yield _start
    for agent in agents:
        agent.kill()


@pytest.fixture(name="session")
def session_fixture(start: Callable[..., Agent]) -> tuple[Agent, str]:
    """An initialized agent (fs and terminal offered) with one session, fast streaming."""
    agent = start({"LOUISE_DEMO_DELAY_MS": "0"})
    agent.initialize(fs=True, terminal=True)
    return agent, agent.new_session()
