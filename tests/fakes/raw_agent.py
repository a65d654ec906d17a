"""A raw NDJSON agent that misbehaves on purpose; the mode comes from FAKE_MODE.

Modes: garbage, huge, stderr_flood_init, crash_mid_prompt, never_answer_new,
never_end_prompt, early_update, late_update, custom_notification, unknown_request,
auth_required (like codex-acp without a login), ok.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import incoming, not_found, result, send

MODE = os.environ.get("FAKE_MODE", "ok")
SID = "raw-1"


def update(kind: str, **fields: Any) -> None:
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": SID, "update": {"sessionUpdate": kind, **fields}}})


def chunk(text: str) -> None:
    update("agent_message_chunk", content={"type": "text", "text": text})


def main() -> int:
    prompt_id: Any = None
    for message, method, request_id, _ in incoming():
        if method == "initialize":
            if MODE == "stderr_flood_init":
                block = ("x" * 1023 + "\n").encode()
                for _ in range(5 * 1024):  # 5 MiB before answering
                    sys.stderr.buffer.write(block)
                sys.stderr.flush()
            methods = ([{"id": "chat-gpt", "name": "ChatGPT"}, {"id": "api-key", "name": "API Key"}]
                       if MODE == "auth_required" else [])
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": 1, "agentCapabilities": {}, "authMethods": methods}})
        elif method == "session/new":
            if MODE == "never_answer_new":
                continue
            if MODE == "auth_required":
                send({"jsonrpc": "2.0", "id": request_id,
                      "error": {"code": -32000, "message": "Authentication required"}})
                continue
            if MODE == "early_update":
                chunk("before the reply")
            send(result(request_id, {"sessionId": SID}))
        elif method == "session/prompt":
            prompt_id = request_id
            if MODE == "garbage":
                sys.stdout.write("this is not json\n")
                sys.stdout.flush()
                chunk("after garbage")
            elif MODE == "huge":
                chunk("x" * (10 * 1024 * 1024))
                chunk("after huge")
            elif MODE == "crash_mid_prompt":
                chunk("partial")
                sys.stderr.write("fatal: model backend went away\n")
                sys.stderr.flush()
                os._exit(3)
            elif MODE == "never_end_prompt":
                chunk("working")
                continue  # the reply comes only after session/cancel
            elif MODE == "custom_notification":
                send({"jsonrpc": "2.0", "method": "_auth/status_update",
                      "params": {"authStatus": {"kind": "none"}}})
                send({"jsonrpc": "2.0", "method": "$/progress", "params": {}})
                chunk("after custom")
            elif MODE == "unknown_request":
                send({"jsonrpc": "2.0", "id": 900, "method": "_vendor/ask_client", "params": {}})
                send({"jsonrpc": "2.0", "id": 901, "method": "editor/open", "params": {}})
                continue  # answer the prompt once both replies arrived
            else:
                chunk("hello")
            send(result(request_id, {"stopReason": "end_turn"}))
            if MODE == "late_update":
                time.sleep(0.05)
                update("usage_update", used=5, size=100)
        elif method == "session/cancel":
            if MODE == "never_end_prompt" and prompt_id is not None:
                update("agent_message_chunk", content={"type": "text", "text": "stopping"})
                send(result(prompt_id, {"stopReason": "cancelled"}))
        elif method is None and request_id in (900, 901):
            chunk(f"reply {request_id}: {json.dumps(message.get('error', message.get('result')))}")
            if request_id == 901 and prompt_id is not None:
                send(result(prompt_id, {"stopReason": "end_turn"}))
        elif request_id is not None and method is not None:
            send(not_found(request_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
