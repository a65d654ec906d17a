"""A stdlib agent speaking the account-limits v1 extension whose reads can stop answering.

- `initialize` advertises v1; `session/new` answers with a mode list (`ask`, `code`) and a
  `model` config option; `session/set_mode` and `session/set_config_option` succeed;
- a read answers a complete snapshot (5h and 7d windows of bucket `requests`) until the
  read number `FAKE_HANG_FROM` (1-based; default never), from which on reads are never
  answered (a hung agent); a `$/cancel_request` for one is ignored, like a stuck agent;
- every read received is appended as one line to the file `FAKE_READ_LOG`, if set, so a
  test can count them.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import incoming, not_found, result, send, update

READ = "_io.github.euri10.louiselm/account_limits/read"
UPDATED = "_io.github.euri10.louiselm/account_limits/updated"
HANG_FROM = int(os.environ.get("FAKE_HANG_FROM", "0"))
READ_LOG = os.environ.get("FAKE_READ_LOG", "")
RESETS = int(time.time()) + 3 * 3600


def snapshot(reads: int) -> dict[str, Any]:
    return {"defaultBucketId": "requests", "buckets": [{
        "id": "requests", "label": "Requests", "windows": [
            {"usedPercent": 10 + reads, "windowDurationMins": 300, "resetsAt": RESETS},
            {"usedPercent": 30, "windowDurationMins": 10080, "resetsAt": RESETS + 86400}]}]}


def main() -> None:
    reads = 0
    for _, method, request_id, params in incoming():
        if method == "initialize":
            send(result(request_id, {
                "protocolVersion": 1,
                "agentCapabilities": {"_meta": {"io.github.euri10.louiselm": {"accountLimits": {
                    "version": 1, "readMethod": READ, "updatedMethod": UPDATED}}}},
                "authMethods": []}))
        elif method == "session/new":
            send(result(request_id, {
                "sessionId": "v1-1",
                "modes": {"currentModeId": "ask", "availableModes": [
                    {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]},
                "configOptions": [{"id": "model", "name": "Model", "type": "select",
                                   "currentValue": "small", "options": [
                                       {"value": "small", "name": "Small"},
                                       {"value": "large", "name": "Large"}]}]}))
        elif method == "session/set_mode":
            send(result(request_id, {}))
        elif method == "session/set_config_option":
            send(result(request_id, {"configOptions": [
                {"id": "model", "name": "Model", "type": "select",
                 "currentValue": params.get("value"), "options": [
                     {"value": "small", "name": "Small"},
                     {"value": "large", "name": "Large"}]}]}))
        elif method == "session/prompt":
            send(update(params.get("sessionId"), {"sessionUpdate": "agent_message_chunk",
                                                  "content": {"type": "text", "text": "ok"}}),
                 result(request_id, {"stopReason": "end_turn"}))
        elif method == READ:
            reads += 1
            if READ_LOG:
                with open(READ_LOG, "a", encoding="utf-8") as log:
                    log.write(f"read {reads}\n")
            if HANG_FROM and reads >= HANG_FROM:
                continue  # never answered
            send(result(request_id, snapshot(reads)))
        elif request_id is not None and method is not None:
            send(not_found(request_id))


if __name__ == "__main__":
    main()
