"""A stdlib agent that reports quota only as the ACP Quotas RFD describes it
(docs/rfds/quotas-and-limits.mdx, agentclientprotocol/agent-client-protocol 7d0724d):
no vendor `_meta`, no v1 extension. Its pools follow the RFD's Claude mapping: `plan`
("Plan usage", meters `five_hour` and `seven_day`) and `extra_usage` ("Extra usage",
`not_enabled`, no meters).

- `initialize` advertises `quota: {}`; `quota_update` is sent only when the client
  advertised `session.quota` (as the RFD requires). The client's capabilities are written
  to `FAKE_CLIENT_LOG` (one JSON line per initialize), if set.
- `quota/read` answers the account's snapshot, with or without a `sessionId` (with
  `FAKE_READ_NEEDS_SESSION=1`, without one is `invalid_params`). Reads are appended to
  `FAKE_READ_LOG`, if set.
- The account (`FAKE_ACCOUNT`, a JSON file shared by every process of this fake, so two
  louise processes can share one account; default: a private one) holds the used
  percentages, the reset times and `blockedUntil`. It is read and written under a lock.
- `session/prompt`: while `blockedUntil` is ahead, the turn is refused with
  `quotaExceeded` (-32003, `poolId`, `meterId`, `resetsAt`) after a `quota_update`
  showing the meter `exceeded` and the pool `exhausted`. Otherwise the 5h meter rises by
  `FAKE_STEP` (default 5) and the 7d by 1, a `quota_update` is pushed, a text chunk
  echoes the prompt, and the turn ends. Every prompt is appended to `FAKE_PROMPT_LOG`
  (`{"pid", "session", "text", "outcome", "at"}`), if set.
- An account with `blockNext` (seconds) reaches its limit at the next prompt, for that
  long from then (the key is then dropped). With `announced` (Unix seconds), refusals
  before that time announce it as the reset while the limit lasts until `blockedUntil`
  (a provider whose first reset time was wrong); later refusals announce `blockedUntil`.
- With `FAKE_ALSO_CLAUDE=1` each answered turn also sends claude-agent-acp's own
  `_claude/rateLimit` (99 % used): an agent sending both shapes.
- Prompt words: `BLOCK <seconds>` reaches the limit for that long (this turn refused);
  `STALE` first pushes a snapshot with an older `updatedAt` (it must be ignored);
  `MALFORMED` pushes a snapshot whose `pools` is not a list; `SLOW <seconds>` waits
  before answering.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import incoming, result, send

ACCOUNT = os.environ.get("FAKE_ACCOUNT") or os.path.join(
    tempfile.mkdtemp(prefix="fake-account-"), "account.json")
STEP = float(os.environ.get("FAKE_STEP", "5"))
QUOTA_EXCEEDED = -32003
_last_stamp = [0]


def log(variable: str, entry: dict[str, Any]) -> None:
    path = os.environ.get(variable)
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


def rfc3339(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(seconds * 1000) % 1000:03d}Z"


def stamp() -> str:
    """updatedAt: milliseconds, never decreasing, +1 ms when the data changed within one."""
    now = int(time.time() * 1000)
    _last_stamp[0] = max(now, _last_stamp[0] + 1)
    return rfc3339(_last_stamp[0] / 1000)


class Account:
    """The shared account file, read-modify-written under a lock."""

    def __enter__(self) -> dict[str, Any]:
        self.handle = open(ACCOUNT, "a+", encoding="utf-8")
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        self.handle.seek(0)
        text = self.handle.read()
        self.data: dict[str, Any] = json.loads(text) if text.strip() else {}
        start = time.time()
        self.data.setdefault("used5h", 24.0)
        self.data.setdefault("used7d", 13.0)
        self.data.setdefault("resets5h", int(start) + 2 * 3600)
        self.data.setdefault("resets7d", int(start) + 4 * 86400)
        self.data.setdefault("blockedUntil", 0)
        return self.data

    def __exit__(self, *exc: object) -> None:
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(json.dumps(self.data))
        self.handle.flush()
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def snapshot(account: dict[str, Any], *, updated: str | None = None) -> dict[str, Any]:
    blocked = account["blockedUntil"] > time.time()
    five = 100.0 if blocked else account["used5h"]
    status = "exceeded" if blocked else "warning" if five >= 75 else "ok"
    return {
        "updatedAt": updated or stamp(),
        "pools": [
            {"id": "plan", "label": "Plan usage",
             "state": "exhausted" if blocked else "available",
             "meters": [
                 {"id": "five_hour", "label": "5-hour limit", "usedPercent": five,
                  "window": "PT5H",
                  "resetsAt": rfc3339(account["blockedUntil"] if blocked
                                      else account["resets5h"]),
                  "status": status},
                 {"id": "seven_day", "label": "Weekly limit",
                  "usedPercent": account["used7d"], "window": "P7D",
                  "resetsAt": rfc3339(account["resets7d"]), "status": "ok"}]},
            {"id": "extra_usage", "label": "Extra usage", "state": "not_enabled",
             "meters": []},
        ],
    }


PUSHES = [False]  # the client advertised session.quota


def push(session_id: str, body: dict[str, Any]) -> None:
    """A `quota_update`, only to a client that takes them (the RFD's rule)."""
    if PUSHES[0]:
        send({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": session_id, "update": {"sessionUpdate": "quota_update", **body}}})


def main() -> None:
    sessions = 0
    for _, method, request_id, params in incoming():
        if method == "initialize":
            caps = params.get("clientCapabilities") or {}
            log("FAKE_CLIENT_LOG", caps)
            session_caps = caps.get("session") if isinstance(caps, dict) else None
            PUSHES[0] = isinstance(session_caps, dict) and isinstance(
                session_caps.get("quota"), dict)
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"quota": {}, "loadSession": False,
                                      "promptCapabilities": {"embeddedContext": True}},
                "agentInfo": {"name": "fake-rfd-quota-agent", "version": "0.1.0"},
                "authMethods": []}})
        elif method == "session/new":
            sessions += 1
            send({"jsonrpc": "2.0", "id": request_id,
                  "result": {"sessionId": f"rfd-{os.getpid()}-{sessions}"}})
        elif method == "quota/read":
            session_id = params.get("sessionId")
            log("FAKE_READ_LOG", {"session": session_id})
            if session_id is None and os.environ.get("FAKE_READ_NEEDS_SESSION") == "1":
                send({"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": -32602, "message": "quota depends on the session"}})
                continue
            with Account() as account:
                body = snapshot(account)
            send(result(request_id, body))
        elif method == "session/prompt":
            session_id = params.get("sessionId", "")
            text = " ".join(str(block.get("text", "")) for block in params.get("prompt", [])
                            if isinstance(block, dict))
            words = text.split()
            if "SLOW" in words:
                time.sleep(float(words[words.index("SLOW") + 1]))
            if "STALE" in words:
                with Account() as account:
                    old = dict(account, used5h=99.0)
                push(session_id, snapshot(old, updated="2000-01-01T00:00:00.000Z"))
            if "MALFORMED" in words:
                push(session_id, {"updatedAt": stamp(), "pools": {"plan": {}}})
            with Account() as account:
                if "BLOCK" in words:
                    account["blockedUntil"] = time.time() + float(words[words.index("BLOCK") + 1])
                if "blockNext" in account:
                    account["blockedUntil"] = time.time() + float(account.pop("blockNext"))
                blocked = account["blockedUntil"] > time.time()
                if not blocked:
                    account["used5h"] = min(100.0, account["used5h"] + STEP)
                    account["used7d"] = min(100.0, account["used7d"] + 1)
                body = snapshot(account)
                until = account["blockedUntil"]
                announced = account.get("announced")
                if isinstance(announced, (int, float)) and announced > time.time():
                    until = announced
            log("FAKE_PROMPT_LOG", {"pid": os.getpid(), "session": session_id, "text": text,
                                    "outcome": "refused" if blocked else "answered",
                                    "at": time.time()})
            push(session_id, body)
            if blocked:
                send({"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": QUOTA_EXCEEDED, "message": "5-hour limit reached",
                    "data": {"poolId": "plan", "meterId": "five_hour",
                             "resetsAt": rfc3339(until)}}})
                continue
            if os.environ.get("FAKE_ALSO_CLAUDE") == "1":
                send({"jsonrpc": "2.0", "method": "session/update", "params": {
                    "sessionId": session_id, "update": {
                        "sessionUpdate": "usage_update", "used": 1, "size": 2,
                        "_meta": {"_claude/rateLimit": {"status": "allowed", "unifiedWindows": {
                            "five_hour": {"utilization": 0.99,
                                          "resetsAt": int(time.time()) + 3600}}}}}}})
            send({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": session_id, "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": f"echo: {text}"}}}})
            send(result(request_id, {"stopReason": "end_turn"}))
        elif method == "session/cancel":
            pass
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": f"unknown method {method}"}})


if __name__ == "__main__":
    main()
