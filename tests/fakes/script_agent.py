"""A raw NDJSON agent that runs the prompt as a script: the prompt text is a JSON list of
steps, done in order. Like real agents it sends updates before a `session/new` reply and
after a prompt reply (a `usage_update`), camelCase throughout, and serves its sessions
concurrently (each prompt runs in its own thread).

Steps:
  {"update": {...}}                     a session/update for this session
  {"request": METHOD, "params": {...}}  a request to the client (sessionId added); its
                                        answer is reported as an agent_message_chunk
                                        `ANSWER <method> <json result or error>`; a
                                        param "$terminalId" is the last terminal created;
                                        with "measure": true the report is
                                        `{"lineBytes", "truncated", "outputChars"}` of
                                        the answer's line instead
  {"notify": METHOD, "params": {...}}   a notification to the client (sessionId added)
  {"burst": [TEXT, …]}                  one agent_message_chunk per TEXT, of one message, in
                                        one write (as a fast model's tokens queue up in
                                        the pipe): read at once by the client
  {"sleep": SECONDS}
  {"hang": true, "deaf": BOOL,          never end; on session/cancel end "cancelled"
   "wind_down": SECONDS}                unless deaf (then ignore it, like a hung provider),
                                        after `wind_down` (a real agent's cancel takes a
                                        moment: its tools stop, its last updates go out)
  {"result": {...}}                     extra fields of the prompt's result (usage, _meta)
  {"stop": REASON}                      the stop reason (default end_turn)
  {"flood": N, "kind": KIND}            N permission requests at once (tool calls fN…),
                                        then wait for every answer; reports how many were
                                        allowed as `FLOOD <allowed>/<N>`
  {"link": [PATH, TARGET]}                replace PATH with a symlink to TARGET itself (as an
                                        agent's own shell tool may, between two requests)
  {"spawn": [ARGV…]}                    start a child that inherits stdin, stdout and
                                        stderr (as a shell tool would) and leave it running;
                                        says `SPAWNED <pid>`
  {"end_on_steer": true}                wait for a `_session/steering` request, then end
                                        the turn: the prompt's reply first, the steering
                                        request's answer (FAKE_STEER) after it, once the
                                        client sends its next prompt (or 0.5 s went by):
                                        the turn ended while steering was in flight
  {"write": [PATH, TEXT]}               write PATH itself (as claude's Edit and codex's
                                        apply_patch do: no fs/write_text_file); says `WROTE`
  {"shell": COMMAND}                    run `sh -c COMMAND` itself in the session's cwd (as
                                        codex's exec_command does); says `RAN <status>`
  {"wait_file": PATH}                   go on once PATH exists (a test's go-ahead), or on
                                        session/cancel

Environment: FAKE_LOG, a file every received method is appended to (a prompt's text on
the next line, `  text: …`, then `  resource_link: URI` per context block; a session/new's
`_meta` as `  _meta: JSON`). FAKE_CLOSE_DELAY=SECONDS: advertises `session/close` and
answers it that much later. FAKE_STEER=OUTCOME: advertises `_session/steering` (as
claude-agent-acp and codex-acp do) and answers it OUTCOME (`injected`, `promptRequired`)
while a turn runs, `promptRequired` otherwise. FAKE_LINGER=1: after
its stdin closes it stays, and it ignores SIGTERM (an agent slow to go: codex-acp takes
2 s to exit however idle it is); only SIGKILL ends it. FAKE_AGENT_NAME=NAME: the
`agentInfo.name` it gives in `initialize` (a real agent's, e.g. `gemini-cli`).
FAKE_MODES=ID,ID,…: the session's modes (the first current), as gemini-cli lists them;
`session/set_mode` to a mode whose id starts with `refused` fails as gemini-cli's does in
an untrusted folder: "Internal error" with the reason in `data.details`.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from typing import Any

LOG = os.environ.get("FAKE_LOG")
OPTIONS = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
           {"optionId": "no", "name": "No", "kind": "reject_once"}]
write_lock = threading.Lock()
MODES = [m for m in os.environ.get("FAKE_MODES", "").split(",") if m]
ids = itertools.count(100)
answers: dict[int, queue.Queue[dict[str, Any]]] = {}  # our request id -> its answer
cancelled: dict[str, threading.Event] = {}  # session id -> set by session/cancel
running: set[str] = set()  # sessions with a prompt in progress
steers: dict[str, queue.Queue[Any]] = {}  # session id -> a turn waiting for steering
STEER = os.environ.get("FAKE_STEER")
next_prompt = threading.Event()  # set by each session/prompt received
cwds: dict[str, str] = {}  # session id -> its cwd
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


def make_link(target: str, path: str) -> str:
    """A symlink to `target` beside `path`, to be moved over it (atomically)."""
    temp = f"{path}.link-{os.getpid()}"
    os.symlink(target, temp)
    return temp


def prompt_text(params: dict[str, Any]) -> str:
    blocks = params.get("prompt")
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict)) \
        if isinstance(blocks, list) else ""


def run_prompt(request: dict[str, Any]) -> None:
    params = request["params"]
    sid = params["sessionId"]
    with lock:
        stop_flag = cancelled.setdefault(sid, threading.Event())
    stop_flag.clear()
    text = prompt_text(params)
    try:
        steps = json.loads(text)
    except ValueError:
        steps = [{"update": {"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "text", "text": f"echo: {text}"}}}]
    result: dict[str, Any] = {}
    stop = "end_turn"
    terminal = None  # the last terminal created, for "$terminalId"
    steer_id: Any = None
    with lock:
        running.add(sid)
    for step in steps:
        if "update" in step:
            update(sid, step["update"])
        elif "request" in step:
            params = {name: terminal if value == "$terminalId" else value
                      for name, value in step.get("params", {}).items()}
            answer = start_request(sid, step["request"], params).get()
            shown = answer.get("result") if "result" in answer else {"error": answer.get("error")}
            terminal = (shown or {}).get("terminalId", terminal)
            if step.get("measure"):
                output = (shown or {}).get("output", "")
                shown = {"lineBytes": answer["_lineBytes"], "outputChars": len(output),
                         "truncated": (shown or {}).get("truncated")}
            say(sid, f"ANSWER {step['request']} {json.dumps(shown, sort_keys=True)}\n")
        elif "notify" in step:
            send({"jsonrpc": "2.0", "method": step["notify"],
                  "params": {**step.get("params", {}), "sessionId": sid}})
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
            threading.Event().wait(float(step.get("wind_down", 0)))
        elif "result" in step:
            result.update(step["result"])
        elif "stop" in step:
            stop = step["stop"]
        elif "flood" in step:
            flood(sid, int(step["flood"]), str(step.get("kind", "edit")))
        elif "link" in step:  # as an agent's own shell tool could, between two requests
            path, target = step["link"]
            os.replace(make_link(str(target), str(path)), str(path))
        elif "spawn" in step:
            child = subprocess.Popen([str(arg) for arg in step["spawn"]])  # inherits all streams
            say(sid, f"SPAWNED {child.pid}\n")
        elif step.get("end_on_steer"):
            box: queue.Queue[Any] = queue.Queue()
            with lock:
                steers[sid] = box
            steer_id = box.get()
        elif "write" in step:
            path, content = step["write"]
            with open(os.path.join(cwds.get(sid, "."), str(path)), "w", encoding="utf-8",
                      newline="") as handle:
                handle.write(str(content))
            say(sid, "WROTE\n")
        elif "shell" in step:
            done = subprocess.run(["sh", "-c", str(step["shell"])], cwd=cwds.get(sid, "."),
                                  stdin=subprocess.DEVNULL, capture_output=True, check=False)
            say(sid, f"RAN {done.returncode}\n")
        if stop_flag.is_set():
            stop = "cancelled"
            break
    with lock:
        running.discard(sid)
    next_prompt.clear()
    send({"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": stop, **result}})
    update(sid, {"sessionUpdate": "usage_update", "used": 10, "size": 1000})
    if steer_id is not None:  # the turn is over at the client first
        next_prompt.wait(0.5)
        send({"jsonrpc": "2.0", "id": steer_id, "result": {"outcome": STEER}})


def main() -> int:
    linger = os.environ.get("FAKE_LINGER") == "1"
    delay = os.environ.get("FAKE_CLOSE_DELAY")
    close_delay = float(delay) if delay else None
    if linger:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sessions = itertools.count(1)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method is not None:
            log(method)
        if method == "session/prompt":
            log("  text: " + " ".join(prompt_text(message.get("params") or {}).split()))
            for block in (message.get("params") or {}).get("prompt") or []:
                if block.get("type") in ("resource", "resource_link"):
                    uri = block.get("uri") or (block.get("resource") or {}).get("uri")
                    log(f"  {block['type']}: {uri}")
        if method == "session/new" and "_meta" in (message.get("params") or {}):
            log("  _meta: " + json.dumps(message["params"]["_meta"], sort_keys=True))
        if method is None:  # an answer to one of our requests
            message["_lineBytes"] = len(line.rstrip("\n").encode("utf-8", "surrogatepass"))
            with lock:
                box = answers.pop(request_id, None)
            if box is not None:
                box.put(message)
        elif method == "initialize":
            capabilities: dict[str, Any] = {}
            if close_delay is not None:
                capabilities["sessionCapabilities"] = {"close": {}}
            answer: dict[str, Any] = {
                "protocolVersion": 1, "agentCapabilities": capabilities, "authMethods": []}
            if STEER is not None:
                answer["_meta"] = {"steering": {"supported": True}}
            if os.environ.get("FAKE_AGENT_NAME"):
                answer["agentInfo"] = {"name": os.environ["FAKE_AGENT_NAME"], "version": "0"}
            send({"jsonrpc": "2.0", "id": request_id, "result": answer})
        elif method == "_session/steering" and STEER is not None:
            sid = (message.get("params") or {}).get("sessionId")
            with lock:
                waiting = steers.pop(sid, None)
                busy = sid in running
            if waiting is not None:
                waiting.put(request_id)
            else:
                send({"jsonrpc": "2.0", "id": request_id,
                      "result": {"outcome": STEER if busy else "promptRequired"}})
        elif method == "session/close" and close_delay is not None:
            threading.Timer(close_delay, send, [{"jsonrpc": "2.0", "id": request_id,
                                                 "result": {}}]).start()
        elif method == "session/new":
            sid = f"script-{next(sessions)}"
            cwd = (message.get("params") or {}).get("cwd")
            if isinstance(cwd, str):
                cwds[sid] = cwd
            update(sid, {"sessionUpdate": "usage_update", "used": 0, "size": 1000})
            created: dict[str, Any] = {"sessionId": sid}
            if MODES:
                created["modes"] = {"currentModeId": MODES[0], "availableModes": [
                    {"id": mode, "name": mode} for mode in MODES]}
            send({"jsonrpc": "2.0", "id": request_id, "result": created})
        elif method == "session/set_mode" and MODES:
            mode = str((message.get("params") or {}).get("modeId"))
            if mode.startswith("refused"):
                send({"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": -32603, "message": "Internal error", "data": {
                        "details": "Cannot enable privileged approval modes in an "
                                   "untrusted folder"}}})
            else:
                send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "session/prompt":
            next_prompt.set()
            threading.Thread(target=run_prompt, args=(message,), daemon=True).start()
        elif method == "session/cancel":
            with lock:
                flag = cancelled.get((message.get("params") or {}).get("sessionId"))
            if flag is not None:
                flag.set()
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": "Method not found"}})
    log("stdin closed")
    if linger:
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
