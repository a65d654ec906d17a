"""`louise proxy` as a quota bridge (issue 26 item 2), sans I/O: a client that advertises
`session.quota` gets the ACP quota RFD — the capability, `quota/read` answers,
`quota_update` pushes, `quotaExceeded` errors — translated from the agent's own signals;
an agent speaking the RFD itself is passed through and feeds v1 clients."""

from __future__ import annotations

import json
from typing import Any

from louise import limits as lim
from louise.limits.quota import QUOTA_EXCEEDED_CODE, parse_quota_snapshot
from louise.proxy.core import UPDATED_METHOD, ProxyCore

NOW = 1_788_450_000.0
R5 = 1_788_465_600
R7 = 1_788_800_000


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def initialized(core: ProxyCore, *, quota_client: bool = True,
                caps: dict[str, Any] | None = None) -> dict[str, Any]:
    client_caps: dict[str, Any] = {"fs": {"readTextFile": False}}
    if quota_client:
        client_caps["session"] = {"quota": {}}
    core.from_client(line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1, "clientCapabilities": client_caps}}), NOW)
    result = {"protocolVersion": 1,
              "agentCapabilities": {"_meta": {"claudeCode": {}}} if caps is None else caps}
    [out] = core.from_agent(line({"jsonrpc": "2.0", "id": 0, "result": result}), NOW).to_client
    answer: dict[str, Any] = json.loads(out)["result"]["agentCapabilities"]
    return answer


def new_session(core: ProxyCore, session_id: str, request_id: int = 1) -> list[bytes]:
    core.from_client(line({"jsonrpc": "2.0", "id": request_id, "method": "session/new",
                           "params": {"cwd": "/", "mcpServers": []}}), NOW)
    return core.from_agent(line({"jsonrpc": "2.0", "id": request_id,
                                 "result": {"sessionId": session_id}}), NOW).to_client


def claude_update(session_id: str, five: float, seven: float = 0.13,
                  status: str = "allowed") -> bytes:
    return line({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session_id, "update": {
            "sessionUpdate": "usage_update", "used": 1, "size": 2,
            "_meta": {"_claude/rateLimit": {"status": status, "unifiedWindows": {
                "five_hour": {"utilization": five, "resetsAt": R5},
                "seven_day": {"utilization": seven, "resetsAt": R7}}}}}}})


def pushes(lines: list[bytes]) -> list[dict[str, Any]]:
    found = []
    for raw in lines:
        message = json.loads(raw)
        update = message.get("params", {}).get("update") if isinstance(
            message.get("params"), dict) else None
        if isinstance(update, dict) and update.get("sessionUpdate") == "quota_update":
            found.append(message)
    return found


def read(core: ProxyCore, request_id: str, params: dict[str, Any]) -> dict[str, Any]:
    routed = core.from_client(line({"jsonrpc": "2.0", "id": request_id,
                                    "method": "quota/read", "params": params}), NOW)
    assert routed.to_agent == []
    answer: dict[str, Any] = json.loads(routed.to_client[0])
    return answer


def test_the_capability_only_for_a_client_that_takes_quota_updates() -> None:
    caps = initialized(ProxyCore())
    assert caps["quota"] == {}
    assert lim.negotiate(caps) is not None  # v1 as before, for v1 clients
    plain = initialized(ProxyCore(), quota_client=False)
    assert "quota" not in plain and lim.negotiate(plain) is not None
    core = ProxyCore()
    initialized(core, quota_client=False)
    request = line({"jsonrpc": "2.0", "id": 5, "method": "quota/read", "params": {}})
    assert core.from_client(request, NOW).to_agent == [request]  # not ours to answer


def test_reads_before_and_after_the_agents_signals_and_pushes_on_every_session() -> None:
    core = ProxyCore()
    initialized(core)
    before = read(core, "r0", {})
    assert before["result"]["pools"] == []  # no quota data yet: never an error
    assert parse_quota_snapshot(before["result"]).updated_at.seconds == int(NOW)
    assert pushes(new_session(core, "s1")) == []  # nothing to push yet
    new_session(core, "s2", 2)
    out = core.from_agent(claude_update("s1", 0.25), NOW + 1).to_client
    assert out[0] == claude_update("s1", 0.25)  # forwarded first, unchanged
    sent = pushes(out)
    assert [p["params"]["sessionId"] for p in sent] == ["s1", "s2"]
    quota = parse_quota_snapshot(sent[0]["params"]["update"])
    [pool] = quota.pools
    assert (pool.id, pool.label, pool.state) == ("claude", "Claude", None)  # not invented
    five, seven = pool.meters
    assert (five.id, five.used_percent, five.window.text) == ("five_hour", 25, "PT5H")  # type: ignore[union-attr]
    assert five.resets_at is not None and five.resets_at.seconds == R5
    assert (seven.id, seven.used_percent) == ("seven_day", 13)
    assert five.status is None
    after = read(core, "r1", {"sessionId": "s1"})["result"]
    assert after == {k: v for k, v in sent[0]["params"]["update"].items()
                     if k != "sessionUpdate"}
    # The same figures again push nothing; a new session gets the current ones at once.
    assert pushes(core.from_agent(claude_update("s1", 0.25), NOW + 2).to_client) == []
    [first] = pushes(new_session(core, "s3", 3))
    assert first["params"]["sessionId"] == "s3"
    newer = pushes(core.from_agent(claude_update("s1", 0.30), NOW + 2).to_client)
    stamps = [parse_quota_snapshot(p["params"]["update"]).updated_at.micros for p in newer]
    assert min(stamps) > parse_quota_snapshot(after).updated_at.micros


