"""Sign-in methods as agents advertise them, and what a terminal method may run."""

from __future__ import annotations

import pytest

from louise.acp.auth import (
    MAX_AUTH_METHODS,
    AuthMethodError,
    parse_auth_methods,
    terminal_invocation,
)
from louise.acp.connection import InitializeResult
from louise.acp.handlers import ClientHandlers

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
                                     "args": ["--login", "it's"],
                                     "env": {"AGENT_MODE": "a b"}}])
    invocation = terminal_invocation(method, "/usr/bin/agent", ["--acp"],
                                     {"AGENT_MODE": "base", "KEEP": "1"}, "/work")
    assert invocation.argv == ("/usr/bin/agent", "--acp", "--login", "it's")
    assert invocation.env == {"AGENT_MODE": "a b", "KEEP": "1"}  # the method's env wins
    assert invocation.cwd == "/work"
    assert invocation.display() == \
        "/usr/bin/agent --acp --login 'it'\\''s' with AGENT_MODE='a b'"


@pytest.mark.parametrize("entry, message", [
    ({"env": {"A=B": "x"}}, "invalid variable name"),
    ({"env": {"AGENT_OK": "a\0b"}}, "holds NUL"),
    ({"env": {"AGENT_OK": 1}}, "not a table of strings"),
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


# Variables that make a program load or run other code: a sign-in may set none of them.
CODE_LOADING = [
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "PATH", "BASH_ENV",
    "ENV", "SHELLOPTS", "PS4", "NODE_OPTIONS", "NODE_PATH", "npm_config_node_options",
    "NPM_CONFIG_SCRIPT_SHELL", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT",
    "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "GCONV_PATH", "LOCPATH",
    "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_CONFIG_GLOBAL", "SSH_ASKPASS",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "LUA_INIT", "TCLLIBPATH", "HTTPS_PROXY",
    "SSL_CERT_FILE", "EDITOR", "HOME", "XDG_CONFIG_HOME",
]


@pytest.mark.parametrize("name", CODE_LOADING)
@pytest.mark.parametrize("agent, command, args", [
    ("claude", "claude-agent-acp", []),
    ("codex", "/usr/local/bin/codex-acp", []),
    # An Agent named after an interpreter, or run through one, gets no namespace of it.
    ("node", "node", ["/opt/agent/dist/index.js"]),
    ("git", "npx", ["-y", "@zed-industries/claude-code-acp"]),
    ("python", "/usr/bin/python3.12", ["-m", "bash"]),
])
def test_no_code_loading_variable_is_accepted(name: str, agent: str, command: str,
                                              args: list[str]) -> None:
    (method,) = parse_auth_methods([{"id": "login", "name": "Log in", "type": "terminal",
                                     "env": {name: "/tmp/x"}}])
    with pytest.raises(AuthMethodError, match="not one of the agent's own settings"):
        terminal_invocation(method, command, args, {}, None, agent)


@pytest.mark.parametrize("agent, command, args, name", [
    ("claude", "claude-agent-acp", [], "CLAUDE_CODE_ENTRYPOINT"),
    ("work", "/usr/local/bin/claude-agent-acp", [], "CLAUDE_LOGIN_MODE"),
    ("codex", "npx", ["-y", "@zed-industries/codex-acp@0.3"], "CODEX_HOME_HINT"),
    ("authed", "/venv/bin/python3.11", ["-P", "-m", "louise.demo_agent"],
     "LOUISE_DEMO_LOGIN"),
    ("my-gemini", "node", ["/opt/gemini/cli.js", "--acp"], "MY_GEMINI_MODE"),
])
def test_the_agents_own_settings_are_accepted(agent: str, command: str, args: list[str],
                                              name: str) -> None:
    (method,) = parse_auth_methods([{"id": "login", "name": "Log in", "type": "terminal",
                                     "env": {name: "1"}}])
    invocation = terminal_invocation(method, command, args, {}, None, agent)
    assert invocation.method_env == {name: "1"}


def test_the_refusal_names_the_variable_and_what_is_allowed() -> None:
    (method,) = parse_auth_methods([{"id": "login", "name": "Log in", "type": "terminal",
                                     "env": {"BASH_ENV": "/tmp/x.sh"}}])
    with pytest.raises(AuthMethodError) as refused:
        terminal_invocation(method, "claude-agent-acp", [], {}, None, "work")
    assert str(refused.value) == (
        "'Log in' would set BASH_ENV, which is not one of the agent's own settings (a "
        "sign-in may set only WORK_… or CLAUDE_…); louise does not run it")


def test_a_long_command_shows_what_runs_first_and_says_it_was_cut() -> None:
    # As a padded method did: 8,000 characters of env pushed its arguments out of sight.
    (method,) = parse_auth_methods([{
        "id": "login", "name": "Log in", "type": "terminal",
        "args": ["--cli", "auth", "login", "--then", "x" * 3000],
        "env": {"CLAUDE_PAD": "p" * 8000}}])
    invocation = terminal_invocation(method, "claude-agent-acp", [], {}, None, "claude")
    view = invocation.shown()
    assert view.text.startswith("claude-agent-acp --cli auth login --then xxx")
    assert view.cut and len(view.text) < 800
    assert view.text.endswith(f"[shortened: the whole command is "
                              f"{len(invocation.display()):,} characters]")
    assert view.whole[:6] == ("runs:", "  claude-agent-acp", "  --cli", "  auth", "  login",
                              "  --then")
    assert view.whole[7:] == ("with:", "  CLAUDE_PAD=" + "p" * 8000)
    short = terminal_invocation(parse_auth_methods(CLAUDE)[0], "claude-agent-acp", [], {},
                                None, "claude").shown()
    assert (short.text, short.cut, short.whole) == (
        "claude-agent-acp --cli auth login --claudeai", False, ())


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
