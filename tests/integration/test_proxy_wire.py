"""`louise proxy` forwards what it reads as it reads it (issue 25, item 1): a burst the
agent writes at once leaves the proxy in a few writes, whole lines each, in order — not
one write per message (each was several event-loop round trips and a worker thread).

The proxy's stdout is one end of a SOCK_SEQPACKET socket pair: each of its writes
arrives as one packet, so the client counts them (a pipe would merge them)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.agents import FAKES

BURST = 400


class SeqpacketClient:
    """A client reading the proxy's writes one packet each."""

    def __init__(self, process: subprocess.Popen[bytes], packets: socket.socket) -> None:
        self.process = process
        self.packets = packets
        self.received: list[bytes] = []
        packets.settimeout(60)

    def send(self, request_id: int, method: str, params: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                             "method": method, "params": params}).encode()
                                 + b"\n")
        self.process.stdin.flush()

    def answer(self, request_id: int) -> dict[str, Any]:
        """Packets until the one holding the answer to `request_id`."""
        while True:
            packet = self.packets.recv(1 << 22)
            assert packet, "the proxy closed its output"
            self.received.append(packet)
            for line in packet.splitlines():
                message = json.loads(line)
                if message.get("id") == request_id and "method" not in message:
                    return dict(message)


def test_a_burst_leaves_the_proxy_in_a_few_writes_of_whole_lines(tmp_path: Path) -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    process = subprocess.Popen(
        [sys.executable, "-m", "louise.cli", "proxy", "--", sys.executable,
         str(FAKES / "script_agent.py")],
        stdin=subprocess.PIPE, stdout=theirs, stderr=subprocess.DEVNULL)
    theirs.close()
    client = SeqpacketClient(process, ours)
    try:
        client.send(1, "initialize", {"protocolVersion": 1})
        client.answer(1)
        client.send(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session_id = client.answer(2)["result"]["sessionId"]
        sent = [f"token {index} " for index in range(BURST)]
        client.received.clear()
        client.send(3, "session/prompt", {"sessionId": session_id, "prompt": [
            {"type": "text", "text": json.dumps([{"burst": sent}])}]})
        assert client.answer(3)["result"]["stopReason"] == "end_turn"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=60)
        ours.close()
    assert all(packet.endswith(b"\n") for packet in client.received)  # whole lines only
    burst = [packet for packet in client.received if b"burst-1" in packet]
    texts = [json.loads(line)["params"]["update"]["content"]["text"]
             for packet in burst for line in packet.splitlines() if b"burst-1" in line]
    assert texts == sent
    # One write per read of the agent's pipe: a handful (the agent wrote it at once).
    assert len(burst) <= BURST // 10, len(burst)
