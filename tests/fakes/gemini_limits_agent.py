"""A stdlib fake of gemini-cli's ACP mode as far as rate limits go: no quota figures at all;
a prompt containing `QUOTA` is refused with JSON-RPC error 429, as gemini-cli does when the
account hits its rate limit. Other prompts answer one chunk and `end_turn`."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import error, incoming, not_found, result, send, update


def main() -> None:
    for _, method, request_id, params in incoming():
        if method == "initialize":
            send(result(request_id, {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False,
                                      "promptCapabilities": {"image": True}},
                "authMethods": [{"id": "oauth-personal", "name": "Log in with Google"}]}))
        elif method == "session/new":
            send(result(request_id, {"sessionId": "gemini-1"}))
        elif method == "session/prompt":
            text = " ".join(str(block.get("text", "")) for block in params.get("prompt", [])
                            if isinstance(block, dict))
            if "QUOTA" in text:
                send(error(request_id, 429, "Rate limit exceeded. Try again later."))
                continue
            send(update(params.get("sessionId"), {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Hello from fake gemini."}}),
                 result(request_id, {"stopReason": "end_turn"}))
        elif request_id is not None and method is not None:
            send(not_found(request_id))


if __name__ == "__main__":
    main()
