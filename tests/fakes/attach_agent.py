"""A raw NDJSON agent for the registry's attach, turn and transcript tests.

Like claude-agent-acp, codex-acp and vibe-acp on `session/load`, it replays its history
as one `user_message_chunk` and one `agent_message_chunk` per message, each with its
`messageId`, before the reply; a live reply streams in two chunks of one `messageId`.
Sessions persist in FAKE_STORE (a JSON file), so they outlive a crash.

Environment:
  FAKE_CAPS         comma list of load,resume,close,embedded (default: load)
  FAKE_STORE        where sessions are kept (required for load/resume across restarts)
  FAKE_LOG          a file each received method (and permission outcome) is appended to
  FAKE_LOAD         "fail": session/load and session/resume answer an error
  FAKE_RESUME_REPLAYS  "1": session/resume replays the history too (not per the spec)
  FAKE_SESSION_IDS  comma list of the ids session/new hands out, in order
  FAKE_AGENT_NAME   its `agentInfo.name` (`gemini-cli`: it then answers session/load
                    first and streams the history after it, without messageIds, ending
                    with an available_commands_update, as gemini-cli 0.61 does)
  FAKE_HISTORY_DELAY  seconds between that answer and the history (default 0.3); 0: at
                    once, as gemini-cli's often come in the same read as the answer
  FAKE_COMMANDS     "1": after session/new (only) it sends its slash commands, shaped as
                    claude-agent-acp's `available_commands_update` (name, description,
                    input.hint)

Prompts: "crash" exits mid-turn; "wait" streams, then ends only on session/cancel;
"ask-after-cancel" streams, then on session/cancel asks for a permission and ends with
the outcome logged; "tools N SIZE" sends N tool calls with SIZE bytes of rawInput each;
anything else is echoed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import error, incoming, result, send

CAPS = set(filter(None, os.environ.get("FAKE_CAPS", "load").split(",")))
STORE = os.environ.get("FAKE_STORE")
LOG = os.environ.get("FAKE_LOG")
IDS = [i for i in os.environ.get("FAKE_SESSION_IDS", "").split(",") if i]


def log(line: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def load_store() -> dict[str, Any]:
    if STORE and os.path.exists(STORE):
        with open(STORE, encoding="utf-8") as handle:
            data: dict[str, Any] = json.load(handle)
            return data
    return {"sessions": {}, "next": 0}


def save_store(store: dict[str, Any]) -> None:
    if STORE:
        with open(STORE + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(store, handle)
        os.replace(STORE + ".tmp", STORE)


def update(session_id: str, variant: str, **fields: Any) -> None:
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": session_id, "update": {"sessionUpdate": variant, **fields}}})


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def replay(session_id: str, history: list[dict[str, str]]) -> None:
    for entry in history:
        update(session_id, entry["kind"], messageId=entry["id"], content=text(entry["text"]))


def main() -> int:
    store = load_store()
    sessions: dict[str, list[dict[str, str]]] = store["sessions"]
    running: dict[str, Any] = {}  # prompt waiting for session/cancel: sessionId -> id, mode
    for message, method, request_id, params in incoming():
        if method is not None:
            log(method)
        if method == "initialize":
            caps: dict[str, Any] = {
                "loadSession": "load" in CAPS,
                "promptCapabilities": {"embeddedContext": "embedded" in CAPS},
                "sessionCapabilities": {name: {} for name in ("resume", "close")
                                        if name in CAPS}}
            send(result(request_id, {"protocolVersion": 1, "agentCapabilities": caps,
                                     "authMethods": [], "agentInfo": {
                                         "name": os.environ.get("FAKE_AGENT_NAME", "attach")}}))
        elif method == "session/new":
            store["next"] += 1
            session_id = IDS.pop(0) if IDS else f"fake-{store['next']}"
            sessions[session_id] = []
            save_store(store)
            send(result(request_id, {"sessionId": session_id}))
            if os.environ.get("FAKE_COMMANDS") == "1":
                update(session_id, "available_commands_update", availableCommands=[
                    {"name": "review", "description": "Review the current changes",
                     "input": {"hint": "what to look at"}},
                    {"name": "compact", "description": "Clear history but keep a summary",
                     "input": None}])
        elif method in ("session/load", "session/resume"):
            session_id = params.get("sessionId")
            if os.environ.get("FAKE_LOAD") == "fail" or session_id not in sessions:
                send(error(request_id, -32002, f"Resource not found: session {session_id}"))
                continue
            if os.environ.get("FAKE_AGENT_NAME") == "gemini-cli" and method == "session/load":
                send(result(request_id, {}))
                # The history streams a moment later (gemini-cli: async), or at once.
                time.sleep(float(os.environ.get("FAKE_HISTORY_DELAY", "0.3")))
                for entry in sessions[session_id]:
                    update(session_id, entry["kind"], content=text(entry["text"]))
                update(session_id, "available_commands_update", availableCommands=[])
                continue
            if method == "session/load" or os.environ.get("FAKE_RESUME_REPLAYS") == "1":
                replay(session_id, sessions[session_id])
            send(result(request_id, {}))
        elif method == "session/prompt":
            session_id = params["sessionId"]
            words = " ".join(block.get("text", "") for block in params["prompt"]
                             if block.get("type") == "text")
            blocks = [block.get("type") for block in params["prompt"]]
            log("prompt-blocks " + ",".join(str(b) for b in blocks))
            history = sessions.setdefault(session_id, [])
            number = len(history) + 1  # ids stay unique when a turn left no reply
            history.append({"kind": "user_message_chunk", "id": f"u{number}", "text": words})
            if words == "crash":
                save_store(store)
                update(session_id, "agent_message_chunk", messageId=f"m{number}",
                       content=text("partial"))
                os._exit(3)
            if words in ("wait", "ask-after-cancel"):
                update(session_id, "agent_message_chunk", messageId=f"m{number}",
                       content=text("working"))
                running[session_id] = (request_id, words)
                continue
            if words.startswith("tools "):
                _, count, size = words.split()
                payload = "x" * int(size)
                for index in range(int(count)):
                    update(session_id, "tool_call", toolCallId=f"t{number}-{index}",
                           title=f"tool {index}", kind="read", status="completed",
                           rawInput={"data": payload})
            reply = f"echo: {words}"
            history.append({"kind": "agent_message_chunk", "id": f"m{number}", "text": reply})
            save_store(store)
            half = len(reply) // 2
            update(session_id, "agent_message_chunk", messageId=f"m{number}",
                   content=text(reply[:half]))
            update(session_id, "agent_message_chunk", messageId=f"m{number}",
                   content=text(reply[half:]))
            send(result(request_id, {"stopReason": "end_turn"}))
        elif method == "session/cancel":
            session_id = params.get("sessionId")
            waiting = running.pop(session_id, None)
            if waiting is None:
                continue
            prompt_id, mode = waiting
            if mode == "ask-after-cancel":
                send({"jsonrpc": "2.0", "id": 500, "method": "session/request_permission",
                      "params": {"sessionId": session_id,
                                 "toolCall": {"toolCallId": "late", "title": "Write late.txt",
                                              "kind": "edit"},
                                 "options": [{"optionId": "yes", "name": "Allow",
                                              "kind": "allow_once"},
                                             {"optionId": "no", "name": "Reject",
                                              "kind": "reject_once"}]}})
                running[session_id] = (prompt_id, "answer")
                continue
            send(result(prompt_id, {"stopReason": "cancelled"}))
        elif method is None and request_id == 500:
            log("permission-outcome " + json.dumps(message.get("result")))
            for session_id, (prompt_id, mode) in list(running.items()):
                if mode == "answer":
                    del running[session_id]
                    send(result(prompt_id, {"stopReason": "cancelled"}))
        elif method == "session/close" and "close" in CAPS:
            send(result(request_id, {}))
        elif request_id is not None and method is not None:
            send(error(request_id, -32601, "Method not found"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
