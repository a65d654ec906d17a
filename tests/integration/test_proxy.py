"""`louise proxy` end to end: a real proxy process between a client and an agent process.

Clients: louise's own (`open_connection`) and the ACP SDK's client side. Agents: a fake with
claude-agent-acp's rate-limit shapes, and the SDK fake agent that speaks the v1 extension
itself (the proxy must then stay transparent).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise import limits as lim
from louise.acp.connection import open_connection
from louise.acp.errors import RpcError
from louise.acp.process import AgentCommand
from louise.proxy import READ_METHOD, UPDATED_METHOD
from tests.integration.agents import FAKES, Recorder, wait_until

pytestmark = pytest.mark.anyio


def proxied(*agent_argv: str, env: dict[str, str] | None = None) -> AgentCommand:
    return AgentCommand(sys.executable, ["-m", "louise.cli", "proxy", "--", *agent_argv],
                        env=env or {})


def fake_claude() -> list[str]:
    return [sys.executable, str(FAKES / "claude_limits_agent.py")]


def pushes(rec: Recorder) -> list[Any]:
    return [params for method, params in rec.ext if method == UPDATED_METHOD]


async def test_louise_client_gets_translated_limits_through_the_proxy() -> None:
    rec = Recorder()
    async with open_connection(proxied(*fake_claude()), rec.handlers()) as conn:
        init = conn.initialized
        assert init is not None
        capability = lim.negotiate(init.agent_capabilities)
        assert capability == lim.Capability(READ_METHOD, UPDATED_METHOD)
        # The agent's own capability metadata passes through next to ours.
        assert init.agent_capabilities["_meta"]["claudeCode"] == {"promptQueueing": True}
        assert init.agent_info["name"] == "fake-claude-agent-acp"

        # Nothing observed yet: an error, never an empty snapshot.
        with pytest.raises(RpcError) as caught:
            await conn.ext_request(READ_METHOD, {})
        assert "not observed yet" in caught.value.message

        session = await conn.new_session("/tmp")
        result = await conn.prompt(session.session_id, [{"type": "text", "text": "hi"}])
        assert result["stopReason"] == "end_turn"
        await wait_until(lambda: len(pushes(rec)) == 1)
        snapshot = lim.parse_snapshot(pushes(rec)[0])
        bucket = snapshot.default_bucket
        assert bucket is not None and bucket.id == "claude"
        assert [(w.duration_mins, w.used_percent) for w in bucket.windows] == [
            (300, 24.0), (10080, 13.0)]
        assert bucket.plan_type == "Claude Max"  # from `_auth/status_update`
        assert await conn.ext_request(READ_METHOD, {}) == pushes(rec)[0]

        # Everything the agent sent reached the client unchanged, rate-limit _meta included.
        await wait_until(lambda: "session_info_update" in rec.kinds())
        assert rec.texts() == ["Hello ", "from fake claude."]
        metas = [u.raw.get("_meta", {}) for _, u in rec.updates if u.kind == "usage_update"]
        assert any("_claude/rateLimit" in meta for meta in metas)
        assert ("_auth/status_update", {"authStatus": {
            "kind": "account", "label": "Claude Max", "account": {"plan": "max"}}}) in rec.ext

        # The next turn moves the windows: a new complete snapshot is pushed.
        await conn.prompt(session.session_id, [{"type": "text", "text": "again"}])
        await wait_until(lambda: len(pushes(rec)) == 2)
        second = lim.parse_snapshot(pushes(rec)[1]).default_bucket
        assert second is not None and second.windows[0].used_percent == pytest.approx(29.0)

        # A refused turn marks the bucket reached, keeping the windows and their resets.
        with pytest.raises(RpcError) as refused:
            await conn.prompt(session.session_id, [{"type": "text", "text": "REJECT"}])
        assert refused.value.data == {"errorKind": "rate_limit"}
        await wait_until(lambda: len(pushes(rec)) == 3)
        reached = lim.parse_snapshot(pushes(rec)[2]).default_bucket
        assert reached is not None and reached.reached_type == "rate_limit"
        assert reached.windows == second.windows


async def test_garbage_rate_limit_metadata_is_ignored_and_logged() -> None:
    rec = Recorder()
    async with open_connection(proxied(*fake_claude()), rec.handlers()) as conn:
        session = await conn.new_session("/tmp")
        await conn.prompt(session.session_id, [{"type": "text", "text": "GARBAGE"}])
        # The good metadata after the garbage still arrives; the garbage is only logged.
        await wait_until(lambda: len(pushes(rec)) == 1)
        await wait_until(lambda: "ignored claude rate-limit metadata" in conn.process.stderr.tail())
        assert lim.parse_snapshot(pushes(rec)[0]).default_bucket is not None


async def test_an_agent_speaking_v1_itself_passes_through_untouched() -> None:
    rec = Recorder()
    sdk = [sys.executable, str(FAKES / "sdk_agent.py")]
    async with open_connection(proxied(*sdk), rec.handlers()) as conn:
        init = conn.initialized
        assert init is not None
        capability = lim.negotiate(init.agent_capabilities)
        # The agent's own method names, not the proxy's: its v1 extension wins.
        assert capability is not None and capability.read_method == (
            "_io.github.euri10.louiselm/account_limits/read")
        session = await conn.new_session("/tmp")
        await conn.prompt(session.session_id, [{"type": "text", "text": "a b"}])
        snapshot = await conn.ext_request(capability.read_method, {})
        assert snapshot["defaultBucketId"] == "requests"  # answered by the agent


async def test_sdk_client_through_the_proxy() -> None:
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

    received: list[tuple[str, Any]] = []
    updates: list[Any] = []

    class SdkClient:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            updates.append(update)

        async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
            received.append((method, params))

        async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
            raise NotImplementedError(method)

    command = proxied(*fake_claude())
    with anyio.fail_after(60):
        async with spawn_agent_process(SdkClient(), command.command, *command.args) as (
            conn, _process):
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            caps = init.agent_capabilities
            assert caps is not None and caps.field_meta is not None
            advertised = caps.field_meta["io.github.euri10.louiselm"]["accountLimits"]
            assert advertised["readMethod"] == READ_METHOD
            session = await conn.new_session(cwd="/tmp", mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id,
                                         prompt=[text_block("hello")])
            assert response.stop_reason == "end_turn"
            # The SDK strips the leading "_" of extension method names.
            updated = UPDATED_METHOD[1:]
            await wait_until(lambda: any(method == updated for method, _ in received))
            snapshot = await conn.ext_method(READ_METHOD[1:], {})
            assert snapshot == next(params for method, params in received if method == updated)
            bucket = lim.parse_snapshot(snapshot).default_bucket
            assert bucket is not None and [w.duration_mins for w in bucket.windows] == [
                300, 10080]
            assert any(getattr(u, "session_update", None) == "agent_message_chunk"
                       for u in updates)


async def test_proxy_without_an_agent_command_says_how_to_use_it() -> None:
    result = await anyio.run_process([sys.executable, "-m", "louise.cli", "proxy"],
                                     check=False)
    assert result.returncode == 2
    assert b"louise proxy -- AGENT" in result.stderr


async def test_proxy_with_a_missing_agent_exits_2_with_a_message() -> None:
    result = await anyio.run_process(
        [sys.executable, "-m", "louise.cli", "proxy", "--", "/nonexistent/agent-xyz"],
        check=False)
    assert result.returncode == 2
    assert b"agent command not found" in result.stderr


async def test_louise_registry_through_the_proxy_then_inspect_from_the_cache(
    tmp_path: Path,
) -> None:
    """louise as it is today (v1 only) gets claude's windows through the proxy, and
    `louise inspect` shows them from the cache afterwards."""
    from louise.config.loading import load_config_mapping
    from louise.registry import SessionRegistry
    from louise.storage.limits_cache import LimitsCache

    command = proxied(*fake_claude())
    config = load_config_mapping(
        {"agents": {"claude": {"command": command.command, "args": list(command.args)}}})
    cache = LimitsCache()
    async with SessionRegistry(config, grace_seconds=0.5) as reg:
        session = await reg.new_session("claude", str(tmp_path))
        assert await reg.prompt(session.session_id, "hello") == "end_turn"
        await wait_until(lambda: reg.inspect_limits("claude").status == "fresh"
                         and reg.inspect_limits("claude").snapshot is not None
                         and bool(reg.inspect_limits("claude").snapshot.buckets))
        label = lim.render_label(reg.inspect_limits("claude"), reg.clock())
        assert label is not None and label.text.startswith("limits 76%/5h ")
        assert " 87%/7d " in label.text
        await wait_until(lambda: (state := cache.load().states.get("claude")) is not None
                         and state.status == "fresh")
    result = await anyio.run_process(
        [sys.executable, "-m", "louise.cli", "inspect", "claude", "--json"], check=False)
    assert result.returncode == 0, result.stderr
    agent = json.loads(result.stdout)["agents"][0]
    assert agent["status"] == "stale"  # no live session any more
    windows = agent["snapshot"]["buckets"][0]["windows"]
    assert [(w["windowDurationMins"], w["usedPercent"]) for w in windows] == [
        (300, 24.0), (10080, 13.0)]
    assert "76%/5h" in agent["label"]


def test_an_agent_that_exits_while_its_child_holds_stdout_ends_the_proxy(
        tmp_path: Path) -> None:
    """The client keeps the proxy's input open; the agent exits 3 and leaves a child holding
    its stdout. The proxy ends with status 3 and the child goes with the agent's group."""
    import os
    import subprocess

    pid_file = tmp_path / "child.pid"
    script = f"sleep 600 2>/dev/null & echo $! > {pid_file}; exit 3"
    with (tmp_path / "stderr").open("w+b") as stderr:
        proxy = subprocess.Popen(
            [sys.executable, "-P", "-m", "louise.cli", "proxy", "--", "sh", "-c", script],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        try:
            assert proxy.wait(timeout=60) == 3
        finally:
            proxy.kill()
            assert proxy.stdin is not None
            proxy.stdin.close()
            proxy.wait()
        stderr.seek(0)
        printed = stderr.read().decode()
    assert "Traceback" not in printed and "Exception" not in printed, printed
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{child}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        raise AssertionError("the agent's child outlived the proxy")


# --------------------------------------------------------------------------- hostile lines
# A raw client (bytes in, lines out) and the fake claude agent behind a real proxy with a
# 64 KiB message limit: whatever either side sends, the proxy keeps running.

LIMIT = 65_536
BOMB = b"[" * 1024 + b"]" * 1024  # the 2 KB line that stopped the proxy (RecursionError)


class RawClient:
    """A `louise proxy` subprocess written to line by line; everything it writes back is
    kept, decoded where it is JSON."""

    def __init__(self, process: Any, stderr: Path) -> None:
        self.process = process
        self.stderr = stderr
        self.lines: list[bytes] = []
        self.next_id = 100

    async def read(self) -> None:
        buffer = b""
        async for chunk in self.process.stdout:
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            self.lines.extend(line for line in complete if line)

    async def send(self, data: bytes) -> None:
        await self.process.stdin.send(data + b"\n")

    def messages(self) -> list[dict[str, Any]]:
        found = []
        for line in self.lines:
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(message, dict):
                found.append(message)
        return found

    async def answer(self, request_id: Any, timeout: float = 60) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            return next((m for m in self.messages()
                         if m.get("id") == request_id and "method" not in m), None)

        await wait_until(lambda: found() is not None, timeout)
        answer = found()
        assert answer is not None
        return answer

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        await self.send(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                    "params": params}).encode())
        return await self.answer(self.next_id)

    async def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        return await self.request("session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": text}]})

    def pushes(self) -> list[dict[str, Any]]:
        return [m["params"] for m in self.messages() if m.get("method") == UPDATED_METHOD]

    def texts(self) -> str:
        return "".join(m["params"]["update"]["content"]["text"] for m in self.messages()
                       if m.get("method") == "session/update"
                       and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk")

    def logged(self) -> str:
        return self.stderr.read_text(errors="replace")


async def with_raw_proxy(tmp_path: Path, body: Any) -> str:
    """Run `body(client, session_id)` against the proxied fake claude agent, after
    initialize and session/new; then close the proxy's input and return its stderr, once
    it has exited 0 (its agent's status) without a traceback."""
    stderr = tmp_path / "proxy-stderr"
    command = [sys.executable, "-m", "louise.cli", "proxy", "--max-message-bytes", str(LIMIT),
               "--", *fake_claude()]
    with stderr.open("wb") as err:
        process = await anyio.open_process(command, stderr=err,
                                           env={**os.environ, "FAKE_LONG_BYTES": "100000"})
    client = RawClient(process, stderr)
    async with process, anyio.create_task_group() as tg:
        tg.start_soon(client.read)
        init = await client.request("initialize", {"protocolVersion": 1})
        assert lim.negotiate(init["result"]["agentCapabilities"]) is not None
        session = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        await body(client, session["result"]["sessionId"])
        await process.stdin.aclose()
        with anyio.fail_after(60):
            assert await process.wait() == 0
    logged = client.logged()
    assert "Traceback" not in logged and "Error" not in logged, logged
    return logged


async def test_bracket_bombs_from_either_side_pass_and_the_proxy_keeps_running(
        tmp_path: Path) -> None:
    async def body(client: RawClient, session_id: str) -> None:
        # From the client: a bare bomb and one inside a notification.
        await client.send(BOMB)
        await client.send(b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":'
                          + json.dumps(session_id).encode() + b',"x":' + BOMB + b"}}")
        # From the agent: the same, before its turn's text and rate-limit data.
        assert (await client.prompt(session_id, "BOMB"))["result"]["stopReason"] == "end_turn"
        await wait_until(lambda: len(client.pushes()) == 1)
        assert BOMB in client.lines  # passed on unchanged
        # Later messages still flow both ways.
        assert (await client.prompt(session_id, "again"))["result"]["stopReason"] == "end_turn"
        await wait_until(lambda: len(client.pushes()) == 2)
        assert client.texts() == "Hello from fake claude." * 2

    await with_raw_proxy(tmp_path, body)


async def test_a_rate_limit_status_of_the_wrong_type_is_logged_and_the_proxy_keeps_running(
        tmp_path: Path) -> None:
    async def body(client: RawClient, session_id: str) -> None:
        answer = await client.prompt(session_id, "BADSTATUS")
        assert answer["result"]["stopReason"] == "end_turn"
        # The good rate-limit data after the bad still arrives, and later turns too.
        await wait_until(lambda: len(client.pushes()) == 1)
        assert (await client.prompt(session_id, "again"))["result"]["stopReason"] == "end_turn"
        await wait_until(lambda: len(client.pushes()) == 2)

    logged = await with_raw_proxy(tmp_path, body)
    assert "ignored claude rate-limit metadata: _claude/rateLimit has no known status " \
        "(a list)" in logged
    assert "(an object)" in logged and "rateLimitType is a list" in logged


async def test_a_too_long_request_is_answered_to_the_side_that_sent_it(tmp_path: Path) -> None:
    async def body(client: RawClient, session_id: str) -> None:
        # Client -> agent: the client gets the error; the agent never sees the request.
        answer = await client.prompt(session_id, "x" * 100_000)
        assert answer["error"]["code"] == -32600
        assert "65,536 bytes" in answer["error"]["message"]
        # Agent -> client: the agent gets the error (and says so in its turn's text).
        answer = await client.prompt(session_id, "LONGREQUEST")
        assert answer["result"]["stopReason"] == "end_turn"
        assert "long request answered: -32600 louise proxy did not pass this request on" \
            in client.texts()
        assert not any(m.get("method") == "session/request_permission"
                       for m in client.messages())
        # Later messages still flow.
        assert (await client.prompt(session_id, "again"))["result"]["stopReason"] == "end_turn"
        await wait_until(lambda: len(client.pushes()) == 2)

    logged = await with_raw_proxy(tmp_path, body)
    assert "client: dropped a 100," in logged and "request 'session/prompt'" in logged
    assert "answered the client with an error" in logged
    assert "agent: dropped a 100," in logged and "'session/request_permission' (id 'long-1')" \
        in logged
