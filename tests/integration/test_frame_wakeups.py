"""A streaming frame costs the engine one wake-up, its clock (issue 25, item 3): the
frame goes out at once and Neovim's answer, back a moment later, is read with the next
frame instead of waking the engine on its own (which doubled the engine's wake-ups, each
~0.1-0.2 ms of CPU on a shared VM, at ~80 frames a second).

The engine's frame loop and its own channel run on a thread of their own; Neovim is a
stand-in process answering every call at once over a Unix socket (as Neovim answers
`nvim_exec_lua`). A change is marked every 15 ms, as a paced stream does; the loop
thread's voluntary context switches (each a wait and a wake-up, from /proc) are counted
over the frames."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import anyio

from louise.nvim.bridge import UiBridge
from louise.nvim.frames import APPLY, FrameLoop
from louise.nvim.outbox import Outbox

FRAMES = 40

NEOVIM = r"""
import socket, sys, msgpack
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen(1)
print("listening", flush=True)
conn, _ = server.accept()
unpacker = msgpack.Unpacker(raw=False)
frames = changes = 0
while True:
    data = conn.recv(1 << 20)
    if not data:
        break
    unpacker.feed(data)
    for kind, ident, method, args in unpacker:
        if args[0] == APPLY:
            frames += 1
            changes += sum(len(ops) for ops in args[1][0]["chats"].values())
        conn.sendall(msgpack.packb([1, ident, None, None]))
print(frames, changes, flush=True)
""".replace("APPLY", repr(APPLY))


class Changes:
    """The renderer's side of a frame: one chat op per marked change."""

    def __init__(self) -> None:
        self.pending = 0

    def take_batch(self, status_for: Any) -> dict[str, Any]:
        ops, self.pending = [["append", "x"]] * self.pending, 0
        return {"chats": {"k": ops} if ops else {}, "status": {}}


def voluntary_switches() -> int:
    for line in Path("/proc/thread-self/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches in /proc/thread-self/status")


def test_a_streaming_frame_wakes_the_engine_once() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "nvim.sock")
        neovim = subprocess.Popen([sys.executable, "-c", NEOVIM, path],
                                  stdout=subprocess.PIPE, text=True)
        assert neovim.stdout is not None
        assert neovim.stdout.readline() == "listening\n"
        measured: dict[str, int] = {}

        async def engine() -> None:
            bridge = UiBridge(None, path)
            changes = Changes()
            frames = FrameLoop(bridge, changes, Outbox(),  # type: ignore[arg-type]
                               lambda session: {}, lambda failed, batch: None)
            async with anyio.create_task_group() as tg:
                await tg.start(bridge.serve)
                assert bridge.channel is not None
                tg.start_soon(frames.run)

                async def change() -> None:
                    changes.pending += 1
                    frames.mark()
                    await anyio.sleep(0.015)

                for _ in range(3):  # the leading-edge frames, and the loop warmed up
                    await change()
                before = voluntary_switches()
                for _ in range(FRAMES):
                    await change()
                measured["switches"] = voluntary_switches() - before
                measured["frames"] = frames.frames
                await anyio.sleep(0.1)  # the last answer is read after a quiet spell
                measured["answered"] = frames.frames
                tg.cancel_scope.cancel()

        loop_thread = threading.Thread(target=anyio.run, args=(engine,))
        loop_thread.start()
        loop_thread.join(60)
        assert not loop_thread.is_alive()
        neovim.wait(30)
        received, applied = map(int, neovim.stdout.read().split())
    # Every change reached Neovim, in a frame each, or fewer when the loop was late under
    # load (coalescing two changes into a frame is the point of frames).
    assert applied == 3 + FRAMES
    assert 0 < received <= applied, (received, applied)
    assert measured["answered"] == received  # and every answer was read
    # One wake-up per frame (the 15 ms clock), and a few for the loop's own business;
    # an answer that woke the engine would make it two per frame.
    assert measured["switches"] <= FRAMES * 1.4, measured
