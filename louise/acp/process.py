"""An agent subprocess: spawned without a shell in its own process group, stderr always
drained into a bounded ring, shut down politely and then firmly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import Process, TaskStatus

from louise.acp.install_hints import install_hint
from louise.acp.pipes import PipeReceiveStream, agent_stdout_pipe
from louise.acp.spawn import EarlyAgent, SpawnSpec, open_pidfd, spawn_spec

log = logging.getLogger("louise.acp.process")

DEFAULT_STDERR_RING_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class AgentCommand:
    """How to start an agent: argv (no shell), extra environment, working directory."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]

    def display(self) -> str:
        return " ".join([self.command, *self.args])


class StderrRing:
    """The last `max_bytes` of a byte stream, kept in bounded chunks."""

    def __init__(self, max_bytes: int = DEFAULT_STDERR_RING_BYTES) -> None:
        self.max_bytes = max_bytes
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self.total_bytes = 0

    def append(self, data: bytes) -> None:
        self.total_bytes += len(data)
        if len(data) >= self.max_bytes:
            self._chunks.clear()
            data = data[-self.max_bytes :]
            self._size = 0
        self._chunks.append(data)
        self._size += len(data)
        while self._size > self.max_bytes:
            first = self._chunks[0]
            excess = self._size - self.max_bytes
            if len(first) <= excess:
                self._chunks.popleft()
                self._size -= len(first)
            else:
                self._chunks[0] = first[excess:]
                self._size -= excess

    def tail(self, max_chars: int | None = None) -> str:
        text = b"".join(self._chunks).decode("utf-8", "replace")
        if max_chars is not None and len(text) > max_chars:
            text = text[-max_chars:]
        return text


