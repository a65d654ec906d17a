"""The proxy's sans-I/O logic: what each line turns into on each side."""

from __future__ import annotations

import json
from typing import Any

from louise import limits as lim
from louise.proxy.core import READ_METHOD, UPDATED_METHOD, ProxyCore

NOW = 1_788_450_000.0
R5 = 1_788_465_600


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def initialized(core: ProxyCore, caps: Any = None) -> list[bytes]:
    core.from_client(line({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": {"protocolVersion": 1}}), NOW)
    result = {"protocolVersion": 1,
              "agentCapabilities": {"_meta": {"claudeCode": {}}} if caps is None else caps}
    return core.from_agent(line({"jsonrpc": "2.0", "id": 0, "result": result}), NOW).to_client


def rate_limit_update(utilization: float) -> bytes:
    return line({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": 1, "size": 2,
                                     "_meta": {"_claude/rateLimit": {
                                         "status": "allowed", "unifiedWindows": {"five_hour": {
                                             "utilization": utilization, "resetsAt": R5}}}}}}})


def test_initialize_gains_the_capability_and_keeps_everything_else() -> None:
    core = ProxyCore()
    (out,) = initialized(core)
    result = json.loads(out)["result"]
    assert lim.negotiate(result["agentCapabilities"]) == lim.Capability(
        READ_METHOD, UPDATED_METHOD)
    assert result["agentCapabilities"]["_meta"]["claudeCode"] == {}
    assert core.serving


def test_an_agent_with_v1_is_left_alone() -> None:
    core = ProxyCore()
    caps = {"_meta": {"io.github.euri10.louiselm": {"accountLimits": {
        "version": 1, "readMethod": "_own/read", "updatedMethod": "_own/updated"}}}}
    raw = line({"jsonrpc": "2.0", "id": 0, "result": {"agentCapabilities": caps}})
    core.from_client(line({"jsonrpc": "2.0", "id": 0, "method": "initialize"}), NOW)
    assert core.from_agent(raw, NOW).to_client == [raw]
    assert core.serving is False
    # Its reads go to the agent, and rate-limit metadata produces no push of ours.
    read = line({"jsonrpc": "2.0", "id": 1, "method": READ_METHOD, "params": {}})
    assert core.from_client(read, NOW).to_agent == [read]
    update = rate_limit_update(0.5)
    assert core.from_agent(update, NOW).to_client == [update]


def test_lines_pass_byte_for_byte_in_both_directions() -> None:
    core = ProxyCore()
    initialized(core)
    for raw in (b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/"}}',
                b'{"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}}',
                b"not json at all", b"[1,2]", "{\"text\":\"\u00e9t\u00e9\"}".encode()):
        assert core.from_client(raw, NOW).to_agent == [raw]
        assert core.from_agent(raw, NOW).to_client == [raw]


def test_read_before_and_after_an_observation() -> None:
    core = ProxyCore()
    initialized(core)
    read = line({"jsonrpc": "2.0", "id": "r1", "method": READ_METHOD, "params": {}})
    routed = core.from_client(read, NOW)
    assert routed.to_agent == []
    error = json.loads(routed.to_client[0])
    assert error["id"] == "r1" and error["error"]["code"] == -32603
    update = rate_limit_update(0.25)
    out = core.from_agent(update, NOW).to_client
    assert out[0] == update  # forwarded first, unchanged
    push = json.loads(out[1])
    assert push["method"] == UPDATED_METHOD and "id" not in push
    assert lim.parse_snapshot(push["params"]).default_bucket_id == "claude"
    answer = json.loads(core.from_client(read, NOW).to_client[0])
    assert answer == {"jsonrpc": "2.0", "id": "r1", "result": push["params"]}
    # The same data again pushes nothing new.
    assert core.from_agent(update, NOW).to_client == [update]


def test_refused_prompt_marks_reached_and_garbage_is_only_logged(caplog: Any) -> None:
    core = ProxyCore()
    initialized(core)
    core.from_agent(rate_limit_update(0.5), NOW)
    core.from_client(line({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                           "params": {"sessionId": "s", "prompt": []}}), NOW)
    refused = line({"jsonrpc": "2.0", "id": 3, "error": {
        "code": -32603, "message": "Internal error", "data": {"errorKind": "rate_limit"}}})
    out = core.from_agent(refused, NOW + 1).to_client
    assert out[0] == refused
    bucket = lim.parse_snapshot(json.loads(out[1])["params"]).default_bucket
    assert bucket is not None and bucket.reached_type == "rate_limit"
    assert [w.used_percent for w in bucket.windows] == [50.0]
    # An error answer to anything but a prompt is not a rejection.
    other = line({"jsonrpc": "2.0", "id": 99, "error": {"code": 429, "message": "x"}})
    assert core.from_agent(other, NOW).to_client == [other]
    garbage = line({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": {"sessionUpdate": "usage_update",
                                     "_meta": {"_claude/rateLimit": "nope"}}}})
    with caplog.at_level("WARNING", logger="louise.proxy"):
        assert core.from_agent(garbage, NOW).to_client == [garbage]
    assert "ignored claude rate-limit metadata" in caplog.text


def test_tracked_request_ids_are_bounded() -> None:
    core = ProxyCore()
    initialized(core)
    for i in range(5000):
        core.from_client(line({"jsonrpc": "2.0", "id": i, "method": "session/prompt"}), NOW)
    assert len(core._prompt_ids._ids) == 1024
