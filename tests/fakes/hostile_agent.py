"""A raw NDJSON agent that attacks the client in the middle of a streaming turn; the mode
comes from FAKE_MODE.

- malformed: between streamed chunks, every kind of malformed message (ids of every bad
  type, `$/cancel_request` with bad ids, 100,000-deep nesting, oversized and
  too-structured lines, both result and error, unknown response ids, non-objects, invalid
  UTF-8, …); it ends the turn once each of its bad requests got an answer, with a chunk
  listing the error codes it received.
- exit_with_child / exit_with_daemon: spawns a sleeping child that inherits stdout and
  stderr (the daemon in its own session, outside our process group), writes the child's
  pid to FAKE_CHILD_PID_FILE, then exits with status 5 mid-turn.
- huge_version: answers initialize with a protocolVersion a megabyte long.
- flood_requests: sends FAKE_FLOOD `fs/read_text_file` requests, stops reading its input
  for FAKE_PAUSE seconds, then reads every answer and ends the turn with a chunk
  "answered A errors E".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # ndjson.py, also under -P
from ndjson import incoming, not_found, result

MODE = os.environ.get("FAKE_MODE", "malformed")
SID = "hostile-1"
out = sys.stdout.buffer


def write(raw: bytes) -> None:
    out.write(raw + b"\n")
    out.flush()


def send(message: Any) -> None:
    write(json.dumps(message).encode())


def chunk(text: str) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": SID, "update": {"sessionUpdate": "agent_message_chunk",
                                      "content": {"type": "text", "text": text}}}})


def request(request_id: Any, method: str = "fs/read_text_file") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {"sessionId": SID, "path": "/nowhere"}}


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def malformed_inputs() -> tuple[list[bytes], dict[Any, int]]:
    """Raw lines, and the ids of the requests among them with how many answers each is
    owed (None: the id was unusable, so the answer carries a null id)."""
    lines: list[bytes] = []
    owed: dict[Any, int] = {}

    def add(message: Any) -> None:
        lines.append(json.dumps(message).encode())

    for bad_id in ({}, [1], 1.5, True):  # requests with ids of every bad type
        add(request(bad_id))
    owed[None] = 4
    for bad_id in ({}, [1], 2.5, False):  # $/cancel_request with such ids
        add({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": bad_id}})
    add({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {}})
    add({"jsonrpc": "2.0", "method": "$/cancel_request", "params": [7]})
    for bad_id in ({}, [1], 3.5, True):  # responses with such ids
        add({"jsonrpc": "2.0", "id": bad_id, "result": {}})
    add({"jsonrpc": "2.0", "id": 99_999, "result": {}, "error": {"code": 1, "message": "x"}})
    add({"jsonrpc": "2.0", "id": 424_242, "result": {}})  # answers nothing we asked
    add({"jsonrpc": "2.0", "id": 31_337})  # neither result nor error
    add({"jsonrpc": "2.0", "id": 31_338, "error": "boom"})  # a malformed error
    add({"jsonrpc": "2.0"})  # neither request, notification nor response
    for value in ([1, 2], [], "text", 42, None):  # not objects
        add(value)
    add({"jsonrpc": "2.0", "method": ["session/update"]})  # method not a string
    add({"jsonrpc": "2.0", "id": 7001, "method": 5})
    owed[7001] = 1
    lines.append(b"this is not json")
    lines.append(b'{"jsonrpc":"2.0","method":"session/update","params":NaN}')
    lines.append(b'{"jsonrpc":"2.0","method":"session/update","params":{"x":"\xff\xfe"}}')
    lines.append(b'{"jsonrpc":"2.0","id":7004,"method":"fs/read_text_file","params":'
                 b'{"path":"\xc3\x28"}}')  # invalid UTF-8 in a request: answered
    owed[7004] = 1
    lines.append(deep(100_000))  # deep enough for the recursion limit
    lines.append(b'{"jsonrpc":"2.0","id":7006,"method":"fs/read_text_file","params":'
                 + deep(100_000) + b"}")
    owed[7006] = 1
    lines.append(b'{"jsonrpc":"2.0","id":7005,"method":"fs/read_text_file","params":['
                 + b"{}," * 300_000 + b"{}]}")  # more values than the client's budget
    owed[7005] = 1
    lines.append(b'{"jsonrpc":"2.0","id":7003,"method":"fs/write_text_file","params":'
                 b'{"content":"' + b"x" * (3 * 1024 * 1024) + b'"}}')  # over a 2 MiB limit
    owed[7003] = 1
    duplicate = json.dumps(request(7010, "_vendor/unknown")).encode()
    lines.append(duplicate)  # the same id twice, the first still in progress
    lines.append(duplicate)
    owed[7010] = 2
    return lines, owed


def spawn_child(daemon: bool) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                             start_new_session=daemon)  # inherits stdout and stderr
    with open(os.environ["FAKE_CHILD_PID_FILE"], "w") as pid_file:
        pid_file.write(str(child.pid))


def main() -> int:
    prompt_id: Any = None
    owed: dict[Any, int] = {}
    codes: list[str] = []
    flood = int(os.environ.get("FAKE_FLOOD", "10000"))
    answered = errors = 0
    for message, method, request_id, _ in incoming():
        if method == "initialize":
            version: Any = "9" * 1_000_000 if MODE == "huge_version" else 1
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": version, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            send(result(request_id, {"sessionId": SID}))
        elif method == "session/prompt":
            prompt_id = request_id
            chunk("before")
            if MODE == "malformed":
                lines, owed = malformed_inputs()
                for number, raw in enumerate(lines):
                    write(raw)
                    chunk(f"ok {number}")
            elif MODE in ("exit_with_child", "exit_with_daemon"):
                spawn_child(daemon=MODE == "exit_with_daemon")
                sys.stderr.write("fatal: gone, a child keeps stdout open\n")
                sys.stderr.flush()
                os._exit(5)
            elif MODE == "flood_requests":
                for number in range(flood):
                    send(request(100_000 + number))
                time.sleep(float(os.environ.get("FAKE_PAUSE", "6")))  # reads nothing meanwhile
        elif method is None and MODE == "malformed" and request_id in owed:
            codes.append(f"{request_id}:{message.get('error', {}).get('code')}")
            owed[request_id] -= 1
            if owed[request_id] == 0:
                del owed[request_id]
            if not owed:
                chunk("answers " + " ".join(sorted(codes)))
                send(result(prompt_id, {"stopReason": "end_turn"}))
        elif method is None and MODE == "flood_requests" and isinstance(request_id, int) \
                and request_id >= 100_000:
            answered += 1
            errors += "error" in message
            if answered == flood:
                chunk(f"answered {answered} errors {errors}")
                send(result(prompt_id, {"stopReason": "end_turn"}))
        elif request_id is not None and method is not None:
            send(not_found(request_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
