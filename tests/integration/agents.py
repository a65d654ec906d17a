"""Helpers to start the test agents over real stdio."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.acp.handlers import ClientHandlers
from louise.acp.process import AgentCommand
from louise.acp.schema import ParsedUpdate
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError

FAKES = Path(__file__).resolve().parent.parent / "fakes"


def raw_agent(mode: str) -> AgentCommand:
    return AgentCommand(sys.executable, [str(FAKES / "raw_agent.py")], env={"FAKE_MODE": mode})


def hostile_agent(mode: str, **env: str) -> AgentCommand:
    return AgentCommand(sys.executable, [str(FAKES / "hostile_agent.py")],
                        env={"FAKE_MODE": mode, **env})


def sdk_agent() -> AgentCommand:
    return AgentCommand(sys.executable, [str(FAKES / "sdk_agent.py")])


def demo_agent(**env: str) -> AgentCommand:
    return AgentCommand(sys.executable, ["-P", "-m", "louise.demo_agent"], env=env)


@dataclass
class Recorder:
    """Collects what an agent sends; answers permissions with a scripted choice."""

    updates: list[tuple[str, ParsedUpdate]] = field(default_factory=list)
    ext: list[tuple[str, Any]] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    choose: str | None = None  # optionId to select, None = cancelled

    def handlers(self, **overrides: Any) -> ClientHandlers:
        return ClientHandlers(on_update=self.on_update, request_permission=self.permission,
                              on_ext_notification=self.on_ext, **overrides)

    async def on_update(self, session_id: str, update: ParsedUpdate) -> None:
        self.updates.append((session_id, update))

    async def on_ext(self, method: str, params: Any) -> None:
        self.ext.append((method, params))

    async def permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.permission_requests.append(params)
        if self.choose is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": self.choose}}

    def texts(self) -> list[str]:
        out = []
        for _, update in self.updates:
            content = update.raw.get("content")
            if update.kind == "agent_message_chunk" and isinstance(content, dict):
                out.append(str(content.get("text", "")))
        return out

    def kinds(self) -> list[str]:
        return [update.kind for _, update in self.updates]


async def wait_until(predicate: Any, timeout: float = 20.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


async def later_silent_turns_time_out(reg: SessionRegistry, cwd: str) -> None:
    """Two turns, one after the other, in a new session of the demo agent, that hear
    nothing: each ends when its watchdog fires, one timeout after it started. A watchdog
    looks again at most one timeout after its last look, so once both have ended, every
    turn that was quiet before they started has had a look past its deadline: one that
    was going to be cancelled has been (absence proven by later events, not by a sleep).
    The registry's prompt_idle_timeout must be short."""
    session = await reg.new_session("demo", cwd)
    for _ in range(2):
        with anyio.fail_after(60), pytest.raises(RegistryError, match="made no progress"):
            await reg.prompt(session.session_id, "/scenario fail never_end")
