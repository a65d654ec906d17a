"""A chat's header (the winbar, and what prompt completion offers): its turn state, names,
model and mode, usage, cost, the agent's slash commands. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from louise.session import Session

MAX_COMMANDS = 200
MAX_COMMAND_TEXT = 160


def command_info(command: Mapping[str, Any]) -> dict[str, str]:
    """A slash command for completion: its name, description and input hint, bounded."""
    raw_input = command.get("input")
    hint = raw_input.get("hint") if isinstance(raw_input, Mapping) else None
    return {"name": str(command.get("name"))[:MAX_COMMAND_TEXT],
            "description": str(command.get("description") or "")[:MAX_COMMAND_TEXT],
            "hint": str(hint or "")[:MAX_COMMAND_TEXT]}


def status_for(session: Session) -> dict[str, Any]:
    """The chat header of a session: turn state, names, model and mode, usage."""
    model, mode = session.current_model, session.current_mode
    context = None
    if session.usage_used is not None and session.usage_size:
        context = round(100 * session.usage_used / session.usage_size)
    cost = None
    if session.cost and isinstance(session.cost.get("amount"), (int, float)):
        cost = f"{session.cost['amount']:.2f} {session.cost.get('currency', '')}".strip()
    title = session.name or session.info.get("title")
    return {
        "status": session.status,
        "agent": session.agent,
        "title": title if isinstance(title, str) else None,
        "mode": mode,
        "model": model,
        "context": context,
        "context_stale": session.context_stale,
        "cost": cost,
        "error": session.error,
        "note": session.agent_note,  # the agent's own word on a wait ("Reconnecting... 2/5")
        "stop_reason": session.last_stop_reason,
        "commands": [str(c.get("name")) for c in session.commands][:MAX_COMMANDS],
        "command_info": [command_info(c) for c in session.commands[:MAX_COMMANDS]],
        "turn": session.turn,
        "cwd": session.cwd,
        "image": session.prompt_capabilities.get("image") is True,
        "embedded": session.prompt_capabilities.get("embeddedContext") is True,
        "turns_done": session.turn if session.status in ("ready", "closing", "error", "closed")
        else session.turn - 1,
    }
