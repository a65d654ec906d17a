"""The agent's stdout pipe louise owns (louise/acp/pipes.py), with real pipes."""

from __future__ import annotations

import fcntl
import os

import anyio
import pytest

from louise.acp.pipes import PIPE_BYTES, PipeReceiveStream, agent_stdout_pipe

pytestmark = pytest.mark.anyio

F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)


async def test_reads_what_is_there_then_waits_then_ends_at_eof() -> None:
    read_fd, write_fd = agent_stdout_pipe()
    stream = PipeReceiveStream(read_fd)
    try:
        os.write(write_fd, b"one\n")
        assert await stream.receive() == b"one\n"
        async with anyio.create_task_group() as tg:
            got: list[bytes] = []

            async def read() -> None:
                got.append(await stream.receive())

            tg.start_soon(read)
            # Waiting, not spinning on an empty pipe (a spinning read is never blocked).
            await anyio.wait_all_tasks_blocked()
            assert got == []
            os.write(write_fd, b"two\n")
        assert got == [b"two\n"]
        os.close(write_fd)
        write_fd = -1
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
    finally:
        if write_fd >= 0:
            os.close(write_fd)
        await stream.aclose()


async def test_closing_ends_a_waiting_read_and_later_ones() -> None:
    read_fd, write_fd = agent_stdout_pipe()
    stream = PipeReceiveStream(read_fd)
    try:
        errors: list[BaseException] = []

        async def read() -> None:
            try:
                await stream.receive()
            except anyio.ClosedResourceError as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.wait_all_tasks_blocked()  # the read waits on the empty pipe
            stream.close()
        assert len(errors) == 1
        with pytest.raises(anyio.ClosedResourceError):
            await stream.receive()
    finally:
        os.close(write_fd)


async def test_the_pipe_holds_a_frame_of_a_fast_agent() -> None:
    read_fd, write_fd = agent_stdout_pipe()
    try:
        assert not os.get_blocking(read_fd)
        if os.uname().sysname == "Linux":
            with open("/proc/sys/fs/pipe-max-size") as limit:
                expected = min(PIPE_BYTES, int(limit.read()))
            assert fcntl.fcntl(read_fd, F_GETPIPE_SZ) >= expected
    finally:
        os.close(read_fd)
        os.close(write_fd)