class AgentProcess:
    """A running agent. Use `await task_group.start(proc.run)`; stop with `shutdown`."""

    def __init__(
        self,
        spec: AgentCommand,
        *,
        stderr_ring_bytes: int = DEFAULT_STDERR_RING_BYTES,
        grace_seconds: float = 2.0,
    ) -> None:
        self.spec = spec
        self.stderr = StderrRing(stderr_ring_bytes)
        self.grace_seconds = grace_seconds
        self._process: Process | None = None
        self._stdout: PipeReceiveStream | None = None
        self._exited = anyio.Event()
        self._stderr_done = anyio.Event()
        self._status: int | None = None  # read at its exit: see `exit_status`

    @property
    def process(self) -> Process:
        if self._process is None:
            raise RuntimeError("the agent process has not been started")
        return self._process

    @property
    def stdout(self) -> PipeReceiveStream:
        """The agent's stdout (a pipe louise owns: see `louise.acp.pipes`)."""
        if self._stdout is None:
            raise RuntimeError("the agent process has not been started")
        return self._stdout

    @property
    def started(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def exit_status(self) -> int | None:
        """The status the process exited with (negative: the signal). The one read at the
        exit comes first: asyncio's closed transport may reap the child before its child
        watcher does, which then reports 255 for it."""
        if self._status is not None:
            return self._status
        return self._process.returncode if self._process is not None else None

    def spawn_spec(self) -> SpawnSpec:
        """What `start` spawns: argv, working directory, the whole environment."""
        return spawn_spec(self.spec.argv, self.spec.cwd, self.spec.env, os.environ)

    def adopt(self, early: EarlyAgent) -> bool:
        """Run `early` (spawned before louise's modules were loaded) as this agent's
        process, when it is exactly what `start` would spawn, still running and silent;
        otherwise it is stopped (its group killed) and False returned: `start` then."""
        if self._process is not None:
            raise RuntimeError("the agent process has been started")
        if early.take(self.spawn_spec()) is None:
            return False
        from louise.acp.adopted import AdoptedProcess  # only where an agent was started early

        self._process = AdoptedProcess(early)
        self._stdout = PipeReceiveStream(early.stdout_fd)
        return True

    async def start(self) -> None:
        """Spawn the process (raises OSError with a readable message if it cannot start)."""
        spec = self.spawn_spec()
        cwd = spec.cwd
        if cwd is not None and not Path(cwd).is_dir():
            raise OSError(f"agent working directory does not exist: {cwd}")
        read_fd, write_fd = agent_stdout_pipe()
        try:
            self._process = await anyio.open_process(
                spec.argv,
                stdin=subprocess.PIPE,
                stdout=write_fd,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=spec.env,
                start_new_session=True,  # own process group: we can signal the whole tree
            )
        except FileNotFoundError:
            os.close(read_fd)
            known = install_hint(self.spec.command)
            how = known.text() if known is not None else "install it"
            raise OSError(
                f"agent command not found: {self.spec.command!r}; {how}, or fix `command` "
                "in the agent's config"
            ) from None
        except PermissionError:
            os.close(read_fd)
            raise OSError(f"agent command is not executable: {self.spec.command!r}") from None
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)  # the child has its copy: its exit (and its children's) ends ours
        self._stdout = PipeReceiveStream(read_fd)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start, then drain stderr and wait for exit."""
        if self._process is None:
            await self.start()
        task_status.started()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._drain_stderr)
            await self.wait_exited()
            self._exited.set()

    @property
    def stderr_ended(self) -> bool:
        return self._stderr_done.is_set()

    async def wait_exited(self) -> int:
        """Wait for the process itself to exit; return its status (see `exit_status`)."""
        status = await exit_status(self.process)
        if self._status is None:
            self._status = status
        return self._status

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        try:
            if stream is None:
                return
            while True:
                try:
                    data = await stream.receive(65536)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                self.stderr.append(data)
        finally:
            self._stderr_done.set()

    async def wait_exit(self, timeout: float) -> int | None:
        """Wait up to `timeout` for the process to exit; return its status (or None)."""
        with anyio.move_on_after(timeout):
            await self.wait_exited()
            # Let the stderr drain catch the last words (bounded).
            with anyio.move_on_after(0.5):
                await self._stderr_done.wait()
        return self.exit_status

    def signal_group(self, sig: int) -> None:
        if self._process is None or self.exit_status is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, sig)

    async def shutdown(self, grace: float | None = None, deadline: float | None = None
                       ) -> int | None:
        """Close stdin, wait a grace period (`grace`, else `grace_seconds`: a caller that
        knows the agent has nothing left to finish passes a short one), SIGTERM the group,
        wait `grace_seconds`, then SIGKILL it. With a `deadline` (anyio's clock), the
        waits share what is left until then (half for the agent to go by itself, the rest
        after SIGTERM) and the group is SIGKILLed by the deadline, whatever it does."""
        if self._process is None:
            return None
        stdin = self._process.stdin
        if stdin is not None:
            with contextlib.suppress(Exception):
                await stdin.aclose()
        with anyio.CancelScope(shield=True):
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    self.signal_group(sig)
                wait = grace if sig is None and grace is not None else self.grace_seconds
                if deadline is not None:
                    left = max(0.0, deadline - anyio.current_time())
                    wait = min(wait, left / 2 if sig is None else left)
                if await self.wait_exit(wait) is not None:
                    break
            # The leader may be gone while children of its group linger.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)
            # A child outside the group (a daemon) may still hold the pipes: let go of
            # our ends, which also ends the stderr drain.
            release = self.grace_seconds
            if deadline is not None:
                release = min(release, max(_REAP_AFTER_KILL, deadline - anyio.current_time()))
            with anyio.move_on_after(release), contextlib.suppress(Exception):
                # Its status first: a close cut short kills and polls the child, which
                # takes its status from the child watcher (see `exit_status`).
                await self.wait_exited()
                await self._process.aclose()
            if self._stdout is not None:
                self._stdout.close()
        return self.exit_status

    def kill_group(self) -> None:
        """SIGKILL the agent's process group now (the last resort of a process that exits
        before its loop could finish the shutdown: no agent outlives louise)."""
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)


async def exit_status(process: Process) -> int:
    """Wait for `process` itself to exit; return its status.

    Not `Process.wait()`: on asyncio that also waits for the pipes to close (the stdlib's,
    and anyio's in releases this project allows), and a child that inherited stdout or
    stderr keeps them open after the agent is gone, for ever if a daemon."""
    if process.returncode is None:
        pidfd = open_pidfd(process.pid)
        try:
            if pidfd is not None and process.returncode is None:
                await anyio.wait_readable(pidfd)  # readable once the process exits
                status = unreaped_status(process.pid)
                if status is not None:
                    return status
            while process.returncode is None:  # until the child watcher reaps it
                await anyio.sleep(_REAP_POLL if pidfd is not None else _EXIT_POLL)
        finally:
            if pidfd is not None:
                os.close(pidfd)
    status = process.returncode
    assert status is not None
    return status


def unreaped_status(pid: int) -> int | None:
    """The status of the child `pid` if it has exited and is not reaped yet, read without
    reaping it (the child watcher still does); None otherwise."""
    wait_id = getattr(os, "waitid", None)  # not on every Unix
    if wait_id is None:
        return None
    try:
        info = wait_id(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except OSError:  # reaped already: the child watcher has the status
        return None
    if info is None:
        return None
    status: int = info.si_status
    return status if info.si_code == os.CLD_EXITED else -status


_REAP_AFTER_KILL = 0.05  # past a shutdown's deadline: reaping a SIGKILLed process
_REAP_POLL = 0.005  # after the pidfd fired: the child watcher sets the status in a moment
_EXIT_POLL = 0.1  # without pidfd (not Linux, or a kernel before 5.3)
