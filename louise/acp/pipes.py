"""The agent's stdout as a pipe louise owns, read without an asyncio transport.

An asyncio pipe transport reads, and wakes the event loop, on every write of the agent,
even while its reader waits on purpose (the Neovim engine reads a streaming agent once
per frame, `JsonRpcPeer(read_pace=…)`). Here the descriptor is watched only while a read
waits for it, so what an agent writes between two paced reads waits in the pipe and costs
no wake-up; each loop wake-up costs ~0.1 ms of CPU on a shared VM, and an agent streaming
300 chunks a second made 300 of them (bench/stream.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream

# A paced reader takes what a whole frame interval brought at once; a pipe this size
# (the unprivileged maximum on Linux) keeps a fast agent from blocking on a full pipe
# meanwhile (the default 64 KiB is ~260 60-character chunks).
PIPE_BYTES = 1024 * 1024
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def agent_stdout_pipe() -> tuple[int, int]:
    """(read end, write end) for an agent's stdout, the read end non-blocking. The write
    end goes to the child (`stdout=`) and must be closed here once it is spawned."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    if os.uname().sysname == "Linux":
        with contextlib.suppress(OSError):  # a lower pipe-max-size: keep the default
            fcntl.fcntl(read_fd, _F_SETPIPE_SZ, PIPE_BYTES)
    return read_fd, write_fd


class PipeReceiveStream(ByteReceiveStream):
    """Reads a non-blocking pipe: what is there at once, else once the loop sees it
    readable. Every receive passes one checkpoint (a reader of a fast agent stays fair to
    the other tasks), before reading, so a cancellation never loses bytes read."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()
        return await self.receive_after_pause(max_bytes)

    async def receive_after_pause(self, max_bytes: int = 65536) -> bytes:
        """`receive` without its checkpoint, for a reader that just waited (its pace):
        the other tasks had their turn, and a checkpoint would cost one more round of the
        event loop per read."""
        while True:
            fd = self._fd
            if fd < 0:
                raise anyio.ClosedResourceError
            try:
                data = os.read(fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            anyio.notify_closing(fd)  # a read waiting on it ends with ClosedResourceError
            os.close(fd)
