"""A stdlib fake of gemini-cli's ACP mode as far as rate limits go: no quota figures at all;
a prompt containing `QUOTA` is refused with JSON-RPC error 429, as gemini-cli does when the
account hits its rate limit. Other prompts answer one chunk and `end_turn`."""

from __future__ import annotations

import json
import sys
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False,
                                      "promptCapabilities": {"image": True}},
                "authMethods": [{"id": "oauth-personal", "name": "Log in with Google"}]}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "gemini-1"}})
        elif method == "session/prompt":
            text = " ".join(str(block.get("text", "")) for block in params.get("prompt", [])
                            if isinstance(block, dict))
            if "QUOTA" in text:
                send({"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": 429, "message": "Rate limit exceeded. Try again later."}})
                continue
            send({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": params.get("sessionId"), "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "Hello from fake gemini."}}}})
            send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})
        elif request_id is not None and method is not None:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
