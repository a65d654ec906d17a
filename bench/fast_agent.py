"""A fake ACP agent for the streaming benchmarks: it writes its chunks as fast as a pipe
takes them, so the client is measured, not the agent (stdlib only, no event loop).

    python bench/fast_agent.py          # speaks ACP on stdin/stdout

A prompt `stream chunks=N shape=line60|prose rate=R` answers with N
`agent_message_chunk` notifications, then `end_turn`:

- `line60`: every chunk is one 60-character line and its newline (`00042=<stamp> …`,
  with some markdown in it: `**bold**`, `` `code` ``, every 25th line a `##` heading);
- `prose`: 100-character chunks, a newline every 10th (the older bench shape);
- `longline`: 60 characters per chunk and never a newline (one line of 600 KB for 10,000);
- `words`: 60-character lines of words, numbers and identifiers (compresses like prose).

`rate=0` (a burst): every line is encoded before the first is written, the stamp (the
writer's CLOCK_MONOTONIC in µs, the same clock as `vim.uv.hrtime()`) is the moment the
write starts, and the whole burst goes out in one `write` loop into a pipe made as large
as the system allows. `rate=R`: chunk i is written at start + i/R (absolute deadlines:
the rate does not drift) with its own stamp, one `write` per chunk.

With `$LOUISE_BENCH_AGENT_LOG` set, the agent appends one JSON line per stream to that
file: when it started writing, when the last write returned, and how long encoding took.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import sys
import time
from typing import Any

SESSION = "bench-1"
STAMP_DIGITS = 13
PLACEHOLDER = "S" * STAMP_DIGITS
F_SETPIPE_SZ = 1031
PIPE_MAX = "/proc/sys/fs/pipe-max-size"
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "


def line60(index: int, stamp: str) -> str:
    """One 60-character line (and its newline) with inline markdown."""
    head = f"{index:05d}={stamp} "
    body = "**bold** `code` " + FILLER
    text = (head + body)[:60]
    if index % 25 == 24:
        text = ("## " + head + body)[:60]
    return text + "\n"


def prose(index: int, stamp: str) -> str:
    """A 100-character piece of a paragraph, a newline every 10th."""
    text = (f"{index:05d}={stamp} " + FILLER * 2)[:100]
    if index % 10 == 9:
        text = text[:-1] + "\n"
    return text


def longline(index: int, stamp: str) -> str:
    """60 characters of one endless line (no newline ever)."""
    return (f"{index:05d}={stamp} " + FILLER)[:60]


# A coding agent's words: text that compresses about as well as prose (zlib ~2.5x),
# where `line60`'s repeated body compresses 20x (bench/engine_rss.py --shape words).
WORDS_TEXT = ("the a session model keeps what an agent said in each turn and louise shows it chat "
         "window where person reads while works on files tests commands runs reply text "
         "stream chunk frame buffer engine memory history export resume preview search "
         "function return value error line column path config option python lua neovim "
         "install update delete rename move copy check build deploy")
WORDS = WORDS_TEXT.split(" ")


def words(index: int, stamp: str) -> str:
    """One 60-character line (and its newline) of words, numbers and identifiers picked
    by a generator seeded with the line's index."""
    rng = random.Random(index)
    text = f"{index:05d}={stamp} "
    while len(text) < 60:
        roll = rng.random()
        if roll < 0.1:
            text += f"{rng.randrange(10**6)} "
        elif roll < 0.15:
            text += f"`{rng.choice(WORDS)}_{rng.choice(WORDS)}()` "
        else:
            text += rng.choice(WORDS) + " "
    return text[:60] + "\n"


SHAPES = {"line60": line60, "prose": prose, "longline": longline, "words": words}


NOTIFICATION_HEAD, NOTIFICATION_TAIL = json.dumps(
    {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": SESSION, "update": {"sessionUpdate": "agent_message_chunk",
                                         "content": {"type": "text", "text": "@"}}}}
).split('"@"')


def notification(text: str) -> str:
    """One `agent_message_chunk` line (a template: json.dumps of the whole message per
    chunk made the agent, not the client, the slow part of a burst)."""
    return NOTIFICATION_HEAD + json.dumps(text) + NOTIFICATION_TAIL + "\n"


def write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def reply(ident: Any, result: Any) -> None:
    write_all((json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}) + "\n").encode())


def error(ident: Any, code: int, message: str) -> None:
    write_all((json.dumps({"jsonrpc": "2.0", "id": ident,
                           "error": {"code": code, "message": message}}) + "\n").encode())


def now_us() -> str:
    return f"{time.monotonic_ns() // 1000:0{STAMP_DIGITS}d}"


def knobs(text: str) -> dict[str, str]:
    out = {}
    for word in text.split()[1:]:
        key, _, value = word.partition("=")
        out[key] = value
    return out


def stream(text: str) -> dict[str, float]:
    opts = knobs(text)
    chunks = int(opts.get("chunks", "100"))
    shape = SHAPES[opts.get("shape", "line60")]
    rate = float(opts.get("rate", "0"))
    if rate <= 0:
        encode_start = time.monotonic_ns()
        blob = "".join(notification(shape(i, PLACEHOLDER)) for i in range(chunks)).encode()
        encoded = time.monotonic_ns()
        start = time.monotonic_ns()
        write_all(blob.replace(PLACEHOLDER.encode(), f"{start // 1000:0{STAMP_DIGITS}d}".encode()))
        done = time.monotonic_ns()
        return {"chunks": chunks, "encode_ms": (encoded - encode_start) / 1e6,
                "first_us": start / 1e3, "last_written_us": done / 1e3}
    start = time.monotonic()
    first = 0
    for index in range(chunks):
        delay = start + index / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        stamp = now_us()
        if index == 0:
            first = int(stamp)
        write_all(notification(shape(index, stamp)).encode())
    return {"chunks": chunks, "encode_ms": 0.0, "first_us": first,
            "last_written_us": time.monotonic_ns() / 1e3}


def grow_pipe() -> None:
    """As big a stdout pipe as allowed, so a burst is written without waiting for the
    reader (a file or terminal stdout is left alone)."""
    try:
        with open(PIPE_MAX) as f:
            size = int(f.read())
        fcntl.fcntl(1, F_SETPIPE_SZ, size)
    except (OSError, ValueError):
        pass


def main() -> int:
    grow_pipe()
    log_path = os.environ.get("LOUISE_BENCH_AGENT_LOG")
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        method, ident = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            reply(ident, {"protocolVersion": 1, "authMethods": [],
                          "agentCapabilities": {"loadSession": False, "promptCapabilities": {
                              "image": False, "audio": False, "embeddedContext": False}},
                          "agentInfo": {"name": "bench-fast-agent", "version": "1"}})
        elif method == "session/new":
            reply(ident, {"sessionId": SESSION})
        elif method == "session/prompt":
            words = " ".join(block.get("text", "") for block in params.get("prompt", [])
                             if isinstance(block, dict))
            if words.split()[:1] == ["stream"]:
                figures = stream(words)
                if log_path:
                    with open(log_path, "a") as f:
                        f.write(json.dumps(figures) + "\n")
            else:
                write_all(notification("say `stream chunks=N shape=line60 rate=R`\n").encode())
            reply(ident, {"stopReason": "end_turn"})
        elif ident is not None and method is not None:
            error(ident, -32601, f"method not found: {method}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
