"""Reaching the local session host: connect to its socket, or start it detached and then
connect.

Starting is done under `start.lock` (an flock): of several front ends starting at once,
one starts the host and the others, once they hold the lock, find it listening. The host
runs in its own session (`setsid`: a front end's terminal or process group ending does not
end it), with this very interpreter (`-P`: the current directory stays off the import
path), its stdio on `host.log`. Waiting for its socket is bounded (`start_timeout`); past
`SAY_WAIT_AFTER` seconds the caller is told once what it waits for."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from louise.serve import paths
from louise.storage import durable

START_TIMEOUT = 30.0
STARTED_IDLE_EXIT = 600.0  # a host a front end started ends 10 minutes after its last use
SAY_WAIT_AFTER = 2.0
LOCK_TIMEOUT = START_TIMEOUT + 10.0
LOG_TAIL_BYTES = 2048
_POLL_MIN, _POLL_MAX = 0.01, 0.2


class HostUnreachable(Exception):
    """The host could not be reached or started; the message is one line for a person."""


def connect(socket_path: Path) -> socket.socket | None:
    """A connection to the host listening at `socket_path`, or None when none listens."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with paths.short_address(socket_path) as address:
            sock.connect(address)
    except OSError:
        sock.close()
        return None
    return sock


def host_argv(socket_path: Path, idle_exit_seconds: float | None) -> list[str]:
    """The command that runs a host in the foreground on `socket_path`."""
    argv = [os.path.abspath(sys.executable), "-P", "-m", "louise.cli", "serve",
            "--socket", os.fspath(socket_path)]
    if idle_exit_seconds is not None:
        argv += ["--idle-exit", repr(float(idle_exit_seconds))]
    return argv


def _log_tail(log_path: Path) -> str:
    """The last lines of the host's log, one line (why a host did not start)."""
    with contextlib.suppress(OSError), open(log_path, "rb") as log:
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - LOG_TAIL_BYTES))
        lines = [line.strip() for line in log.read().decode("utf-8", "replace").splitlines()]
        lines = [line for line in lines if line]
        return lines[-1] if lines else ""
    return ""


def _start(argv: Sequence[str], log_path: Path) -> subprocess.Popen[bytes]:
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=log_fd,
                                   stderr=log_fd, close_fds=True, start_new_session=True,
                                   cwd="/")
    except OSError as exc:
        raise HostUnreachable(f"could not start the session host: {exc.strerror or exc}"
                              ) from None
    finally:
        os.close(log_fd)
    # Reaped here when it ends before this front end does (no zombie left behind).
    threading.Thread(target=process.wait, name="louise-host-reaper", daemon=True).start()
    return process


def connect_or_start(
    socket_path: Path | None = None,
    *,
    idle_exit_seconds: float | None = STARTED_IDLE_EXIT,
    start_timeout: float = START_TIMEOUT,
    say: Callable[[str], None] | None = None,
    argv: Sequence[str] | None = None,
) -> socket.socket:
    """A connection to the local host at `socket_path` (default: the state directory's),
    started first when none listens. `say` hears, once, what is being waited for when the
    start takes longer than `SAY_WAIT_AFTER`. `argv` replaces the host's command (tests).
    Raises `HostUnreachable` with one line."""
    try:
        target = socket_path if socket_path is not None else paths.socket_path()
        directory = durable.ensure_private_dir(target.parent)
    except OSError as exc:
        raise HostUnreachable(f"louise's state directory is not usable: {exc}") from None
    sock = connect(target)
    if sock is not None:
        return sock
    try:
        with durable.exclusive_lock(directory / paths.START_LOCK_NAME, timeout=LOCK_TIMEOUT):
            sock = connect(target)  # another front end started it meanwhile
            if sock is not None:
                return sock
            log_path = directory / paths.LOG_NAME
            process = _start(argv or host_argv(target, idle_exit_seconds), log_path)
            return _wait_for(target, process, log_path, start_timeout, say)
    except TimeoutError:
        raise HostUnreachable("another front end is starting the session host and did "
                              f"not finish within {LOCK_TIMEOUT:.0f} s") from None
    except OSError as exc:
        raise HostUnreachable(f"could not start the session host: {exc}") from None


def _wait_for(target: Path, process: subprocess.Popen[bytes], log_path: Path,
              timeout: float, say: Callable[[str], None] | None) -> socket.socket:
    started = time.monotonic()
    said = False
    delay = _POLL_MIN
    while True:
        sock = connect(target)
        if sock is not None:
            return sock
        status = process.poll()
        if status is not None:
            tail = _log_tail(log_path)
            raise HostUnreachable(f"the session host exited at its start (status {status})"
                                  + (f": {tail}" if tail else f"; see {log_path}"))
        waited = time.monotonic() - started
        if waited >= timeout:
            raise HostUnreachable(f"the session host did not listen within {timeout:.0f} s; "
                                  f"see {log_path}")
        if not said and waited >= SAY_WAIT_AFTER and say is not None:
            said = True
            say(f"waiting for the session host to listen on {target} (its log: {log_path})")
        time.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)
