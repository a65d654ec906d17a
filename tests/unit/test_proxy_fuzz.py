"""The proxy core survives anything either side sends (issue 21, item 6): sequences of
messages shaped like real clients' and agents' (initialize, prompts, reads, rate-limit
updates, prompt errors, answers) with arbitrary JSON in every field, raw bytes, bracket
bombs and dropped over-long lines. Nothing raises; every line either side sent is passed
on unchanged (the initialize answer gains only the capability); every line the proxy
writes itself is strict UTF-8 JSON-RPC."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from louise import limits as lim
from louise.limits.capability import NAMESPACE
from louise.proxy.core import READ_METHOD, UPDATED_METHOD, ProxyCore, Routed
from tests.unit.test_limits_sources_fuzz import (
    auth_status,
    codex_payload,
    error_codes,
    field,
    json_text,
    json_values,
    prompt_error_data,
    shaped,
    usage_update,
)

NOW = 1_788_450_000.0
LIMIT = 4096
# Deeper than the 2 KB bomb: hypothesis raises the recursion limit while a test runs.
BOMB = b"[" * 100_000 + b"]" * 100_000

ids = field(st.sampled_from([0, 1, 7, "a", "\ud800"]))
methods = st.sampled_from(["initialize", "session/prompt", READ_METHOD, "session/new",
                           "session/update", "fs/read_text_file", "$/cancel_request"])


def envelope(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    return shaped({"jsonrpc": st.just("2.0"), **fields})


caps = shaped({
    "_meta": shaped({
        NAMESPACE: shaped({"accountLimits": shaped({
            "version": st.just(1), "readMethod": json_text, "updatedMethod": json_text})}),
        "claudeCode": json_values, "rateLimits": json_values}),
    "loadSession": st.booleans(),
})
client_messages = st.one_of(
    envelope({"id": ids, "method": field(methods), "params": json_values}),
    envelope({"id": ids, "result": json_values}),
    envelope({"method": st.just("$/cancel_request"), "params": shaped({"requestId": ids})}),
)
agent_messages = st.one_of(
    envelope({"id": ids, "result": shaped({"protocolVersion": st.just(1),
                                           "agentCapabilities": caps})}),
    envelope({"id": ids, "error": shaped({"code": error_codes, "message": json_text,
                                          "data": prompt_error_data})}),
    envelope({"method": st.just("session/update"),
              "params": shaped({"sessionId": json_text, "update": usage_update})}),
    envelope({"method": st.sampled_from(["_account/rate_limits_update",
                                         "_auth/status_update"]),
              "params": st.one_of(codex_payload, auth_status)}),
    envelope({"id": ids, "method": field(methods), "params": json_values}),
)


def encoded(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    return strategy.map(lambda message: json.dumps(message).encode())


raw_lines = st.one_of(st.binary(min_size=1, max_size=40), st.just(BOMB),
                      st.just(b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + BOMB + b"}"))
heads = st.one_of(st.binary(max_size=64),
                  st.tuples(encoded(st.one_of(client_messages, agent_messages)),
                            st.integers(0, 512)).map(lambda pair: pair[0][:pair[1]]))
events = st.lists(st.one_of(
    st.tuples(st.just("client"), st.one_of(encoded(client_messages), raw_lines)),
    st.tuples(st.just("agent"), st.one_of(encoded(agent_messages), raw_lines)),
    st.tuples(st.sampled_from(["client-dropped", "agent-dropped"]), heads),
), min_size=1, max_size=8)


def proxy_line(raw: bytes) -> dict[str, Any]:
    """A line the proxy wrote itself: strict UTF-8, one JSON-RPC 2.0 object."""
    message = json.loads(raw.decode("utf-8"))
    assert isinstance(message, dict) and message["jsonrpc"] == "2.0"
    return message


def check_initialize_rewrite(sent: bytes, written: bytes) -> None:
    """The only change to a forwarded line: the capability in an initialize answer."""
    before, after = json.loads(sent), proxy_line(written)
    added = after["result"]["agentCapabilities"]["_meta"][NAMESPACE]["accountLimits"]
    assert added["readMethod"] == READ_METHOD
    assert after["id"] == before["id"]


def route(core: ProxyCore, side: str, payload: bytes) -> None:
    if side.endswith("dropped"):
        drop = core.dropped_from_client if side == "client-dropped" else core.dropped_from_agent
        routed = drop(LIMIT + 1, payload, LIMIT)
        for raw in routed.to_agent + routed.to_client:
            assert "error" in proxy_line(raw)
        assert len(routed.to_agent) + len(routed.to_client) <= 1
        return
    if side == "client":
        routed = core.from_client(payload, NOW)
        if routed.to_agent:
            assert routed == Routed(to_agent=[payload])
        else:  # a read the proxy answers
            (answer,) = routed.to_client
            assert proxy_line(answer)["id"] == json.loads(payload)["id"]
        return
    routed = core.from_agent(payload, NOW)
    assert routed.to_agent == []
    first, *pushed = routed.to_client
    if first != payload:
        check_initialize_rewrite(payload, first)
    for raw in pushed:
        push = proxy_line(raw)
        assert push["method"] == UPDATED_METHOD
        lim.parse_snapshot(push["params"])


@settings(max_examples=400)
@given(events)
def test_no_sequence_of_lines_from_either_side_raises(sequence: list[tuple[str, bytes]]) -> None:
    core = ProxyCore()
    for side, payload in sequence:
        route(core, side, payload)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.just("agent"), encoded(agent_messages)), max_size=6))
def test_after_a_served_initialize_nothing_the_agent_sends_raises(
        sequence: list[tuple[str, bytes]]) -> None:
    core = ProxyCore()
    route(core, "client", b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}')
    route(core, "agent", b'{"jsonrpc":"2.0","id":0,"result":{"agentCapabilities":{}}}')
    assert core.serving
    route(core, "client", b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{}}')
    for side, payload in sequence:
        route(core, side, payload)
    route(core, "client", json.dumps({"jsonrpc": "2.0", "id": 9, "method": READ_METHOD}).encode())
