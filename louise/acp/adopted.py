"""An agent process louise adopted (`louise.acp.spawn.EarlyAgent`: spawned before the
engine's modules were loaded) as an anyio `Process`, so that `AgentProcess` runs it
exactly as one it spawned with `anyio.open_process`: the same stdin writes, stderr reads,
exit status (on the pidfd, `process.exit_status`), signals and close."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from louise.acp.pipes import PipeReceiveStream, PipeSendStream
from louise.acp.spawn import EarlyAgent, open_pidfd

_EXIT_POLL = 0.1  # without pidfd (not Linux, or a kernel before 5.3)
_REAP_POLL = 0.005  # after the pidfd fired: the status is there in a moment


class AdoptedProcess(Process):
    """The process of an `EarlyAgent` that was taken. Its status is reaped here (no child
    watcher knows it), through the `Popen` that spawned it."""

    def __init__(self, early: EarlyAgent) -> None:
        self._popen: subprocess.Popen[bytes] = early.popen
        self._stdin = PipeSendStream(early.stdin_fd)
        os.set_blocking(early.stderr_fd, False)
        self._stderr = PipeReceiveStream(early.stderr_fd)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once it exited (negative: the signal), as asyncio gives it."""
        return self._popen.poll()

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return None  # louise's own pipe: `AgentProcess.stdout`

    @property
    def stderr(self) -> ByteReceiveStream:
        return self._stderr

    async def wait(self) -> int:
        """Wait for the process itself to exit (not for its pipes to close)."""
        pidfd = open_pidfd(self._popen.pid)
        try:
            if pidfd is not None and self._popen.poll() is None:
                await anyio.wait_readable(pidfd)  # readable once the process exits
            while (status := self._popen.poll()) is None:
                await anyio.sleep(_REAP_POLL if pidfd is not None else _EXIT_POLL)
        finally:
            if pidfd is not None:
                os.close(pidfd)
        return status

    def send_signal(self, sig: signal.Signals) -> None:
        if self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._popen.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def aclose(self) -> None:
        """As anyio's: close the pipes, then wait for the process."""
        await self._stdin.aclose()
        await self._stderr.aclose()
        await self.wait()
