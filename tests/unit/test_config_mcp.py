"""`[mcp_servers]` and `[agents.NAME.mcp_servers]`: shapes per transport, merging, errors
with their field paths."""

from __future__ import annotations

from typing import Any

import pytest

from louise.config.loading import load_config_mapping
from louise.config.problems import ConfigError


def problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        load_config_mapping(data)
    return [(p.path, p.message) for p in caught.value.problems]


def test_servers_of_every_transport_and_the_agents_own_win() -> None:
    config = load_config_mapping({
        "mcp_servers": {
            "fs": {"command": "mcp-fs", "args": ["--root", "/x"], "env": {"K": "v"}},
            "docs": {"type": "http", "url": "https://example.com/mcp",
                     "headers": {"Authorization": "Bearer t"}},
            "old": {"type": "sse", "url": "http://localhost:9000/sse"},
        },
        "agents": {"claude": {"command": "claude-agent-acp", "mcp_servers": {
            "fs": {"command": "/opt/other-fs"},
            "old": {"enabled": False},
        }}, "codex": {"command": "codex-acp"}},
    })
    claude = config.mcp_servers_for("claude")
    assert list(claude) == ["fs", "docs"]  # "old" disabled for claude only
    assert claude["fs"][0].command == "/opt/other-fs" and claude["fs"][1] is True
    assert claude["docs"][1] is False
    codex = config.mcp_servers_for("codex")
    assert list(codex) == ["fs", "docs", "old"] and codex["fs"][0].args == ["--root", "/x"]
    assert config.mcp_servers_for("demo")["docs"][0].headers == {"Authorization": "Bearer t"}


@pytest.mark.parametrize("server, path, message", [
    ({}, "mcp_servers.s.command", "a stdio MCP server needs a command"),
    ({"command": "x", "url": "https://a"}, "mcp_servers.s.url", "url and headers are for"),
    ({"type": "http"}, "mcp_servers.s.url", "an http MCP server needs an http(s) url"),
    ({"type": "sse", "url": "ftp://a"}, "mcp_servers.s.url", "an sse MCP server needs"),
    ({"type": "http", "url": "https://a", "command": "x"}, "mcp_servers.s.command",
     "command, args and env are for stdio servers"),
    ({"type": "ws", "url": "wss://a"}, "mcp_servers.s.type", "unsupported value 'ws'"),
    ({"command": "x", "comand": "y"}, "mcp_servers.s.comand", "unknown setting"),
])
def test_a_bad_server_says_where_and_what(server: dict[str, Any], path: str,
                                          message: str) -> None:
    found = problems({"mcp_servers": {"s": server}})
    assert any(p == path and message in m for p, m in found), found


def test_bad_names_and_an_agents_bad_server() -> None:
    found = problems({"mcp_servers": {"bad name": {"command": "x"}},
                      "agents": {"a": {"command": "a", "mcp_servers": {"t": {"type": "http"}}}}})
    assert ("mcp_servers.\"bad name\"", "key: invalid MCP server name 'bad name'") in found \
        or any("invalid MCP server name" in m for _, m in found), found
    assert any(p == "agents.a.mcp_servers.t.url" for p, _ in found), found


def test_unknown_setting_hint_lists_the_server_fields() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config_mapping({"mcp_servers": {"s": {"command": "x", "heders": {}}}})
    (problem,) = caught.value.problems
    assert "did you mean 'headers'?" in problem.hint
