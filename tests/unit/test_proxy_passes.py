"""The proxy's fast path (issue 25, item 1): `ProxyCore.passes_from_agent` / `_client`
let a whole read through without decoding a line, so a `True` must be exact: the core
would have passed every line on untouched and learnt nothing from it.

Checked with sequences of messages shaped like real agents' and clients' (the same as the
fuzz test's, plus streamed chunks and arbitrary updates), encoded the ways real ones
encode (escaped or raw non-ASCII, compact or spaced, UTF-16), and hand-made lines that
spell what the core acts on otherwise (escapes, duplicate keys)."""

from __future__ import annotations

import contextlib
import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from louise.proxy import core as proxy_core
from louise.proxy import quota_bridge
from louise.proxy.core import ProxyCore, Routed
from tests.unit.test_limits_sources_fuzz import (
    auth_status,
    codex_payload,
    field,
    json_text,
    json_values,
    shaped,
    usage_update,
)
from tests.unit.test_proxy_fuzz import agent_messages, client_messages, envelope

NOW = 1_788_450_000.0

chunk_kinds = st.sampled_from(["agent_message_chunk", "agent_thought_chunk",
                               "tool_call_update", "usage_update", "quota_update", "plan"])
session_ids = st.sampled_from(["s1", "s2", "sé", "s\"q", "a\\b"])
chunks = envelope({"method": st.just("session/update"), "params": shaped({
    "sessionId": session_ids,
    "update": shaped({"sessionUpdate": chunk_kinds, "messageId": json_text,
                      "content": shaped({"type": st.just("text"), "text": json_text}),
                      "_meta": json_values})})})
# What the core acts on, well formed and on the sessions it knows (a line of an unknown
# session never passes while the core notes sessions, which would hide the rest).
small_ids = st.sampled_from([0, 1, 7, "a"])
percent = st.floats(min_value=0, max_value=1)
claude_limits = st.builds(lambda session, five: {
    "jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session, "update": {
            "sessionUpdate": "usage_update", "used": 1, "size": 2,
            "_meta": {"_claude/rateLimit": {"status": "allowed", "unifiedWindows": {
                "five_hour": {"utilization": five, "resetsAt": 1_788_465_600}}}}}}},
    session_ids, percent)
rfd_update = st.builds(lambda session, used: {
    "jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session, "update": {
            "sessionUpdate": "quota_update", "updatedAt": "2026-10-06T13:10:00Z",
            "pools": [{"id": "plan", "meters": [{"id": "five_hour", "usedPercent": used,
                                                 "window": "PT5H"}]}]}}},
    session_ids, st.integers(0, 100))
auth = st.builds(lambda label: {"jsonrpc": "2.0", "method": "_auth/status_update", "params": {
    "authStatus": {"kind": "account", "label": label, "account": {"plan": "max"}}}},
    st.sampled_from(["Claude Max", "Claude Pro"]))
limit_pushes = st.one_of(
    claude_limits, rfd_update, auth,
    envelope({"method": st.just("session/update"),
              "params": st.fixed_dictionaries({"sessionId": session_ids,
                                               "update": usage_update})}),
    envelope({"method": st.sampled_from(["_account/rate_limits_update",
                                         "_auth/status_update"]),
              "params": st.one_of(codex_payload, auth_status)}),
)
requests = st.fixed_dictionaries({
    "jsonrpc": st.just("2.0"), "id": small_ids,
    "method": st.sampled_from(["initialize", "session/prompt", "session/new", "quota/read"]),
    "params": st.one_of(st.just({}), st.fixed_dictionaries({"sessionId": session_ids}))})
answers = st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": small_ids}, optional={
    "result": st.one_of(json_values, st.fixed_dictionaries({"sessionId": session_ids}),
                        st.just({"stopReason": "end_turn"})),
    "error": st.fixed_dictionaries({"code": st.sampled_from([-32000, 429, -31001]),
                                    "message": json_text,
                                    "data": st.just({"errorKind": "rate_limit"})})})
encodings = st.sampled_from([
    lambda m: json.dumps(m).encode(),
    lambda m: json.dumps(m, ensure_ascii=False).encode("utf-8", "surrogatepass"),
    lambda m: json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"),
    lambda m: json.dumps(m, ensure_ascii=False).encode("utf-16", "surrogatepass"),
])


