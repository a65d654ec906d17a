"""The agent's stdout as a pipe louise owns, read without an asyncio transport.

An asyncio pipe transport reads, and wakes the event loop, on every write of the agent,
even while its reader waits on purpose (the Neovim engine reads a streaming agent once
per frame, `JsonRpcPeer(read_pace=…)`). Here the descriptor is watched only while a read
waits for it, so what an agent writes between two paced reads waits in the pipe and costs
no wake-up; each loop wake-up costs ~0.1 ms of CPU on a shared VM, and an agent streaming
300 chunks a second made 300 of them (bench/stream.py).
"""

from __future__ import annotations

import os

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

from louise.acp.spawn import PIPE_BYTES, agent_stdout_pipe

__all__ = ["PIPE_BYTES", "PipeReceiveStream", "PipeSendStream", "agent_stdout_pipe"]

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
        while (data := self.receive_nowait(max_bytes)) is None:
            await anyio.wait_readable(self._fd)  # open: receive_nowait raised otherwise
        return data

    def receive_nowait(self, max_bytes: int = 65536) -> bytes | None:
        """What the pipe holds now, None when it holds nothing (never waits): a read done
        for the reader in another task's step (`JsonRpcPeer`'s pulled reads). Raises as
        `receive` does at the end of the stream."""
        fd = self._fd
        if fd < 0:
            raise anyio.ClosedResourceError
        try:
            data = os.read(fd, max_bytes)
        except BlockingIOError:
            return None
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


class PipeSendStream(ByteSendStream):
    """Writes a pipe made non-blocking here (an adopted agent's stdin: `louise.acp.spawn`):
    what fits at once, the rest once the loop sees it writable."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd

    async def send(self, item: bytes) -> None:
        await anyio.lowlevel.checkpoint()
        view = memoryview(item)
        while view:
            fd = self._fd
            if fd < 0:
                raise anyio.ClosedResourceError
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                await anyio.wait_writable(fd)
                continue
            except OSError as exc:  # the agent closed its end (EPIPE), or it is gone
                raise anyio.BrokenResourceError from exc
            view = view[written:]

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            anyio.notify_closing(fd)  # a write waiting on it ends with ClosedResourceError
            os.close(fd)
