"""A client that is not louise gets the ACP quota RFD through `louise proxy` (issue 26 item
2): the ACP Python SDK's client side (its connection and client router, `acp` 0.12 — which
predates the RFD, so `quota_update` and `quota/read` are handled as raw JSON, as a client
adopting the RFD on this SDK would) drives the real claude-agent-acp, signed in as a
subscriber, against the mock model that sends Anthropic's rate-limit headers
(mock_ratelimits.py). The meters it receives carry the figures the agent sent
(`_claude/rateLimit`, read from the wire tap between the proxy and the agent) and the mock's
own defaults."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from louise.limits.quota import QUOTA_UPDATE, parse_quota_snapshot
from louise.limits.sources import claude
from tests.real_agents.conftest import available
from tests.real_agents.harness import WIRETAP, MockModel, Wire, louise_bin
from tests.real_agents.install import Installed
from tests.real_agents.test_quota import PROMPT, START, mock_windows, subscriber_env

WINDOWS = {"five_hour": 300, "seven_day": 10080}


class Client:
    """What the SDK's client router calls; the session updates it validates are kept."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        from acp.schema import DeniedOutcome, RequestPermissionResponse

        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


async def sdk_session(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Initialize (advertising `session.quota`), read before a session, prompt once, read
    with the session; what came back."""
    from acp import spawn_stdio_connection
    from acp.client.router import build_client_router

    client = Client()
    router = build_client_router(client)  # type: ignore[arg-type]
    pushed: list[dict[str, Any]] = []
    arrived = asyncio.Event()

    async def handler(method: str, params: Any, is_notification: bool) -> Any:
        update = params.get("update") if isinstance(params, dict) else None
        if method == "session/update" and isinstance(update, dict) \
                and update.get("sessionUpdate") == QUOTA_UPDATE:
            pushed.append(update)  # the SDK's schema has no quota_update yet
            arrived.set()
            return None
        return await router(method, params, is_notification)

    async with spawn_stdio_connection(handler, argv[0], *argv[1:], env=env, cwd=cwd) as (
            conn, _process):
        init = await conn.send_request("initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                   "terminal": False, "session": {"quota": {}}},
            "clientInfo": {"name": "sdk-quota-client", "version": "0"}})
        before = await conn.send_request("quota/read", {})
        session = await conn.send_request("session/new", {"cwd": str(cwd), "mcpServers": []})
        session_id = session["sessionId"]
        result = await conn.send_request("session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": PROMPT}]})
        await asyncio.wait_for(arrived.wait(), START)
        after = await conn.send_request("quota/read", {"sessionId": session_id})
    return {"init": init, "before": before, "result": result, "pushed": pushed,
            "after": after, "sdk_updates": client.updates}


def test_the_sdk_client_gets_the_meters_through_louise_proxy(
        tmp_path: Path, installed: Installed, mock_model: MockModel) -> None:
    available(installed, "claude")
    workspace = tmp_path / "work"
    workspace.mkdir()
    env = subscriber_env(tmp_path / "home", mock_model, installed)
    env["LOUISE_STATE_DIR"] = str(tmp_path / "state")
    wire = Wire(tmp_path / "claude.ndjson")
    argv = [louise_bin(), "proxy", "--", sys.executable, str(WIRETAP), str(wire.path), "--",
            *installed.agents["claude"].argv]
    import os

    got = asyncio.run(sdk_session(argv, {**os.environ, **env}, workspace))

    assert got["init"]["agentCapabilities"]["quota"] == {}
    assert got["before"]["pools"] == []  # nothing known before a prompt: no error either
    assert got["result"]["stopReason"] == "end_turn"
    sent = [meta[claude.META_KEY] for message in wire.received("session/update")
            if isinstance(meta := message.get("params", {}).get("update", {}).get("_meta"),
                          dict) and claude.META_KEY in meta]
    assert sent, "claude-agent-acp sent no _claude/rateLimit"
    unified = sent[-1]["unifiedWindows"]
    pushed = parse_quota_snapshot(got["pushed"][-1])
    read = parse_quota_snapshot(got["after"])
    for quota in (pushed, read):
        [pool] = quota.pools
        meters = {meter.id: meter for meter in pool.meters}
        assert set(meters) == set(WINDOWS)
        for name, minutes in WINDOWS.items():
            meter = meters[name]
            assert meter.used_percent == pytest.approx(unified[name]["utilization"] * 100)
            assert meter.used_percent == pytest.approx(mock_windows()[minutes])
            assert meter.resets_at is not None
            assert meter.resets_at.seconds == unified[name]["resetsAt"]
            assert meter.window is not None and meter.window.minutes == minutes
    assert read.pools == pushed.pools