def lines_of(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    return st.tuples(strategy, encodings).map(lambda pair: pair[1](pair[0]))


# Spelled so that only a decoder sees what the core acts on.
HAND_MADE_AGENT = [
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s9","update":'
    b'{"sessionUpdate":"usage\\u005fupdate","_meta":{"_claude/rateLimit":{"status":"allowed"'
    b',"unifiedWindows":{"five_hour":{"utilization":0.5,"resetsAt":1788465600}}}}}}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    b'{"sessionUpdate":"agent_message_chunk"}},"method":null,"\\u0069d":0,"result":{}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","sessionId":'
    b'"s-new","update":{"sessionUpdate":"agent_message_chunk"}}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId" : \t"s-spaced",'
    b'"update":{"sessionUpdate":"agent_message_chunk"}}}',
    b'{"jsonrpc":"2.0","method":"_auth\\/status_update","params":{"authStatus":{"kind":'
    b'"account","label":"Max"}}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":["s1"],"update":{}}}',
]
HAND_MADE_CLIENT = [
    b'{"jsonrpc":"2.0","\\u0069d":3,"method":"quota/read","params":{}}',
    b'{"jsonrpc":"2.0","method":"x","id":4,"method":"session/prompt","params":{}}',
]


def fingerprint(core: ProxyCore) -> Any:
    """Everything the core keeps, as comparable values."""
    def values(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {key: values(value) for key, value in obj.items()}
        if isinstance(obj, list | tuple):
            return [values(value) for value in obj]
        if hasattr(obj, "__dict__") and not isinstance(obj, type):
            return (type(obj).__name__, values(vars(obj)))
        return obj

    return values(copy.deepcopy({**vars(core), "bridge": vars(core.bridge)}))


def handshake(core: ProxyCore, quota_client: bool, v1: bool) -> None:
    caps = {"session": {"quota": {}}} if quota_client else {}
    core.from_client(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "clientCapabilities": caps}}).encode(), NOW)
    agent_caps = ({"_meta": {"io.github.euri10.louiselm": {"accountLimits": {
        "version": 1, "readMethod": "_x/read", "updatedMethod": "_x/updated"}}}} if v1 else {})
    core.from_agent(json.dumps({"jsonrpc": "2.0", "id": 0, "result": {
        "agentCapabilities": agent_caps}}).encode(), NOW)
    core.from_client(b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}', NOW)
    core.from_agent(b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}', NOW)


def check(core: ProxyCore, side: str, line: bytes) -> bool:
    """Route `line`; when the fast path let it through, the core must agree. Returns
    whether it passed."""
    passes = (core.passes_from_agent if side == "agent" else core.passes_from_client)(line)
    before = fingerprint(core) if passes else None
    routed = (core.from_agent if side == "agent" else core.from_client)(line, NOW)
    if passes:
        expected = Routed(to_client=[line]) if side == "agent" else Routed(to_agent=[line])
        assert routed == expected
        assert fingerprint(core) == before
    return passes


# A request and its answer (the core remembers some requests until answered).
exchanges = st.tuples(lines_of(requests), lines_of(answers)).map(
    lambda pair: [("client", pair[0]), ("agent", pair[1])])
steps = st.one_of(
    st.tuples(st.just("agent"), lines_of(st.one_of(agent_messages, chunks, answers,
                                                   limit_pushes))).map(lambda s: [s]),
    st.tuples(st.just("agent"), st.sampled_from(HAND_MADE_AGENT)).map(lambda s: [s]),
    st.tuples(st.just("client"), lines_of(st.one_of(client_messages, requests))).map(
        lambda s: [s]),
    st.tuples(st.just("client"), st.sampled_from(HAND_MADE_CLIENT)).map(lambda s: [s]),
    st.tuples(st.just("client"), lines_of(envelope({"method": field(st.just(
        "session/cancel")), "params": json_values}))).map(lambda s: [s]),
    exchanges,
)
sides = st.lists(steps, min_size=1, max_size=8).map(
    lambda found: [event for step in found for event in step])


