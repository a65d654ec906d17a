"""An agent process as louise spawns it, with the standard library only: what is spawned
(`SpawnSpec`: argv, working directory, the whole environment), its stdout pipe, and a
process spawned before the engine's modules are loaded (`EarlyAgent`), which the
registry adopts when the spec it computes is the same (`AgentProcess.adopt`).

Light on purpose: `python -m louise.nvim` spawns the first chat's agent from here before
it imports anyio, pydantic or the configuration, so the agent's own start overlaps the
engine's (two CPUs). Both paths compute the spec with `spawn_spec`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import subprocess
import threading

TYPE_CHECKING = False  # typing's, without importing typing before the spawn
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

# A paced reader takes what a whole frame interval brought at once; a pipe this size
# (the unprivileged maximum on Linux) keeps a fast agent from blocking on a full pipe
# meanwhile (the default 64 KiB is ~260 60-character chunks).
PIPE_BYTES = 1024 * 1024
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class SpawnSpec:
    """Exactly what is spawned: argv (no shell), working directory (None: louise's own),
    and the whole environment the agent gets. (Not a dataclass: made before dataclasses
    is imported, at the very start of the engine's process.)"""

    __slots__ = ("argv", "cwd", "env")

    def __init__(self, argv: tuple[str, ...], cwd: str | None, env: dict[str, str]) -> None:
        self.argv = argv
        self.cwd = cwd
        self.env = env

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SpawnSpec) and (self.argv, self.cwd, self.env) == (
            other.argv, other.cwd, other.env)

    __hash__ = None  # type: ignore[assignment]  # mutable env: not a key

    def __repr__(self) -> str:
        return f"SpawnSpec(argv={self.argv!r}, cwd={self.cwd!r}, env=<{len(self.env)} names>)"


def spawn_spec(argv: Sequence[str], cwd: str | None, extra_env: Mapping[str, str],
               base_env: Mapping[str, str]) -> SpawnSpec:
    """The spec of an agent: louise's environment with the agent's own settings over it."""
    env = dict(base_env)
    env.update(extra_env)
    return SpawnSpec(tuple(argv), cwd, env)


def agent_stdout_pipe() -> tuple[int, int]:
    """(read end, write end) for an agent's stdout, the read end non-blocking. The write
    end goes to the child (`stdout=`) and must be closed here once it is spawned."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    if os.uname().sysname == "Linux":
        with contextlib.suppress(OSError):  # a lower pipe-max-size: keep the default
            fcntl.fcntl(read_fd, _F_SETPIPE_SZ, PIPE_BYTES)
    return read_fd, write_fd


class EarlyAgent:
    """An agent spawned before louise knew for sure it would be wanted: its own process
    group, stdin and stderr pipes, stdout on `agent_stdout_pipe`. It is taken once
    (`take`), by the first agent start whose spec is equal; anything else stops it
    (`stop`: SIGKILL to its group, then reaped off the caller's thread). Thread-safe: the
    engine's loop takes it, the main thread stops it on the way out."""

    def __init__(self, spec: SpawnSpec, popen: subprocess.Popen[bytes], stdin_fd: int,
                 stdout_fd: int, stderr_fd: int) -> None:
        self.spec = spec
        self.popen = popen  # for its pid and status only: the pipes are the descriptors
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.stderr_fd = stderr_fd
        self._lock = threading.Lock()
        self._state = "waiting"  # then "taken" or "stopped"

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def state(self) -> str:
        return self._state

    def take(self, spec: SpawnSpec) -> EarlyAgent | None:
        """This process for an agent start that would spawn `spec`, when it is exactly what
        was spawned, still running and has written nothing to stdout (an ACP agent speaks
        only when spoken to): then the caller owns its pipes and process. Otherwise it is
        stopped and None returned. Either way it cannot be taken again."""
        with self._lock:
            if self._state != "waiting":
                return None
            if spec == self.spec and self.popen.poll() is None and not self._said_something():
                self._state = "taken"
                return self
        self.stop()
        return None

    def _said_something(self) -> bool:
        """Bytes (or the end) on its stdout already."""
        try:
            readable, _, _ = select.select([self.stdout_fd], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def stop(self) -> None:
        """Kill the process group of an early agent nobody took; close louise's ends."""
        with self._lock:
            if self._state != "waiting":
                return
            self._state = "stopped"
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        for fd in (self.stdin_fd, self.stdout_fd, self.stderr_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.popen.poll() is None:  # reaped off this thread: SIGKILL takes a moment
            threading.Thread(target=self.popen.wait, name="louise-early-reap",
                             daemon=True).start()


def spawn_early(spec: SpawnSpec) -> EarlyAgent | None:
    """Spawn `spec` as `AgentProcess.start` does (no shell, own session and process group,
    stdin and stderr pipes, stdout on louise's pipe); None when it cannot start (the
    engine's own start then says why, as it always did)."""
    if spec.cwd is not None and not os.path.isdir(spec.cwd):
        return None
    read_fd, write_fd = agent_stdout_pipe()
    try:
        popen = subprocess.Popen(spec.argv, stdin=subprocess.PIPE, stdout=write_fd,
                                 stderr=subprocess.PIPE, cwd=spec.cwd, env=dict(spec.env),
                                 start_new_session=True)
    except (OSError, ValueError, subprocess.SubprocessError):
        os.close(read_fd)
        return None
    finally:
        os.close(write_fd)  # the child has its copy: its exit (and its children's) ends ours
    assert popen.stdin is not None and popen.stderr is not None
    # The bare descriptors (the file objects let go of theirs): louise reads and writes
    # them without blocking, as it does its own stdout pipe.
    stdin_fd, stderr_fd = os.dup(popen.stdin.fileno()), os.dup(popen.stderr.fileno())
    popen.stdin.close()
    popen.stderr.close()
    return EarlyAgent(spec, popen, stdin_fd, read_fd, stderr_fd)


def open_pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when `pid` exits, where the OS has them."""
    open_fd = getattr(os, "pidfd_open", None)
    if open_fd is None:
        return None
    try:
        fd: int = open_fd(pid)
    except OSError:  # already reaped, or not allowed: polling the status still works
        return None
    return fd
