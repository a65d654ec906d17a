"""The proxy's sans-I/O logic: what each line turns into on each side."""

from __future__ import annotations

import json
from typing import Any

from louise import limits as lim
from louise.proxy.core import READ_METHOD, UPDATED_METHOD, ProxyCore, Routed

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


# --------------------------------------------------------------------------- hostile lines

BOMB = b"[" * 1024 + b"]" * 1024  # 2 KB: deeper than Python's JSON parser goes


def test_a_bracket_bomb_from_either_side_is_passed_on_unread() -> None:
    core = ProxyCore()
    initialized(core)
    wrapped = b'{"jsonrpc":"2.0","method":"session/update","params":{"update":' + BOMB + b"}}"
    for bomb in (BOMB, wrapped, b'{"jsonrpc":"2.0","id":' + BOMB + b',"method":"x"}'):
        assert core.from_client(bomb, NOW).to_agent == [bomb]
        assert core.from_agent(bomb, NOW).to_client == [bomb]
    # Later messages are still read: a rate-limit update still pushes.
    assert len(core.from_agent(rate_limit_update(0.3), NOW).to_client) == 2


def test_a_read_with_a_lone_surrogate_id_is_answered_in_valid_json() -> None:
    core = ProxyCore()
    initialized(core)
    read = b'{"jsonrpc":"2.0","id":"r\\ud800","method":"' + READ_METHOD.encode() + b'"}'
    (answer,) = core.from_client(read, NOW).to_client
    assert json.loads(answer)["id"] == "r\ud800"
    answer.decode("utf-8")  # strict: the surrogate is escaped, not encoded


def test_a_read_whose_id_names_no_request_goes_to_the_agent() -> None:
    core = ProxyCore()
    initialized(core)
    for request_id in (None, True, 1.5, [1], {"a": 1}):
        read = line({"jsonrpc": "2.0", "id": request_id, "method": READ_METHOD})
        assert core.from_client(read, NOW).to_agent == [read]


def error_of(raw: bytes) -> tuple[object, int, str]:
    message = json.loads(raw)
    assert set(message) == {"jsonrpc", "id", "error"}
    return message["id"], message["error"]["code"], message["error"]["message"]


def test_a_dropped_request_is_answered_to_the_side_that_sent_it(caplog: Any) -> None:
    core = ProxyCore()
    initialized(core)
    head = b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"prompt":[{"text":"xx'
    with caplog.at_level("WARNING", logger="louise.proxy"):
        routed = core.dropped_from_client(100_000, head, 65_536)
    assert routed.to_agent == []
    request_id, code, message = error_of(routed.to_client[0])
    assert (request_id, code) == (7, -32600)
    assert "100,000 bytes" in message and "65,536" in message
    assert "client: dropped a 100,000-byte request 'session/prompt' (id 7)" in caplog.text
    # The other way: an agent's request goes back to the agent, whatever the key order.
    head = b'{"method":"fs/read_text_file","id":"a-1","jsonrpc":"2.0","params":{"path":"'
    routed = core.dropped_from_agent(70_000, head, 65_536)
    assert routed.to_client == []
    assert error_of(routed.to_agent[0])[:2] == ("a-1", -32600)


def test_a_dropped_answer_becomes_an_error_answer_to_the_side_waiting() -> None:
    core = ProxyCore()
    initialized(core)
    core.from_client(line({"jsonrpc": "2.0", "id": 4, "method": "session/prompt"}), NOW)
    routed = core.dropped_from_agent(90_000, b'{"jsonrpc":"2.0","id":4,"result":{"stopR', 1024)
    assert routed.to_agent == []
    assert error_of(routed.to_client[0])[:2] == (4, -32603)
    assert not core._prompt_ids.pop(4)  # no longer waited for
    routed = core.dropped_from_client(90_000, b'{"id":"fs-9","result":{"content":"ab', 1024)
    assert routed.to_client == []
    assert error_of(routed.to_agent[0])[:2] == ("fs-9", -32603)


def test_a_dropped_line_without_a_usable_id_is_only_logged() -> None:
    core = ProxyCore()
    initialized(core)
    for head in (b'{"jsonrpc":"2.0","method":"session/update","params":{"update":{"x":"',
                 b'{"jsonrpc":"2.0","params":{"a":"', b'{"jsonrpc":"2.0","id":12',
                 b'{"id":null,"method":"x","params":"', b'{"id":[1],"method":"x","params":"',
                 b'{"id":true,"method":"x","params":"', b"[[[[[[[", b"\xff\xfe", b"",
                 b'{"id":"' + b"x" * 300 + b'","method":"m","params":"'):
        assert core.dropped_from_client(10_000, head, 1024) == Routed()
        assert core.dropped_from_agent(10_000, head, 1024) == Routed()


def test_the_head_the_framing_keeps_names_the_request() -> None:
    from louise.acp.framing import LineDecoder, OversizedLine
    from louise.proxy.heads import Head, read_head

    message = {"jsonrpc": "2.0", "id": 31, "method": "session/prompt",
               "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "x" * 5000}]}}
    (dropped,) = LineDecoder(1024).feed(line(message) + b"\n")
    assert isinstance(dropped, OversizedLine)
    assert read_head(dropped.head) == Head("request", 31, "session/prompt")
    # Members in any order; only values the head holds whole count.
    assert read_head(b' { "params" : {"a": [1, {"b": null}]}, "id" : "q", "method":"m"') == \
        Head("request", "q", "m")
    assert read_head(b'{"method":"m","id":12') == Head("unknown", None, "m")  # 12… cut
    assert read_head(b'{"method":"m","id":12}') == Head("request", 12, "m")
    assert read_head(b'{"id":-3,"error":{"code":') == Head("response", -3)
    assert read_head(b'{"method":"session/update","params":{') == \
        Head("notification", None, "session/update")
    assert read_head('{"id":"é","method":"m","params":"'.encode()[:9]) == Head("unknown")