@settings(max_examples=500)
@given(st.booleans(), st.booleans(), sides)
def test_what_the_fast_path_lets_through_the_core_passes_on_untouched(
        quota_client: bool, v1: bool, sequence: list[tuple[str, bytes]]) -> None:
    core = ProxyCore()
    handshake(core, quota_client, v1)
    for side, line in sequence:
        check(core, side, line)


@settings(max_examples=200)
@given(st.lists(lines_of(st.one_of(agent_messages, chunks, answers, limit_pushes)), min_size=1,
                max_size=8))
def test_a_read_passes_only_when_each_of_its_lines_would(lines: list[bytes]) -> None:
    core = ProxyCore()
    handshake(core, quota_client=True, v1=False)
    lines = [line for line in lines if b"\n" not in line]  # lines as the framing cuts them
    whole = b"\n".join(lines) + b"\n"
    if core.passes_from_agent(whole):
        for line in lines:
            assert check(core, "agent", line)


def test_streamed_chunks_pass_and_what_the_core_acts_on_does_not() -> None:
    core = ProxyCore()
    handshake(core, quota_client=True, v1=False)
    assert core.serving and core.bridge.serving
    chunk = (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'
             b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",'
             b'"text":"a \\"quoted\\" \\n line \xc3\xa9"}}}}')
    assert check(core, "agent", chunk)
    assert core.passes_from_agent(b"\n".join([chunk] * 3) + b"\n")
    # A session the bridge has not seen yet is noted first (its pushes depend on it).
    other = chunk.replace(b'"s1"', b'"s2"')
    assert not check(core, "agent", other)
    assert check(core, "agent", other)
    for line in HAND_MADE_AGENT:
        assert not core.passes_from_agent(line), line
    # Each kind of line the core acts on, spelled plainly, on a known session.
    core.from_client(b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{}}', NOW)
    acted_on = [
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        '{"sessionUpdate":"usage_update","_meta":{"_claude/rateLimit":{}}}}}',
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        '{"sessionUpdate":"quota_update","pools":[]}}}',
        '{"jsonrpc":"2.0","method":"_auth/status_update","params":{}}',
        '{"jsonrpc":"2.0","method":"_account/rate_limits_update","params":{}}',
        '{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}',
    ]
    for text in acted_on:
        assert not core.passes_from_agent(text.encode()), text
    for line in HAND_MADE_CLIENT:
        assert not core.passes_from_client(line), line
    assert check(core, "client", b'{"jsonrpc":"2.0","method":"session/cancel","params":{}}')
    assert not core.passes_from_client(b'{"jsonrpc":"2.0","id":9,"result":{}}')
    assert not core.passes_from_agent(chunk.decode().encode("utf-16"))


def test_a_read_of_many_lines_passes_only_when_every_session_in_it_is_known() -> None:
    """A burst's read holds many lines: one unknown session among them, or one spelled
    otherwise on the way to it, is found wherever it is."""
    core = ProxyCore()
    handshake(core, quota_client=True, v1=False)
    chunk = (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'
             b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",'
             b'"text":"x"}}}}')
    spaced = chunk.replace(b'"sessionId":"s1"', b'"sessionId" : "s1"')
    unknown = chunk.replace(b'"s1"', b'"s2"')
    not_text = chunk.replace(b'"s1"', b'["s1"]')
    for position in (0, 5, 9):
        def read(line: bytes, position: int = position) -> bytes:
            lines = [chunk] * 10
            lines[position] = line
            return b"\n".join(lines) + b"\n"

        assert core.passes_from_agent(read(chunk))
        assert core.passes_from_agent(read(spaced))
        assert not core.passes_from_agent(read(unknown)), position
        assert not core.passes_from_agent(read(not_text)), position


