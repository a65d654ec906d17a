"""A small agent written with the SDK's agent side (`acp.run_agent`), not with our code.

It checks our client against an implementation that is not ours. Behaviour follows
captured real agents: updates before the `session/new` reply (vibe), a `usage_update`
after the prompt reply (claude-agent-acp), camelCase on the wire, a custom `_…`
notification (codex's `_auth/status_update`).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message_text,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionCapabilities,
    SessionListCapabilities,
    ToolCallUpdate,
    UsageUpdate,
)

LIMITS_READ = "_io.github.euri10.louiselm/account_limits/read"
LIMITS_UPDATED = "_io.github.euri10.louiselm/account_limits/updated"
SNAPSHOT = {
    "defaultBucketId": "requests",
    "buckets": [{"id": "requests", "label": "Requests",
                 "windows": [{"usedPercent": 12, "windowDurationMins": 300,
                              "resetsAt": 4102444800}]}],
}


class FakeSdkAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions = 0
        self.cancelled: set[str] = set()
        self.client_caps: Any = None
        self.background: set[asyncio.Future[Any]] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        self.client_caps = client_capabilities
        caps = AgentCapabilities(
            load_session=False,
            session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            field_meta={"io.github.euri10.louiselm": {"accountLimits": {
                "version": 1, "readMethod": LIMITS_READ, "updatedMethod": LIMITS_UPDATED}}},
        )
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=caps,
            agent_info=Implementation(name="fake-sdk-agent", version="0.0.1"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any
                          ) -> NewSessionResponse:
        self.sessions += 1
        session_id = f"sdk-{self.sessions}"
        # Like vibe: an update for the session before the reply that introduces it.
        await self.conn.session_update(
            session_id, UsageUpdate(session_update="usage_update", used=0, size=1000))
        return NewSessionResponse(session_id=session_id)

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> Any:
        from acp.schema import ListSessionsResponse, SessionInfo
        if cursor is None:
            return ListSessionsResponse(
                sessions=[SessionInfo(session_id="old-1", cwd=cwd or "/")], next_cursor="page2")
        return ListSessionsResponse(sessions=[SessionInfo(session_id="old-2", cwd=cwd or "/")])

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt)
        if text.startswith("permission"):
            await self.conn.session_update(session_id, start_tool_call(
                "t1", "Edit file", kind="edit", status="pending"))
            response = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id="t1"),
                options=[PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                         PermissionOption(option_id="no", name="Reject", kind="reject_once")],
            )
            outcome = response.outcome
            chosen = getattr(outcome, "option_id", None) or outcome.outcome
            await self.conn.session_update(session_id, update_tool_call(
                "t1", status="completed" if chosen == "yes" else "failed"))
            await self.conn.session_update(
                session_id, update_agent_message_text(f"outcome:{chosen}"))
            return PromptResponse(stop_reason="end_turn")
        if text.startswith("wait"):
            # Like a real agent's turn: something streams before it waits on its model.
            await self.conn.session_update(session_id, update_agent_message_text("waiting"))
            for _ in range(400):
                if session_id in self.cancelled:
                    return PromptResponse(stop_reason="cancelled")
                await asyncio.sleep(0.025)
            return PromptResponse(stop_reason="end_turn")
        for word in text.split():
            await self.conn.session_update(session_id, update_agent_message_text(word + " "))
        await self.conn.ext_notification("auth/status_update", {"authStatus": {"kind": "none"}})
        asyncio.get_running_loop().call_later(0.01, self._late_usage, session_id)
        return PromptResponse(stop_reason="end_turn")

    def _late_usage(self, session_id: str) -> None:
        # Like claude-agent-acp: a usage_update after the prompt reply.
        self.background.add(asyncio.ensure_future(self.conn.session_update(
            session_id, UsageUpdate(session_update="usage_update", used=42, size=1000))))
        self.background.add(asyncio.ensure_future(
            self.conn.ext_notification(LIMITS_UPDATED.lstrip("_"), SNAPSHOT)))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.add(session_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if "/" + method.lstrip("_") == "/" + LIMITS_READ.lstrip("_"):
            return SNAPSHOT
        from acp import RequestError
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


def main() -> None:
    _ = text_block  # keep the helper import honest for readers
    asyncio.run(run_agent(FakeSdkAgent()))


if __name__ == "__main__":
    sys.exit(main())