def test_a_refused_prompt_becomes_quota_exceeded_after_the_exhausted_pool() -> None:
    core = ProxyCore()
    initialized(core)
    new_session(core, "s1")
    core.from_agent(claude_update("s1", 1.0, status="allowed_warning"), NOW)
    core.from_client(line({"jsonrpc": "2.0", "id": 9, "method": "session/prompt",
                           "params": {"sessionId": "s1", "prompt": []}}), NOW)
    refused = {"jsonrpc": "2.0", "id": 9, "error": {
        "code": -32603, "message": "Internal error", "data": {"errorKind": "rate_limit"}}}
    out = core.from_agent(line(refused), NOW + 1).to_client
    [push] = pushes(out)
    quota = parse_quota_snapshot(push["params"]["update"])
    assert quota.pools[0].state == "exhausted"
    assert quota.pools[0].meters[0].status == "exceeded"  # the full 5h window
    messages = [json.loads(raw) for raw in out]
    kinds = ["error" if "error" in m else m.get("method") for m in messages]
    # The pool exhausted, then the refusal; then v1's push, after the answer as always.
    assert kinds == ["session/update", "error", UPDATED_METHOD]
    answer = messages[1]
    assert answer["id"] == 9 and answer["error"]["code"] == QUOTA_EXCEEDED_CODE
    assert answer["error"]["data"] == {"errorKind": "rate_limit", "poolId": "claude",
                                       "resetsAt": lim.quota_to_wire(quota)["pools"][0][
                                           "meters"][0]["resetsAt"]}


def test_a_429_without_figures_is_quota_exceeded_without_a_reset() -> None:
    core = ProxyCore()
    initialized(core, caps={})
    core.from_client(line({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                           "params": {"sessionId": "g", "prompt": []}}), NOW)
    out = core.from_agent(line({"jsonrpc": "2.0", "id": 4, "error": {
        "code": 429, "message": "Rate limit exceeded"}}), NOW).to_client
    answer = next(json.loads(raw) for raw in out if b'"error"' in raw)
    assert answer["error"] == {"code": QUOTA_EXCEEDED_CODE, "message": "Rate limit exceeded",
                               "data": {"poolId": "gemini"}}


def test_an_agent_speaking_the_rfd_passes_through_and_feeds_v1_clients() -> None:
    core = ProxyCore()
    caps = initialized(core, caps={"quota": {}})
    assert caps == {"quota": {}, "_meta": caps["_meta"]}
    request = line({"jsonrpc": "2.0", "id": 5, "method": "quota/read", "params": {}})
    assert core.from_client(request, NOW).to_agent == [request]  # the agent answers it
    update = line({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": {"sessionUpdate": "quota_update",
                                     "updatedAt": "2026-10-06T13:10:00Z", "pools": [
                                         {"id": "plan", "meters": [
                                             {"id": "five_hour", "usedPercent": 42,
                                              "window": "PT5H",
                                              "resetsAt": "2026-10-06T18:00:00Z"}]}]}}})
    out = core.from_agent(update, NOW).to_client
    assert out[0] == update and len(out) == 2
    v1 = json.loads(out[1])
    assert v1["method"] == UPDATED_METHOD
    snapshot = lim.parse_snapshot(v1["params"])
    assert [(w.used_percent, w.duration_mins) for w in snapshot.buckets[0].windows] == [
        (42, 300)]
    older = update.replace(b"13:10:00Z", b"13:00:00Z").replace(b"42", b"99")
    assert core.from_agent(older, NOW).to_client == [older]  # older: no v1 push


def test_kimi_amounts_reach_the_rfd_client_as_amounts() -> None:
    core = ProxyCore()
    initialized(core, caps={})
    new_session(core, "k")
    kimi = line({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "k", "update": {"sessionUpdate": "usage_update", "used": 1, "size": 2,
                                     "_meta": {"kimiCode": {"billingMode": "coding_plan",
                                                            "rateLimits": {
        "usage": {"limit": "100", "used": "26", "remaining": "74",
                  "resetTime": "2026-10-10T00:00:00Z"},
        "limits": [{"window": {"duration": 300, "timeUnit": "TIME_UNIT_MINUTE"},
                    "detail": {"limit": "100", "used": "80", "remaining": "20",
                               "resetTime": "2026-10-06T16:30:00Z"}}]}}}}}})
    out = core.from_agent(kimi, NOW).to_client
    [push] = pushes(out)
    weekly, five = parse_quota_snapshot(push["params"]["update"]).pools[0].meters
    assert weekly.used is not None and (weekly.used.value, weekly.used.unit) == ("26", None)
    assert weekly.used_percent is None and weekly.window is None  # not reported: not sent
    assert (five.id, five.window.text, five.remaining.value) == (  # type: ignore[union-attr]
        "five_hour", "PT5H", "20")
    v1 = [json.loads(raw) for raw in out if json.loads(raw).get("method") == UPDATED_METHOD]
    [window] = lim.parse_snapshot(v1[0]["params"]).buckets[0].windows
    assert (window.used_percent, window.duration_mins) == (80.0, 300)
    api_key = kimi.replace(b'"coding_plan"', b'"api_key"')
    assert core.from_agent(api_key, NOW + 1).to_client == [api_key]


def test_codex_account_push_reaches_every_session() -> None:
    core = ProxyCore()
    initialized(core, caps={})
    new_session(core, "a")
    new_session(core, "b", 2)
    out = core.from_agent(line({"jsonrpc": "2.0", "method": "_account/rate_limits_update",
                                "params": {"rateLimits": {
                                    "limitId": "codex", "primary": {
                                        "usedPercent": 53, "windowDurationMins": 300,
                                        "resetsAt": R5}}}}), NOW).to_client
    assert [p["params"]["sessionId"] for p in pushes(out)] == ["a", "b"]
