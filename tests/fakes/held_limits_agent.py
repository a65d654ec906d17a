"""An agent that offers account limits but holds every limits read until its first prompt
arrives (a slow quota backend), then answers them all with the demo agent's snapshot, and
every later read at once."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from louise.demo_agent.limits import READ_METHOD, advertisement, snapshot

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import incoming, not_found, result, send

SID = "held-1"


def main() -> int:
    held: list[Any] = []
    prompts = 0
    for _, method, request_id, _ in incoming():
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": 1, "agentCapabilities": {"_meta": advertisement()},
                "authMethods": []}})
        elif method == "session/new":
            send(result(request_id, {"sessionId": SID}))
        elif method == READ_METHOD:
            if prompts == 0:
                held.append(request_id)
            else:
                send(result(request_id, snapshot(prompts, time.time())))
        elif method == "session/prompt":
            prompts += 1
            for read_id in held:
                send(result(read_id, snapshot(prompts, time.time())))
            held = []
            send({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": SID, "update": {"sessionUpdate": "agent_message_chunk",
                                             "content": {"type": "text", "text": "released"}}}})
            send(result(request_id, {"stopReason": "end_turn"}))
        elif request_id is not None and method is not None:
            send(not_found(request_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
