"""The host's limits observer (`louise.serve.limits.AgentLimits`), messages in, what it
hands the cache's writer out: each source the registry reads, a load's replay is not a
reading of the account now, the v1 extension is the only source once negotiated, and the
host holds an agent's figures from its first until the agent is gone."""

from __future__ import annotations

import json
from typing import Any

from louise.limits import LimitsState
from louise.serve.limits import AgentLimits

NOW = 1_788_450_000.0
R5 = 1_788_465_600
R7 = 1_788_800_000
READ = "_io.github.euri10.louiselm/account_limits/read"
UPDATED = "_io.github.euri10.louiselm/account_limits/updated"
V1 = {"_meta": {"io.github.euri10.louiselm": {"accountLimits": {
    "version": 1, "readMethod": READ, "updatedMethod": UPDATED}}}}
SNAPSHOT = {"defaultBucketId": "requests", "buckets": [
    {"id": "requests", "label": "Requests", "windows": [
        {"usedPercent": 13, "windowDurationMins": 300, "resetsAt": R5}]}]}


class Sink:
    def __init__(self) -> None:
        self.states: list[LimitsState] = []
        self.holders: list[bool] = []

    def put(self, agent: str, state: LimitsState) -> None:
        assert agent == state.agent == "agent"
        self.states.append(state)

    def holder(self, agent: str, live: bool) -> None:
        assert agent == "agent"
        self.holders.append(live)


def observer(caps: dict[str, Any]) -> tuple[AgentLimits, Sink]:
    sink = Sink()
    limits = AgentLimits("agent", sink, lambda: NOW)
    limits.initialized({"protocolVersion": 1, "agentCapabilities": caps})
    return limits, sink


def from_agent(limits: AgentLimits, message: dict[str, Any]) -> None:
    limits.from_agent(json.dumps(message).encode(), message)


def claude_update(session_id: str, five: float) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session_id, "update": {
            "sessionUpdate": "usage_update", "used": 1, "size": 2,
            "_meta": {"_claude/rateLimit": {"status": "allowed", "unifiedWindows": {
                "five_hour": {"utilization": five, "resetsAt": R5},
                "seven_day": {"utilization": 0.1, "resetsAt": R7}}}}}}}


def five_hour(state: LimitsState) -> float:
    assert state.snapshot is not None
    return state.snapshot.buckets[0].windows[0].used_percent


def test_v1_updated_notifications_and_read_answers_are_observed() -> None:
    limits, sink = observer(V1)
    from_agent(limits, {"jsonrpc": "2.0", "method": UPDATED, "params": SNAPSHOT})
    assert [(s.status, five_hour(s)) for s in sink.states] == [("fresh", 13)]
    limits.to_agent({"jsonrpc": "2.0", "id": 7, "method": READ, "params": {}})
    later = json.loads(json.dumps(SNAPSHOT).replace('"usedPercent": 13', '"usedPercent": 20'))
    from_agent(limits, {"jsonrpc": "2.0", "id": 8, "result": later})  # not a read's answer
    from_agent(limits, {"jsonrpc": "2.0", "id": 7, "result": later})
    assert [five_hour(s) for s in sink.states] == [13, 20]
    assert sink.holders == [True]
    limits.stopped()
    assert sink.holders == [True, False]


def test_with_v1_negotiated_an_agents_own_signals_are_not_a_source() -> None:
    limits, sink = observer(V1)
    from_agent(limits, claude_update("s", 0.5))
    assert sink.states == [] and sink.holders == []


def test_an_agents_own_signals_are_observed_but_not_a_loads_replay() -> None:
    limits, sink = observer({})
    limits.to_agent({"jsonrpc": "2.0", "id": 3, "method": "session/load",
                     "params": {"sessionId": "s", "cwd": "/", "mcpServers": []}})
    from_agent(limits, claude_update("s", 0.9))  # history the load replays
    from_agent(limits, claude_update("other", 0.24))
    assert [five_hour(s) for s in sink.states] == [24]
    from_agent(limits, {"jsonrpc": "2.0", "id": 3, "result": {}})
    from_agent(limits, claude_update("s", 0.3))
    assert [five_hour(s) for s in sink.states] == [24, 30]


def test_a_prompt_refused_for_a_rate_limit_marks_the_limit_reached() -> None:
    limits, sink = observer({})
    limits.to_agent({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                     "params": {"sessionId": "s", "prompt": []}})
    from_agent(limits, {"jsonrpc": "2.0", "id": 4,
                        "error": {"code": 429, "message": "Too many requests"}})
    [state] = sink.states
    assert state.snapshot is not None and state.snapshot.buckets[0].reached_type


def test_an_rfd_agents_quota_update_is_its_only_source() -> None:
    limits, sink = observer({"quota": {}})
    from_agent(limits, claude_update("s", 0.5))
    from_agent(limits, {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": {"sessionUpdate": "quota_update",
                                     "updatedAt": "2026-10-06T13:10:00Z", "pools": [
                                         {"id": "plan", "meters": [
                                             {"id": "five_hour", "usedPercent": 42,
                                              "window": "PT5H",
                                              "resetsAt": "2026-10-06T18:00:00Z"}]}]}}})
    assert [five_hour(s) for s in sink.states] == [42]


def test_garbage_from_the_agent_stops_nothing() -> None:
    limits, sink = observer({})
    for message in ({"jsonrpc": "2.0", "id": [1], "result": {}},
                    {"jsonrpc": "2.0", "method": "session/update",
                     "params": {"sessionId": ["usage_update"], "update": "usage_update"}},
                    {"jsonrpc": "2.0", "method": 5, "params": "_update"}):
        from_agent(limits, message)
    limits.to_agent({"jsonrpc": "2.0", "id": {"x": 1}, "method": "session/prompt"})
    assert sink.states == []
