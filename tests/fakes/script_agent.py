"""A raw NDJSON agent that runs the prompt as a script: the prompt text is a JSON list of
steps, done in order. Like real agents it sends updates before a `session/new` reply and
after a prompt reply (a `usage_update`), camelCase throughout, and serves its sessions
concurrently (each prompt runs in its own thread).

Steps:
  {"update": {...}}                     a session/update for this session
  {"request": METHOD, "params": {...}}  a request to the client (sessionId added); its
                                        answer is reported as an agent_message_chunk
                                        `ANSWER <method> <json result or error>`
  {"burst": [TEXT, …]}                  one agent_message_chunk per TEXT, of one message, in
                                        one write (as a fast model's tokens queue up in
                                        the pipe): read at once by the client
  {"sleep": SECONDS}
  {"wait_file": PATH}                   go on once PATH exists (the test says when), or
                                        on session/cancel
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

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any

LOG = os.environ.get("FAKE_LOG")
OPTIONS = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
           {"optionId": "no", "name": "No", "kind": "reject_once"}]
write_lock = threading.Lock()
ids = itertools.count(100)
answers: dict[int, queue.Queue[dict[str, Any]]] = {}  # our request id -> its answer
cancelled: dict[str, threading.Event] = {}  # session id -> set by session/cancel
lock = threading.Lock()


def send(message: dict[str, Any]) -> None:
    with write_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def log(line: str) -> None:
    if LOG:
        with write_lock, open(LOG, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def update(sid: str, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": sid, "update": body}})


def say(sid: str, text: str) -> None:
    update(sid, {"sessionUpdate": "agent_message_chunk",
                 "content": {"type": "text", "text": text}})


def start_request(sid: str, method: str, params: dict[str, Any]) -> queue.Queue[dict[str, Any]]:
    request_id = next(ids)
    box: queue.Queue[dict[str, Any]] = queue.Queue()
    with lock:
        answers[request_id] = box
    send({"jsonrpc": "2.0", "id": request_id, "method": method,
          "params": {"sessionId": sid, **params}})
    return box


def flood(sid: str, count: int, kind: str) -> None:
    boxes = [start_request(sid, "session/request_permission", {
        "toolCall": {"toolCallId": f"f{index}", "title": f"Flood {index}", "kind": kind,
                     "status": "pending"}, "options": OPTIONS}) for index in range(count)]
    allowed = 0
    for box in boxes:
        outcome = (box.get().get("result") or {}).get("outcome") or {}
        allowed += outcome.get("optionId") == "yes"
    say(sid, f"FLOOD {allowed}/{count}\n")


def run_prompt(request: dict[str, Any]) -> None:
    params = request["params"]
    sid = params["sessionId"]
    with lock:
        stop_flag = cancelled.setdefault(sid, threading.Event())
    stop_flag.clear()
    text = "".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
    try:
        steps = json.loads(text)
    except ValueError:
        steps = [{"update": {"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "text", "text": f"echo: {text}"}}}]
    result: dict[str, Any] = {}
    stop = "end_turn"
    for step in steps:
        if "update" in step:
            update(sid, step["update"])
        elif "request" in step:
            answer = start_request(sid, step["request"], step.get("params", {})).get()
            shown = answer.get("result") if "result" in answer else {"error": answer.get("error")}
            say(sid, f"ANSWER {step['request']} {json.dumps(shown, sort_keys=True)}\n")
        elif "burst" in step:
            with write_lock:
                sys.stdout.write("".join(json.dumps({
                    "jsonrpc": "2.0", "method": "session/update", "params": {
                        "sessionId": sid, "update": {
                            "sessionUpdate": "agent_message_chunk", "messageId": "burst-1",
                            "content": {"type": "text", "text": text}}}}) + "\n"
                    for text in step["burst"]))
                sys.stdout.flush()
        elif "sleep" in step:
            stop_flag.wait(float(step["sleep"]))
        elif "wait_file" in step:
            while not os.path.exists(step["wait_file"]) and not stop_flag.wait(0.01):
                pass
        elif step.get("hang"):
            if step.get("deaf"):
                threading.Event().wait()  # never: a provider that hangs and hears nothing
            stop_flag.wait()
        elif "result" in step:
            result.update(step["result"])
        elif "stop" in step:
            stop = step["stop"]
        elif "flood" in step:
            flood(sid, int(step["flood"]), str(step.get("kind", "edit")))
        elif "spawn" in step:
            child = subprocess.Popen([str(arg) for arg in step["spawn"]])  # inherits all streams
            say(sid, f"SPAWNED {child.pid}\n")
        if stop_flag.is_set():
            stop = "cancelled"
            break
    send({"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": stop, **result}})
    update(sid, {"sessionUpdate": "usage_update", "used": 10, "size": 1000})


def main() -> int:
    sessions = itertools.count(1)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method is not None:
            log(method)
        if method is None:  # an answer to one of our requests
            with lock:
                box = answers.pop(request_id, None)
            if box is not None:
                box.put(message)
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            sid = f"script-{next(sessions)}"
            update(sid, {"sessionUpdate": "usage_update", "used": 0, "size": 1000})
            send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": sid}})
        elif method == "session/prompt":
            threading.Thread(target=run_prompt, args=(message,), daemon=True).start()
        elif method == "session/cancel":
            with lock:
                flag = cancelled.get((message.get("params") or {}).get("sessionId"))
            if flag is not None:
                flag.set()
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": "Method not found"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
