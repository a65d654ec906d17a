"""The attach hello (louise.serve.hello): built and parsed back the same; a first line that
is not the hello is plain ACP; a malformed hello is refused, never guessed at."""

from __future__ import annotations

import json

import pytest

from louise.serve.hello import (
    HELLO_METHOD,
    MAX_HELLO_BYTES,
    AgentCommand,
    FrontEnd,
    Hello,
    HelloError,
    build_hello,
    parse_hello,
)


def test_a_hello_round_trips_as_one_line() -> None:
    hello = Hello(agent="codex",
                  agent_command=AgentCommand("codex-acp", ("--x", "é"), {"A": "1"}, "/srv"),
                  front_end=FrontEnd("nvim", 123, True))
    line = build_hello(hello)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    message = json.loads(line)
    assert message["method"] == HELLO_METHOD and "id" not in message
    assert message["params"]["frontEnd"] == {"name": "nvim", "pid": 123, "sameMachine": True}
    assert parse_hello(line) == hello


def test_a_hello_without_a_command_leaves_the_agent_to_the_host() -> None:
    line = build_hello(Hello(agent="demo"))
    assert json.loads(line)["params"]["agentCommand"] is None
    parsed = parse_hello(line)
    assert parsed is not None and parsed.agent_command is None
    assert parsed.front_end == FrontEnd("acp", None, False)


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n',
    b"not json\n", b"[1,2]\n", b"\n"])
def test_a_first_line_that_is_not_the_hello_is_plain_acp(line: bytes) -> None:
    assert parse_hello(line) is None


def _with(params: dict[str, object]) -> bytes:
    base: dict[str, object] = {"version": 1, "agent": "demo", "agentCommand": None,
                               "frontEnd": None}
    base.update(params)
    return json.dumps({"jsonrpc": "2.0", "method": HELLO_METHOD, "params": base}).encode()


@pytest.mark.parametrize("params", [
    {"version": 2}, {"agent": ""}, {"agent": 5},
    {"agentCommand": {"command": ""}}, {"agentCommand": {"command": "x", "args": "a b"}},
    {"agentCommand": {"command": "x", "env": {"A": 1}}},
    {"agentCommand": {"command": "x", "args": ["a\x00b"]}},
    {"frontEnd": {"pid": -1}}, {"frontEnd": {"sameMachine": "yes"}}])
def test_a_malformed_hello_is_refused(params: dict[str, object]) -> None:
    with pytest.raises(HelloError):
        parse_hello(_with(params))


def test_a_hello_as_a_request_is_refused() -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": HELLO_METHOD,
                       "params": {"version": 1, "agent": "demo"}}).encode()
    with pytest.raises(HelloError):
        parse_hello(line)


def test_a_hello_over_its_bound_is_refused() -> None:
    big = _with({"agentCommand": {"command": "x", "args": ["a" * 30000] * 10}})
    assert len(big) > MAX_HELLO_BYTES
    with pytest.raises(HelloError):
        parse_hello(big)
    with pytest.raises(HelloError):
        build_hello(Hello(agent="d", agent_command=AgentCommand("x", ("a" * 30000,) * 10)))


def test_an_unknown_front_end_is_a_plain_acp_client() -> None:
    parsed = parse_hello(_with({"frontEnd": {"name": "zed", "pid": 9, "sameMachine": False}}))
    assert parsed is not None and parsed.front_end.name == "acp"
