"""The ACP proxy's driver: the agent subprocess, two line pumps, and shutdown.

The agent runs without a shell, with the proxy's own stderr (so whatever the client does
with the proxy's stderr it does with the agent's). Lines are bounded: one longer than
`max_line_bytes` is dropped, with a warning on stderr, and answered (see
`ProxyCore.dropped_from_client`). A line the core fails on (a bug: it must not) is
forwarded as it came, with a warning: the proxy keeps running. Each pump awaits its
writes, so a slow reader slows the writer instead of filling memory. When the client
closes the proxy's input, the agent's input is closed and the agent gets `grace_seconds`
to exit before it is terminated, then killed; when the agent's output ends, the proxy
ends with its exit status.
An agent that exits while a child of its still holds its stdout open ends the proxy too:
its output is read until it is quiet, then its process group is stopped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from louise.acp.framing import DEFAULT_MAX_LINE_BYTES, LineDecoder, OversizedLine
from louise.acp.process import exit_status
from louise.proxy.core import ProxyCore, Routed

log = logging.getLogger("louise.proxy")

READ_CHUNK = 256 * 1024
_QUIET_SECONDS = 0.05  # after the agent exits: its output is read once this long quiet


class _Writer:
    """Whole lines to one stream; two pumps may write to the same side, never interleaved."""

    def __init__(self, stream: ByteSendStream) -> None:
        self.stream = stream
        self.lock = anyio.Lock()
        self.broken = False

    async def write(self, lines: list[bytes]) -> None:
        if not lines or self.broken:
            return
        data = b"".join(line + b"\n" for line in lines)
        async with self.lock:
            try:
                await self.stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self.broken = True


@dataclass(frozen=True, slots=True)
class _Side:
    """One side's lines through the core: `route` for a line, `dropped` for one over the
    limit, `forward` for a line passed on untouched."""

    name: str
    route: Callable[[bytes, float], Routed]
    dropped: Callable[[int, bytes, int], Routed]
    forward: Callable[[bytes], Routed]


def _routed(side: _Side, item: bytes | OversizedLine, max_line_bytes: int,
            clock: Callable[[], float]) -> Routed:
    try:
        if isinstance(item, OversizedLine):
            return side.dropped(item.size, item.head, max_line_bytes)
        return side.route(item, clock())
    except Exception as exc:  # the core must not fail; if it does, the line still goes
        log.warning("%s: internal error on a line (%s: %.200s); passed it on unread",
                    side.name, type(exc).__name__, exc)
        return Routed() if isinstance(item, OversizedLine) else side.forward(item)


async def _pump(
    source: ByteReceiveStream,
    side: _Side,
    to_agent: _Writer,
    to_client: _Writer,
    max_line_bytes: int,
    clock: Callable[[], float],
    received: list[int] | None = None,
) -> None:
    decoder = LineDecoder(max_line_bytes)
    while True:
        try:
            data = await source.receive(READ_CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            items = decoder.finish()
            end = True
        else:
            if received is not None:
                received[0] += len(data)
            items = decoder.feed(data)
            end = False
        for item in items:
            routed = _routed(side, item, max_line_bytes, clock)
            await to_agent.write(routed.to_agent)
            await to_client.write(routed.to_client)
        if end:
            return


async def _stop(process: Process, grace_seconds: float) -> None:
    with anyio.CancelScope(shield=True):
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                await process.stdin.aclose()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
            with anyio.move_on_after(grace_seconds):
                await exit_status(process)
            if process.returncode is not None:
                return


async def run_proxy(
    argv: Sequence[str],
    client_in: ByteReceiveStream,
    client_out: ByteSendStream,
    *,
    env: Mapping[str, str] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    grace_seconds: float = 2.0,
    clock: Callable[[], float] = time.time,
    core: ProxyCore | None = None,
) -> int:
    """Run one agent behind the proxy until it exits; return its exit status.

    Raises `OSError` with a readable message when the agent cannot be started."""
    proxy = core or ProxyCore()
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # the proxy's own stderr
            env={**os.environ, **(env or {})},
            start_new_session=True,  # its own process group: stop the whole tree
        )
    except FileNotFoundError:
        raise OSError(f"agent command not found: {argv[0]!r}") from None
    except PermissionError:
        raise OSError(f"agent command is not executable: {argv[0]!r}") from None
    assert process.stdin is not None and process.stdout is not None
    to_agent = _Writer(process.stdin)
    to_client = _Writer(client_out)
    try:
        async with anyio.create_task_group() as tg:

            client = _Side("client", proxy.from_client, proxy.dropped_from_client,
                           lambda line: Routed(to_agent=[line]))
            agent = _Side("agent", proxy.from_agent, proxy.dropped_from_agent,
                          lambda line: Routed(to_client=[line]))

            async def client_side() -> None:
                await _pump(client_in, client, to_agent, to_client, max_line_bytes, clock)
                # The client is gone: the agent gets its end-of-input, then a grace period.
                await _stop(process, grace_seconds)

            received = [0]

            async def agent_exited() -> None:
                await exit_status(process)
                # A child of the agent may hold its stdout open, so the end of its output
                # may never come: forward what it wrote until quiet, then stop its group.
                with anyio.move_on_after(grace_seconds):
                    while True:
                        seen = received[0]
                        await anyio.sleep(_QUIET_SECONDS)
                        if received[0] == seen:
                            break
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                tg.cancel_scope.cancel()

            tg.start_soon(client_side)
            tg.start_soon(agent_exited)
            await _pump(process.stdout, agent, to_agent, to_client, max_line_bytes, clock,
                        received)
            tg.cancel_scope.cancel()
    finally:
        await _stop(process, grace_seconds)
        # Our end of its pipes, which a child of the agent may still hold: closed here,
        # not by the garbage collector after the event loop is gone.
        with anyio.CancelScope(shield=True), anyio.move_on_after(grace_seconds):
            await process.aclose()
    status = process.returncode
    return 1 if status is None else status


class FdReceiveStream(ByteReceiveStream):
    """Reads a file descriptor once the event loop sees it readable; a read returns whatever
    is available (unlike a buffered file's `read(n)`, which waits for `n` bytes).

    Not a worker thread: one blocked in `read` cannot be cancelled, and the interpreter
    waits for it at exit, so a proxy whose agent has gone would stay until its client
    wrote again. A regular file cannot be polled, and reading it never waits."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._pollable = True

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._pollable:
            try:
                await anyio.wait_readable(self.fd)
            except OSError:  # a regular file (epoll refuses it)
                self._pollable = False
        try:
            data = os.read(self.fd, max_bytes)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        return None


class FdSendStream(ByteSendStream):
    """Writes a file descriptor in a worker thread, all of each item."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def send(self, item: bytes) -> None:
        def write_all() -> None:
            view = memoryview(item)
            while view:
                view = view[os.write(self.fd, view):]

        try:
            await anyio.to_thread.run_sync(write_all)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        return None


def main_streams() -> tuple[ByteReceiveStream, ByteSendStream]:
    """The proxy's stdin and stdout as anyio byte streams."""
    return FdReceiveStream(sys.stdin.fileno()), FdSendStream(sys.stdout.fileno())
