"""A stdlib fake of a codex-acp that sends its rate limits structured (the proposed shapes
louise reads, see louise/limits/sources/codex.py).

- `initialize`: `agentCapabilities._meta.rateLimits` advertises the push (codex-acp #524);
- `session/new`: an `available_commands_update` before the reply;
- `session/prompt`: a text chunk, the reply, then after it a `usage_update` whose
  `_meta["_codex/rateLimits"]` is a list with the `codex` limit (5h primary, 7d secondary,
  plan `plus`; the 5h window rises by 5 points per prompt);
- a prompt containing `PUSH` also sends `_account/rate_limits_update` with a second limit
  (`codex_other`, one 5h window) — a push replaces only that limit.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import incoming, not_found, notification, result, send
from ndjson import update as session_update

START = int(time.time())
RESETS_5H = START + 3 * 3600
RESETS_7D = START + 5 * 86400


def update(session_id: str, body: dict[str, Any]) -> None:
    send(session_update(session_id, body))


def codex_limit(prompts: int) -> dict[str, Any]:
    return {"limitId": "codex", "limitName": None,
            "primary": {"usedPercent": 40 + 5 * prompts, "windowDurationMins": 300,
                        "resetsAt": RESETS_5H},
            "secondary": {"usedPercent": 20, "windowDurationMins": 10080,
                          "resetsAt": RESETS_7D},
            "credits": {"hasCredits": True, "unlimited": False, "balance": "12.5"},
            "planType": "plus", "rateLimitReachedType": None}


def main() -> None:
    prompts = 0
    for _, method, request_id, params in incoming():
        if method == "initialize":
            send(result(request_id, {
                "protocolVersion": 1,
                "agentCapabilities": {"_meta": {"rateLimits": {"version": 1}}},
                "agentInfo": {"name": "fake-codex-acp", "version": "2.6.0"},
                "authMethods": []}))
        elif method == "session/new":
            update("codex-1", {"sessionUpdate": "available_commands_update",
                               "availableCommands": [{"name": "status",
                                                      "description": "Show status"}]})
            send(result(request_id, {"sessionId": "codex-1"}))
        elif method == "session/prompt":
            session_id = params.get("sessionId", "")
            text = " ".join(str(block.get("text", "")) for block in params.get("prompt", [])
                            if isinstance(block, dict))
            update(session_id, {"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": "Hello from fake codex."}})
            if "PUSH" in text:
                send(notification("_account/rate_limits_update", {
                    "rateLimits": {"limitId": "codex_other", "limitName": "Other",
                                   "primary": {"usedPercent": 70, "windowDurationMins": 300,
                                               "resetsAt": RESETS_5H}}}))
            send(result(request_id, {"stopReason": "end_turn"}))
            update(session_id, {"sessionUpdate": "usage_update", "used": 900, "size": 272000,
                                "_meta": {"_codex/rateLimits": [codex_limit(prompts)]}})
            prompts += 1
        elif request_id is not None and method is not None:
            send(not_found(request_id))


if __name__ == "__main__":
    main()
