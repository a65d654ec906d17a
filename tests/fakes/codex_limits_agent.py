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

import json
import sys
import time
from typing import Any

START = int(time.time())
RESETS_5H = START + 3 * 3600
RESETS_7D = START + 5 * 86400


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": session_id, "update": body}})


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
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"_meta": {"rateLimits": {"version": 1}}},
                "agentInfo": {"name": "fake-codex-acp", "version": "2.6.0"},
                "authMethods": []}})
        elif method == "session/new":
            update("codex-1", {"sessionUpdate": "available_commands_update",
                               "availableCommands": [{"name": "status",
                                                      "description": "Show status"}]})
            send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "codex-1"}})
        elif method == "session/prompt":
            session_id = params.get("sessionId", "")
            text = " ".join(str(block.get("text", "")) for block in params.get("prompt", [])
                            if isinstance(block, dict))
            update(session_id, {"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": "Hello from fake codex."}})
            if "PUSH" in text:
                send({"jsonrpc": "2.0", "method": "_account/rate_limits_update", "params": {
                    "rateLimits": {"limitId": "codex_other", "limitName": "Other",
                                   "primary": {"usedPercent": 70, "windowDurationMins": 300,
                                               "resetsAt": RESETS_5H}}}})
            send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})
            update(session_id, {"sessionUpdate": "usage_update", "used": 900, "size": 272000,
                                "_meta": {"_codex/rateLimits": [codex_limit(prompts)]}})
            prompts += 1
        elif request_id is not None and method is not None:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
