"""MCP servers from the config reach the agent with session/new, load and resume, as far
as its mcpCapabilities allow (the demo agent: stdio and http, not sse), over real stdio."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError

pytestmark = pytest.mark.anyio
DEMO = {"command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"]}


def config(tmp_path: Path, **extra: Any) -> Any:
    agent = dict(DEMO, env={"LOUISE_DEMO_STATE_DIR": str(tmp_path / "demo-state")})
    return load_config_mapping({"agents": {"demo": {**agent, **extra.pop("agent", {})}},
                                **extra})


def reply(reg: SessionRegistry, session_id: str) -> str:
    return [m.text for m in reg.session(session_id).messages() if m.role == "agent"][-1]


def notices(reg: SessionRegistry, session_id: str) -> list[str]:
    from louise.session import Notice

    return [e.text for e in reg.session(session_id).entries if isinstance(e, Notice)]


async def test_servers_reach_the_agent_and_an_unsupported_shared_one_is_left_out(
        tmp_path: Path) -> None:
    cfg = config(tmp_path, mcp_servers={
        "tools": {"command": "sh", "args": ["-c", "true"], "env": {"TOKEN": "secret"}},
        "docs": {"type": "http", "url": "https://example.com/mcp",
                 "headers": {"Authorization": "Bearer x"}},
        "legacy": {"type": "sse", "url": "https://example.com/sse"},
    })
    async with SessionRegistry(cfg, grace_seconds=0.5) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        assert await reg.prompt(session.session_id, "/scenario mcp") == "end_turn"
        text = reply(reg, session.session_id)
        sh = shutil.which("sh")
        assert f"- `tools` (stdio): `{sh} -c true` env TOKEN" in text  # absolute command
        assert "- `docs` (http): https://example.com/mcp headers Authorization" in text
        assert "legacy" not in text
        assert notices(reg, session.session_id)[0:1] == [
            "demo does not take MCP servers over sse (its mcpCapabilities.sse is not true): "
            "mcp_servers.legacy; left out for demo"]
        assert "secret" not in text and "Bearer" not in text  # values go to the agent only
        # session/load sends them again.
        reloaded = await reg.load_session("demo", session.acp_id, str(tmp_path))
        assert await reg.prompt(reloaded.session_id, "/scenario mcp") == "end_turn"
        assert "`tools` (stdio)" in reply(reg, reloaded.session_id)


async def test_an_agents_own_unsupported_server_is_an_error(tmp_path: Path) -> None:
    cfg = config(tmp_path, agent={"mcp_servers": {
        "legacy": {"type": "sse", "url": "https://example.com/sse"}}})
    async with SessionRegistry(cfg, grace_seconds=0.5) as reg:
        with pytest.raises(RegistryError) as caught:
            await reg.new_session("demo", str(tmp_path))
        assert str(caught.value) == ("demo does not take MCP servers over sse (its "
                                     "mcpCapabilities.sse is not true): "
                                     "agents.demo.mcp_servers.legacy")
        assert reg.sessions("demo") == []


async def test_a_command_not_on_path_is_named(tmp_path: Path) -> None:
    cfg = config(tmp_path, agent={"mcp_servers": {
        "gone": {"command": "no-such-mcp-server-anywhere"}}})
    async with SessionRegistry(cfg, grace_seconds=0.5) as reg:
        with pytest.raises(RegistryError, match="'no-such-mcp-server-anywhere' is not found"):
            await reg.new_session("demo", str(tmp_path))


async def test_no_servers_no_change(tmp_path: Path) -> None:
    async with SessionRegistry(config(tmp_path), grace_seconds=0.5) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        assert await reg.prompt(session.session_id, "/scenario mcp") == "end_turn"
        assert reply(reg, session.session_id) == "This session got no MCP servers."
