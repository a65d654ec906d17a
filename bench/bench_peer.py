"""Notifications per second through the real JSON-RPC peer plus schema validation.

Feeds N `agent_message_chunk` notifications (in-memory byte stream, written in 256 KiB
chunks as a pipe would deliver them) through `JsonRpcPeer` and `schema.parse_update`, and
prints the rate, plus the rate of the framing and JSON decoding alone for comparison.

    .venv/bin/python bench/bench_peer.py [N]
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import anyio

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))

from louise.acp.framing import LineDecoder
from louise.acp.jsonrpc import JsonRpcPeer
from louise.acp.schema import parse_update
from tests.memstream import pipe


def make_stream(count: int) -> bytes:
    lines = []
    for i in range(count):
        lines.append(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "bench", "update": {
                "sessionUpdate": "agent_message_chunk", "messageId": "m1",
                "content": {"type": "text", "text": f"token {i} of a streamed reply "}}}}))
    return ("\n".join(lines) + "\n").encode()


class Counting:
    def __init__(self, expected: int) -> None:
        self.count = 0
        self.valid = 0
        self.expected = expected
        self.done = anyio.Event()

    async def handle_notification(self, method: str, params: Any) -> None:
        if parse_update(params["update"]).model is not None:
            self.valid += 1
        self.count += 1
        if self.count == self.expected:
            self.done.set()

    async def handle_request(self, method: str, params: Any) -> Any:
        return None


async def through_peer(data: bytes, count: int) -> tuple[float, float]:
    agent_out, peer_in = pipe(buffer=64)
    peer_out, _agent_in = pipe(buffer=64)
    handler = Counting(count)
    peer = JsonRpcPeer(peer_in, peer_out, handler)
    warm = parse_update({"sessionUpdate": "agent_message_chunk",
                         "content": {"type": "text", "text": "warm"}})
    assert warm.model is not None  # validation is lazy: import the SDK before timing
    async with anyio.create_task_group() as tg:
        await tg.start(peer.run)
        start, cpu_start = time.perf_counter(), time.process_time()
        step = 256 * 1024
        for offset in range(0, len(data), step):
            await agent_out.send(data[offset : offset + step])
        await handler.done.wait()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        peer.close()
        tg.cancel_scope.cancel()
    assert handler.valid == count, "every chunk must validate"
    return elapsed, cpu


def framing_only(data: bytes) -> float:
    start = time.perf_counter()
    decoder = LineDecoder()
    step = 256 * 1024
    for offset in range(0, len(data), step):
        for line in decoder.feed(data[offset : offset + step]):
            json.loads(line)  # type: ignore[arg-type]
    return time.perf_counter() - start


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    data = make_stream(count)
    base = framing_only(data)
    full, cpu = anyio.run(through_peer, data, count)
    print(f"notifications: {count:,} ({len(data) / 1e6:.1f} MB)")
    print(f"framing + json only : {count / base:12,.0f} /s")
    print(f"peer + validation   : {count / full:12,.0f} /s   (target >= 50,000 /s)")
    # CPU time is steadier than wall time on a shared machine; compare runs with it.
    print(f"  per CPU second    : {count / cpu:12,.0f} /s")
    print(f"ratio full/framing  : {full / base:.2f}x the time")


if __name__ == "__main__":
    main()