class _NoSearch:
    """A compiled pattern that must not be used."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern

    def search(self, data: bytes) -> None:
        raise AssertionError(f"{self.pattern.pattern!r} searched a single message")

    findall = search


def test_a_message_alone_is_checked_without_regular_expressions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A paced stream's read is one message: a regular expression's engine, cold after
    the wake that brought it, cost ~8 µs of its ~30 µs (bench/RESULTS.md, "proxy, third
    round"). One message is checked with `find` alone, compact or spaced as encoders write
    it; a large read still may use the patterns."""
    core = ProxyCore()
    handshake(core, quota_client=True, v1=False)
    for name in ("_ESCAPE", "_LIMITS_HINT"):
        monkeypatch.setattr(proxy_core, name, _NoSearch(getattr(proxy_core, name)))
    monkeypatch.setattr(quota_bridge, "_SESSION_ID", _NoSearch(quota_bridge._SESSION_ID))
    message = {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                                      "content": {"type": "text", "text": "hello"}}}}
    compact = json.dumps(message, separators=(",", ":")).encode()
    spaced = json.dumps(message).encode()
    for line in (compact, spaced):
        assert core.passes_from_agent(line + b"\n")
        assert core.passes_from_client(line + b"\n")
        assert not core.passes_from_agent(line.replace(b'"s1"', b'"s2"') + b"\n")
        assert not core.passes_from_agent(line.replace(b"agent_message_chunk",
                                                       b"usage_update") + b"\n")


@contextlib.contextmanager
def regular_expressions_only() -> Iterator[None]:
    """The checks as they were: every read searched with the patterns."""
    saved = proxy_core.SMALL_READ
    for module in (proxy_core, quota_bridge):
        setattr(module, "SMALL_READ", -1)  # noqa: B010 -- a Final, set for this test
    try:
        yield
    finally:
        for module in (proxy_core, quota_bridge):
            setattr(module, "SMALL_READ", saved)  # noqa: B010


SESSION_SPELLINGS = [
    b'"sessionId":"s1"', b'"sessionId": "s1"', b'"sessionId" : "s1"', b'"sessionId":\t"s1"',
    b'"sessionId":\n"s1"', b'"sessionId":"s1', b'"sessionId":"s\\u0031"', b'"sessionId":"a\\b"',
    b'"sessionId":"\xff"', b'"sessionId":5', b'"sessionId":["s1"]', b'"sessionId":""',
    b'"sessionId":"s2"', b'"sessionId": "s1"}, "sessionId": "s2"', b'"sessionId":',
]


@settings(max_examples=300)
@given(st.lists(lines_of(st.one_of(agent_messages, chunks, answers, limit_pushes,
                                   client_messages, requests)), min_size=1, max_size=3),
       st.sampled_from(SESSION_SPELLINGS), st.booleans())
def test_a_small_read_gets_the_verdict_the_patterns_give(
        lines: list[bytes], spelling: bytes, spelled: bool) -> None:
    core = ProxyCore()
    handshake(core, quota_client=True, v1=False)
    if spelled:
        lines = [b'{"jsonrpc":"2.0","method":"session/update","params":{' + spelling
                 + b',"update":{"sessionUpdate":"agent_message_chunk"}}}', *lines[1:]]
    reads = [b"\n".join(lines) + b"\n", lines[0] + b"\n", lines[0]]
    for read in reads:
        got = (core.passes_from_agent(read), core.passes_from_client(read),
               core.bridge.knows_sessions(read))
        with regular_expressions_only():
            assert got == (core.passes_from_agent(read), core.passes_from_client(read),
                           core.bridge.knows_sessions(read)), read


def test_a_session_dropped_by_the_bound_is_not_known_by_its_last_spelling() -> None:
    """A stream's messages are checked against the last key found known; once that session
    is dropped (the bridge keeps the last `MAX_SESSIONS`), its messages go to the core
    again, which notes it anew."""
    bridge = quota_bridge.QuotaBridge()
    message = (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s",'
               b'"update":{"sessionUpdate":"agent_message_chunk"}}}\n')
    bridge.note_session("s0")
    assert bridge.knows_sessions(message % b"s0")
    assert bridge.knows_sessions(message % b"s0")  # by the spelling kept
    assert not bridge.knows_sessions(message % b"s0x")
    for index in range(1, quota_bridge.MAX_SESSIONS + 1):
        bridge.note_session(f"s{index}")
    assert not bridge.knows_sessions(message % b"s0")
    assert bridge.knows_sessions(message % b"s1")
    with regular_expressions_only():
        assert not bridge.knows_sessions(message % b"s0")
