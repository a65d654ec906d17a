"""A transparent stdio tap between louise and an agent: `wiretap.py LOG -- ARGV…`.

Starts ARGV, copies louise's stdin to it and its stdout back line by line, and appends every
line to LOG as NDJSON: `{"t": seconds since start, "dir": ">>" (to the agent) | "<<" (from
it), "msg": the JSON message}`, plus `{"event": "stdin_eof"}` and `{"event": "exit",
"status": N}`. stderr is inherited. SIGINT/SIGTERM sent to the process group reach the agent
too; the tap itself outlives them and exits with the agent's status, so what louise sees
(timing, exit status) is the agent's. Stdlib only.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any

START = time.monotonic()
LOCK = threading.Lock()


def record(log: IO[str], entry: dict[str, Any]) -> None:
    entry = {"t": round(time.monotonic() - START, 3), **entry}
    with LOCK:
        log.write(json.dumps(entry, ensure_ascii=False) + "\n")
        log.flush()


def line_entry(direction: str, line: bytes) -> dict[str, Any]:
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    try:
        return {"dir": direction, "msg": json.loads(text)}
    except ValueError:
        return {"dir": direction, "raw": text}


def pump(source: IO[bytes], sink: IO[bytes], log: IO[str], direction: str,
         on_eof: str | None) -> None:
    try:
        for line in iter(source.readline, b""):
            record(log, line_entry(direction, line))
            try:
                sink.write(line)
                sink.flush()
            except (BrokenPipeError, OSError):
                break
    finally:
        if on_eof:
            record(log, {"event": on_eof})
        with contextlib.suppress(OSError):
            sink.close()


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: wiretap.py LOG -- ARGV...\n")
        return 2
    # A Python handler (not SIG_IGN, which the agent would inherit) keeps the tap alive
    # until the agent itself exits.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    with open(argv[0], "a", encoding="utf-8") as log:
        child = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        record(log, {"event": "start", "pid": child.pid})
        assert child.stdin is not None and child.stdout is not None
        inbound = threading.Thread(target=pump, daemon=True, args=(
            sys.stdin.buffer, child.stdin, log, ">>", "stdin_eof"))
        outbound = threading.Thread(target=pump, args=(
            child.stdout, sys.stdout.buffer, log, "<<", None))
        inbound.start()
        outbound.start()
        status = child.wait()
        outbound.join(timeout=5)
        record(log, {"event": "exit", "status": status})
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
