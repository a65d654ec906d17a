"""A raw NDJSON agent for the Neovim side's hard cases; the mode comes from HOSTILE_MODE.

Behaves like a real agent otherwise: camelCase, an update before its `session/new` reply
and one after each prompt reply, a custom `_…` notification.

- heredoc: a permission request whose title and command hold a heredoc with newlines and
  ESC, BEL, NUL, CR; the outcome is said in the chat.
- two_writes: "writing two files", then two `fs/write_text_file` at once (a.txt, b.txt in
  the session's cwd); each result is said in the chat.
- withdrawn: "asking"; once the file HOSTILE_SLOWED exists (Neovim is busy with the frame
  showing "asking") a permission request, and 20 ms later `$/cancel_request` for it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import incoming, not_found, result, send

MODE = os.environ.get("HOSTILE_MODE", "heredoc")
SID = "hostile-1"
HEREDOC = "cat <<'EOF' > notes.txt\nfirst line\n\x1b[31mred\x1b[0m bell\x07 nul\x00 cr\r\nEOF"
TITLE = "Run " + HEREDOC
OPTIONS = [{"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
           {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]


def update(what: str, **fields: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": SID, "update": {"sessionUpdate": what, **fields}}}


def chunk(text: str) -> dict[str, Any]:
    return update("agent_message_chunk", content={"type": "text", "text": text})


def request(ident: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


def wait_for_file(path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


def main() -> int:
    prompt_id: Any = None
    cwd = os.getcwd()
    waiting: dict[str, str] = {}  # our request id -> what it was
    said: list[str] = []
    for message, method, ident, _ in incoming():
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": 1, "authMethods": [],
                "agentCapabilities": {"promptCapabilities": {"embeddedContext": False}}}})
        elif method == "session/new":
            cwd = str((message.get("params") or {}).get("cwd") or cwd)
            send(update("available_commands_update",
                        availableCommands=[{"name": "hostile", "description": "a test agent"}]),
                 {"jsonrpc": "2.0", "method": "_hostile/hello", "params": {"mode": MODE}},
                 {"jsonrpc": "2.0", "id": ident, "result": {"sessionId": SID}})
        elif method == "session/prompt":
            prompt_id = ident
            said = []
            if MODE == "heredoc":
                call = {"toolCallId": "run-1", "title": TITLE, "kind": "execute",
                        "status": "pending", "rawInput": {"command": HEREDOC}}
                waiting = {"p1": "permission"}
                send(update("tool_call", **call),
                     request("p1", "session/request_permission",
                             {"sessionId": SID, "toolCall": call, "options": OPTIONS}))
            elif MODE == "two_writes":
                waiting = {"w1": "a.txt", "w2": "b.txt"}
                send(chunk("writing two files"),
                     *(request(rid, "fs/write_text_file",
                               {"sessionId": SID, "path": os.path.join(cwd, name),
                                "content": f"agent wrote {name}\n"})
                       for rid, name in waiting.items()))
            elif MODE == "withdrawn":
                call = {"toolCallId": "edit-1", "title": "Edit x.py", "kind": "edit",
                        "status": "pending"}
                waiting = {"p1": "permission"}
                send(chunk("asking"))
                wait_for_file(os.environ["HOSTILE_SLOWED"])  # that chunk's frame is applied
                send(update("tool_call", **call),
                     request("p1", "session/request_permission",
                             {"sessionId": SID, "toolCall": call, "options": OPTIONS}))
                time.sleep(0.02)
                send({"jsonrpc": "2.0", "method": "$/cancel_request",
                      "params": {"requestId": "p1"}})
        elif method is None and ident in waiting:
            what = waiting.pop(ident)
            outcome = message.get("result", message.get("error"))
            said.append(f"{what}: {json.dumps(outcome, sort_keys=True)}")
            if not waiting and prompt_id is not None:
                send(chunk("\n\n" + "\n".join(sorted(said)) + "\n\nturn over"),
                     {"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "end_turn"}},
                     update("usage_update", used=5, size=100))
                prompt_id = None
        elif method == "session/cancel" and prompt_id is not None:
            send(result(prompt_id, {"stopReason": "cancelled"}))
            prompt_id = None
        elif ident is not None and method is not None:
            send(not_found(ident))
    return 0


if __name__ == "__main__":
    sys.exit(main())
