"""Peak memory (RSS) of the JSON-RPC peer under hostile input, each case in a fresh process.

Cases:
- `brackets MiB`: one notification whose params are `[{},{},…]`, MiB long, then a small
  one; the peer must survive and deliver the small one.
- `text MiB`: one notification carrying a MiB-long string (the largest legitimate kind
  of line), then a small one.
- `replies N MiB`: the agent sends N `fs/read_text_file` requests, each answered with a
  MiB-sized file, and never reads our replies; measured once intake has stalled.

    .venv/bin/python bench/bench_peer_memory.py            # every case
    .venv/bin/python bench/bench_peer_memory.py brackets 60
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from louise.acp.jsonrpc import JsonRpcPeer
from tests.memstream import pipe

MIB = 1024 * 1024


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Handler:
    def __init__(self, reply_bytes: int = 0) -> None:
        self.notes: list[str] = []
        self.reply_bytes = reply_bytes
        self.answered = 0

    async def handle_notification(self, method: str, params: Any) -> None:
        self.notes.append(method)

    async def handle_request(self, method: str, params: Any) -> Any:
        self.answered += 1
        return {"content": "x" * self.reply_bytes}  # a fresh string, as a file read makes


def big_line(kind: str, mib: int) -> Iterator[bytes]:
    """The line in 256 KiB pieces, made as they are sent: the bench holds none of it."""
    size = mib * MIB
    yield b'{"jsonrpc":"2.0","method":"big","params":'
    if kind == "brackets":
        unit, body = b"{},", b"["
    else:
        unit, body = b"x", b'{"text":"'
    yield body
    piece = unit * (256 * 1024 // len(unit))
    for _ in range(size // len(piece)):
        yield piece
    yield b"{}]}\n" if kind == "brackets" else b'"}}\n'


async def line_case(kind: str, mib: int) -> str:
    agent_out, peer_in = pipe(buffer=4)
    peer_out, _agent_in = pipe(buffer=1024)
    handler = Handler()
    peer = JsonRpcPeer(peer_in, peer_out, handler)
    async with anyio.create_task_group() as tg:
        await tg.start(peer.run)
        for piece in big_line(kind, mib):
            await agent_out.send(piece)
        await agent_out.send(b'{"jsonrpc":"2.0","method":"small"}\n')
        with anyio.fail_after(600):
            while "small" not in handler.notes:
                await anyio.sleep(0.01)
        peer.close()
        tg.cancel_scope.cancel()
    delivered = "delivered" if "big" in handler.notes else "refused"
    return f"{kind} {mib} MiB line: {delivered}, the next message delivered"


async def replies_case(count: int, mib: int) -> str:
    agent_out, peer_in = pipe(buffer=4)
    peer_out, _agent_in = pipe(buffer=1)  # the agent never reads
    handler = Handler(mib * MIB)
    peer = JsonRpcPeer(peer_in, peer_out, handler)

    async def flood() -> None:
        for i in range(count):
            await agent_out.send(json.dumps({
                "jsonrpc": "2.0", "id": i, "method": "fs/read_text_file",
                "params": {"sessionId": "s", "path": f"/f{i}"}}).encode() + b"\n")

    async with anyio.create_task_group() as tg:
        await tg.start(peer.run)
        tg.start_soon(flood)
        # Wait until the peer stops taking requests (no new answer for 2 s).
        last, still = -1, time.monotonic()
        while time.monotonic() - still < 2.0:
            await anyio.sleep(0.1)
            if handler.answered != last:
                last, still = handler.answered, time.monotonic()
        peer.close()
        tg.cancel_scope.cancel()
    return f"{count} requests of a {mib} MiB file, agent not reading: {last} handled"


def child(argv: list[str]) -> None:
    case = argv[0]
    if case == "replies":
        text = anyio.run(replies_case, int(argv[1]), int(argv[2]))
    else:
        text = anyio.run(line_case, case, int(argv[1]))
    print(f"{text}; peak RSS {peak_rss_mb():,.0f} MB")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
        return
    cases = [sys.argv[1:]] if len(sys.argv) > 1 else [
        ["brackets", "60"], ["brackets", "30"], ["text", "30"], ["replies", "2000", "4"]]
    baseline = subprocess.run(
        [sys.executable, "-c", "import resource, anyio, louise.acp.jsonrpc;"
         "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"],
        capture_output=True, text=True, check=True)
    print(f"baseline (imports only): {float(baseline.stdout):,.0f} MB")
    for case in cases:
        subprocess.run([sys.executable, __file__, "--child", *case], check=True)


if __name__ == "__main__":
    main()
