"""A stdlib fake of claude-agent-acp's rate-limit behaviour (shapes from 0.101.0).

- `initialize`: `agentCapabilities._meta` has `claudeCode` and the `authStatus` marker (no
  account-limits extension), then an `_auth/status_update` push with the plan label;
- `session/new`: an `available_commands_update` before the reply;
- `session/prompt`: two text chunks, a plain `usage_update`, then a `usage_update` whose
  `_meta["_claude/rateLimit"]` carries the 5h and 7d `unifiedWindows` (utilization rising by
  `STEP` per prompt), the reply, and a `session_info_update` after it;
- a prompt containing `REJECT` fails with `{"errorKind": "rate_limit"}` in the error data;
- a prompt containing `GARBAGE` sends a malformed `_claude/rateLimit` first;
- a prompt containing `BADSTATUS` first sends `_claude/rateLimit` values whose `status` or
  `rateLimitType` is a list or an object;
- a prompt containing `BOMB` first sends a 2 KB line of nested brackets and a
  `session/update` whose `update` nests 1024 levels deep;
- a prompt containing `LONGREQUEST` first asks the client `session/request_permission`
  with a `FAKE_LONG_BYTES`-byte title (default 100,000), waits for its answer and tells it
  in a text chunk (`long request answered: <code> <message>`).

A line it cannot read (not JSON, nested too deep) is skipped, as the TypeScript ACP SDK
does (it logs the parse error and reads on).

Env: `FAKE_START_5H` / `FAKE_START_7D` (fractions, default 0.24 / 0.13); `FAKE_V1=1` also
advertises the account-limits v1 extension and answers its reads (bucket `requests`), as an
agent behind `louise proxy` or a future claude-agent-acp would.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import incoming, not_found, result, send

STEP = 0.05
V1 = os.environ.get("FAKE_V1") == "1"
V1_READ = "_io.github.euri10.louiselm/account_limits/read"
V1_UPDATED = "_io.github.euri10.louiselm/account_limits/updated"
START = time.time()
RESETS_5H = int(START) + 2 * 3600
RESETS_7D = int(START) + 4 * 86400


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": session_id, "update": body}})


def rate_limit(prompts: int) -> dict[str, Any]:
    five = float(os.environ.get("FAKE_START_5H", "0.24")) + STEP * prompts
    seven = float(os.environ.get("FAKE_START_7D", "0.13")) + STEP / 5 * prompts
    return {
        "status": "allowed_warning" if five >= 0.75 else "allowed",
        "resetsAt": RESETS_5H,
        "rateLimitType": "five_hour",
        "isUsingOverage": False,
        "unifiedWindows": {
            "five_hour": {"utilization": round(five, 4), "resetsAt": RESETS_5H},
            "seven_day": {"utilization": round(seven, 4), "resetsAt": RESETS_7D},
        },
    }


def bomb(session_id: str) -> None:
    nested = "[" * 1024 + "]" * 1024
    sys.stdout.write(nested + "\n")
    sys.stdout.write('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
                     + json.dumps(session_id) + ',"update":' + nested + "}}\n")
    sys.stdout.flush()


MESSAGES = incoming(skip_unreadable=True)  # one reader: the turn's loop and a request's wait


def read_message() -> dict[str, Any] | None:
    """The next JSON object on stdin (lines it cannot read skipped); None at the end."""
    return next(MESSAGES, (None,))[0]


def long_request(session_id: str) -> str:
    """Ask permission with a title too long for a proxy; what the answer was."""
    title = "x" * int(os.environ.get("FAKE_LONG_BYTES", "100000"))
    send({"jsonrpc": "2.0", "id": "long-1", "method": "session/request_permission",
          "params": {"sessionId": session_id,
                     "toolCall": {"toolCallId": "t1", "title": title},
                     "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}})
    while (message := read_message()) is not None:
        if message.get("id") == "long-1" and "method" not in message:
            error = message.get("error") or {}
            return f"long request answered: {error.get('code')} {error.get('message')}"
    return "long request unanswered"


BAD_STATUSES: list[dict[str, Any]] = [
    {"status": ["allowed"], "resetsAt": RESETS_5H},
    {"status": {"kind": "rejected"}, "rateLimitType": "five_hour"},
    {"status": "rejected", "rateLimitType": ["five_hour"], "resetsAt": RESETS_5H},
]


def main() -> None:
    prompts = 0
    sessions = 0
    while (message := read_message()) is not None:
        method = message.get("method")
        request_id = message.get("id")
        if method is None:
            continue  # an answer nobody waits for
        params = message.get("params") or {}
        if method == "initialize":
            meta: dict[str, Any] = {"claudeCode": {"promptQueueing": True}, "authStatus": {}}
            if V1:
                meta["io.github.euri10.louiselm"] = {"accountLimits": {
                    "version": 1, "readMethod": V1_READ, "updatedMethod": V1_UPDATED}}
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"_meta": meta,
                                      "promptCapabilities": {"embeddedContext": True},
                                      "loadSession": False},
                "agentInfo": {"name": "fake-claude-agent-acp", "version": "0.101.0"},
                "authMethods": []}})
            send({"jsonrpc": "2.0", "method": "_auth/status_update",
                  "params": {"authStatus": {"kind": "account", "label": "Claude Max",
                                            "account": {"plan": "max"}}}})
        elif method == "session/new":
            sessions += 1
            session_id = f"claude-{sessions}"
            update(session_id, {"sessionUpdate": "available_commands_update",
                                "availableCommands": []})
            send(result(request_id, {"sessionId": session_id}))
        elif method == "session/prompt":
            session_id = params.get("sessionId", "")
            text = " ".join(str(block.get("text", "")) for block in params.get("prompt", [])
                            if isinstance(block, dict))
            if "REJECT" in text:
                send({"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": -32603, "message": "Internal error",
                    "data": {"errorKind": "rate_limit"}}})
                continue
            if "BADSTATUS" in text:
                for info in BAD_STATUSES:
                    update(session_id, {"sessionUpdate": "usage_update", "used": 1, "size": 10,
                                        "_meta": {"_claude/rateLimit": info}})
            if "BOMB" in text:
                bomb(session_id)
            if "LONGREQUEST" in text:
                update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {
                    "type": "text", "text": long_request(session_id) + "\n"}})
            if "GARBAGE" in text:
                update(session_id, {"sessionUpdate": "usage_update", "used": 1, "size": 10,
                                    "_meta": {"_claude/rateLimit": {"status": 42}}})
            for chunk in ("Hello ", "from fake claude."):
                update(session_id, {"sessionUpdate": "agent_message_chunk",
                                    "content": {"type": "text", "text": chunk}})
            update(session_id, {"sessionUpdate": "usage_update", "used": 120, "size": 200000,
                                "_meta": {"_claude/model": "claude-fake"}})
            update(session_id, {"sessionUpdate": "usage_update", "used": 120, "size": 200000,
                                "_meta": {"_claude/rateLimit": rate_limit(prompts),
                                          "_claude/model": "claude-fake"}})
            prompts += 1
            send(result(request_id, {"stopReason": "end_turn"}))
            update(session_id, {"sessionUpdate": "session_info_update", "title": text[:40]})
        elif method == V1_READ and V1:
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "defaultBucketId": "requests", "buckets": [{"id": "requests", "windows": [
                    {"usedPercent": 50, "windowDurationMins": 300, "resetsAt": RESETS_5H}]}]}})
        elif request_id is not None:
            send(not_found(request_id))


if __name__ == "__main__":
    main()
