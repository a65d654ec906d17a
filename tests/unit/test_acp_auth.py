"""Sign-in methods as agents advertise them, and what a terminal method may run."""

from __future__ import annotations

import pytest

from louise.acp.auth import (
    MAX_AUTH_METHODS,
    AuthMethodError,
    parse_auth_methods,
    terminal_invocation,
)
from louise.acp.connection import ClientHandlers, InitializeResult

# claude-agent-acp 0.101's methods for a client with auth.terminal (from its initialize).
CLAUDE = [
    {"description": "Use Claude subscription ", "name": "Claude Subscription",
     "id": "claude-ai-login", "type": "terminal",
     "args": ["--cli", "auth", "login", "--claudeai"]},
    {"description": "Use Anthropic Console (API usage billing)", "name": "Anthropic Console",
     "id": "console-login", "type": "terminal", "args": ["--cli", "auth", "login", "--console"]},
]
# codex-acp 2.6's agent method (no type: agent).
CODEX = [{"id": "api-key", "name": "API Key", "description": "Use an API key to authenticate",
          "_meta": {"api-key": {"provider": "openai"}}}]


def test_real_agents_methods_are_read_with_their_kind() -> None:
    claude = parse_auth_methods(CLAUDE)
    assert [(m.id, m.kind, m.args) for m in claude] == [
        ("claude-ai-login", "terminal", ("--cli", "auth", "login", "--claudeai")),
        ("console-login", "terminal", ("--cli", "auth", "login", "--console"))]
    (codex,) = parse_auth_methods(CODEX)
    assert (codex.id, codex.kind, codex.name, codex.usable) == ("api-key", "agent", "API Key",
                                                                 True)


def test_malformed_and_unknown_methods() -> None:
    methods = parse_auth_methods([
        "x", {"name": "no id"}, {"id": 3}, {"id": "ok"},
        {"id": "future", "type": "oauth_device"}, {"id": "t", "type": "terminal", "args": "x"}])
    assert [(m.id, m.kind, m.usable) for m in methods] == [
        ("ok", "agent", True), ("future", "other", False), ("t", "terminal", True)]
    assert methods[0].name == "ok"  # no name: the id stands in
    assert parse_auth_methods(None) == [] and parse_auth_methods({"id": "x"}) == []
    many = parse_auth_methods([{"id": f"m{i}", "name": "x" * 10_000} for i in range(500)])
    assert len(many) == MAX_AUTH_METHODS and len(many[0].name) <= 500


def test_terminal_invocation_appends_args_and_applies_env() -> None:
    (method,) = parse_auth_methods([{"id": "login", "name": "Log in", "type": "terminal",
                                     "args": ["--login", "it's"], "env": {"MODE": "a b"}}])
    invocation = terminal_invocation(method, "/usr/bin/agent", ["--acp"],
                                     {"MODE": "base", "KEEP": "1"}, "/work")
    assert invocation.argv == ("/usr/bin/agent", "--acp", "--login", "it's")
    assert invocation.env == {"MODE": "a b", "KEEP": "1"}  # the method's env wins
    assert invocation.cwd == "/work"
    assert invocation.display() == "MODE='a b' /usr/bin/agent --acp --login 'it'\\''s'"


@pytest.mark.parametrize("entry, message", [
    ({"env": {"LD_PRELOAD": "/tmp/x.so"}}, "changes what program runs"),
    ({"env": {"DYLD_INSERT_LIBRARIES": "x"}}, "changes what program runs"),
    ({"env": {"NODE_OPTIONS": "--require /tmp/x.js"}}, "changes what program runs"),
    ({"env": {"PATH": "/tmp"}}, "changes what program runs"),
    ({"env": {"A=B": "x"}}, "invalid variable name"),
    ({"env": {"OK": "a\0b"}}, "holds NUL"),
    ({"env": {"OK": 1}}, "not a table of strings"),
    ({"args": ["a\0b"]}, "holds NUL"),
    ({"args": ["x" * 5000]}, "too long"),
    ({"args": ["x"] * 65}, "more than 64 arguments"),
    ({"args": ["ok", 3]}, "not a list of strings"),
])
def test_terminal_invocation_refuses_what_it_will_not_run(entry: dict[str, object],
                                                          message: str) -> None:
    (method,) = parse_auth_methods([{"id": "login", "name": "Log in", "type": "terminal",
                                     **entry}])
    with pytest.raises(AuthMethodError, match=message):
        terminal_invocation(method, "agent", [], {}, None)


def test_an_agent_method_is_not_a_terminal_one() -> None:
    (method,) = parse_auth_methods(CODEX)
    with pytest.raises(AuthMethodError, match="not a terminal"):
        terminal_invocation(method, "codex-acp", [], {}, None)


def test_terminal_auth_is_advertised_only_when_asked() -> None:
    assert "auth" not in ClientHandlers().capabilities()
    assert ClientHandlers(terminal_auth=True).capabilities()["auth"] == {"terminal": True}


def test_logout_support_is_read_from_the_capability() -> None:
    def init(caps: dict[str, object]) -> InitializeResult:
        return InitializeResult(1, caps, [], {}, {})

    assert init({"auth": {"logout": {}}}).logout_supported
    assert not init({"auth": {"logout": None}}).logout_supported
    assert not init({"auth": {}}).logout_supported
    assert not init({}).logout_supported
