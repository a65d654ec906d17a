"""A raw NDJSON agent that runs the prompt as a script: the prompt text is a JSON list of
steps, done in order. Like real agents it sends updates before a `session/new` reply and
after a prompt reply (a `usage_update`), camelCase throughout.

Steps:
  {"update": {...}}                     a session/update for this session
  {"request": METHOD, "params": {...}}  a request to the client (sessionId added); its
                                        answer is reported as an agent_message_chunk
                                        `ANSWER <method> <json result or error>`
  {"sleep": SECONDS}
  {"hang": true, "deaf": BOOL}          never end; on session/cancel end "cancelled"
                                        unless deaf (then ignore it, like a hung provider)
  {"result": {...}}                     extra fields of the prompt's result (usage, _meta)
  {"stop": REASON}                      the stop reason (default end_turn)
  {"flood": N, "kind": KIND}            N permission requests at once (tool calls fN…),
                                        then wait for every answer; reports how many were
                                        allowed as `FLOOD <allowed>/<N>`
  {"spawn": [ARGV…]}                    start a child that inherits stdin, stdout and
                                        stderr (as a shell tool would) and leave it running;
                                        says `SPAWNED <pid>`

Environment: FAKE_LOG, a file every received method is appended to.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

LOG = os.environ.get("FAKE_LOG")
inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
next_id = 100
sessions = 0


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(line: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def update(sid: str, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": sid, "update": body}})


def say(sid: str, text: str) -> None:
    update(sid, {"sessionUpdate": "agent_message_chunk",
                 "content": {"type": "text", "text": text}})


def reader() -> None:
    for line in sys.stdin:
        if line.strip():
            inbox.put(json.loads(line))
    inbox.put(None)


class Cancelled(Exception):
    pass


def receive(state: dict[str, Any], timeout: float | None = None) -> dict[str, Any] | None:
    try:
        message = inbox.get(timeout=timeout)
    except queue.Empty:
        return None
    if message is None:
        sys.exit(0)
    if "method" in message:
        log(message["method"])
        if message["method"] == "session/cancel":
            state["cancelled"] = True
    return message


def ask(sid: str, method: str, params: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    global next_id
    next_id += 1
    request_id = next_id
    send({"jsonrpc": "2.0", "id": request_id, "method": method,
          "params": {"sessionId": sid, **params}})
    while True:
        message = receive(state)
        if message is not None and message.get("id") == request_id and "method" not in message:
            return message


def flood(sid: str, count: int, kind: str, state: dict[str, Any]) -> None:
    global next_id
    options = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
               {"optionId": "no", "name": "No", "kind": "reject_once"}]
    waiting: set[int] = set()
    for index in range(count):
        next_id += 1
        waiting.add(next_id)
        call = {"toolCallId": f"f{next_id}", "title": f"Flood {index}", "kind": kind,
                "status": "pending"}
        send({"jsonrpc": "2.0", "id": next_id, "method": "session/request_permission",
              "params": {"sessionId": sid, "toolCall": call, "options": options}})
    allowed = 0
    while waiting:
        message = receive(state)
        if message is None or "method" in message or message.get("id") not in waiting:
            continue
        waiting.discard(message["id"])
        outcome = (message.get("result") or {}).get("outcome") or {}
        allowed += outcome.get("optionId") == "yes"
    say(sid, f"FLOOD {allowed}/{count}\n")


def run_prompt(request: dict[str, Any]) -> None:
    params = request["params"]
    sid = params["sessionId"]
    text = "".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
    try:
        steps = json.loads(text)
    except ValueError:
        steps = [{"update": {"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "text", "text": f"echo: {text}"}}}]
    state: dict[str, Any] = {"cancelled": False}
    result: dict[str, Any] = {}
    stop = "end_turn"
    for step in steps:
        if "update" in step:
            update(sid, step["update"])
        elif "request" in step:
            answer = ask(sid, step["request"], step.get("params", {}), state)
            shown = answer.get("result") if "result" in answer else {"error": answer.get("error")}
            say(sid, f"ANSWER {step['request']} {json.dumps(shown, sort_keys=True)}\n")
        elif "sleep" in step:
            deadline = time.monotonic() + float(step["sleep"])
            while time.monotonic() < deadline:
                receive(state, timeout=max(0.0, deadline - time.monotonic()))
        elif step.get("hang"):
            while not (state["cancelled"] and not step.get("deaf")):
                receive(state)
            stop = "cancelled"
            break
        elif "result" in step:
            result.update(step["result"])
        elif "flood" in step:
            flood(sid, int(step["flood"]), str(step.get("kind", "edit")), state)
        elif "spawn" in step:
            child = subprocess.Popen([str(arg) for arg in step["spawn"]])  # inherits all streams
            say(sid, f"SPAWNED {child.pid}\n")
        elif "stop" in step:
            stop = step["stop"]
        if state["cancelled"]:
            stop = "cancelled"
            break
    send({"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": stop, **result}})
    update(sid, {"sessionUpdate": "usage_update", "used": 10, "size": 1000})


def main() -> int:
    global sessions
    threading.Thread(target=reader, daemon=True).start()
    state: dict[str, Any] = {"cancelled": False}
    while True:
        message = receive(state)
        if message is None:
            continue
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            sessions += 1
            sid = f"script-{sessions}"
            update(sid, {"sessionUpdate": "usage_update", "used": 0, "size": 1000})
            send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": sid}})
        elif method == "session/prompt":
            run_prompt(message)
        elif request_id is not None and method is not None:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    sys.exit(main())
