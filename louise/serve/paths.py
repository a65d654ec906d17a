"""Where the session host lives: `state/host/` in louise's private state directory (0700),
with its socket `host.sock`, the lock a front end holds while it starts a host
(`start.lock`: two front ends never start two hosts) and the host's log `host.log`.

A Unix socket's address holds at most about 100 bytes; a deeper state directory (a test's
temporary one) is reached through `/proc/self/fd/N/` of the directory held open
(`short_address`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from louise.storage import paths

HOST_DIR = "host"
SOCKET_NAME = "host.sock"
START_LOCK_NAME = "start.lock"
LOG_NAME = "host.log"
# sun_path is 108 bytes on Linux (104 elsewhere), with its terminating NUL.
MAX_SOCKET_ADDRESS = 100


def host_dir() -> Path:
    """`state/host/`, created private (0700) when missing; `OSError` when it cannot be."""
    return paths.private_state_dir(HOST_DIR)


def socket_path() -> Path:
    return host_dir() / SOCKET_NAME


def start_lock_path() -> Path:
    return host_dir() / START_LOCK_NAME


def log_path() -> Path:
    return host_dir() / LOG_NAME


@contextlib.contextmanager
def short_address(path: Path | str) -> Iterator[str]:
    """An address for `path` a socket can bind or connect to: the path itself when short
    enough, else `/proc/self/fd/N/NAME` through its directory held open for the `with`
    body. `OSError` when the directory cannot be opened."""
    text = os.fspath(path)
    if len(os.fsencode(text)) <= MAX_SOCKET_ADDRESS:
        yield text
        return
    directory, name = os.path.split(text)
    fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        yield f"/proc/self/fd/{fd}/{name}"
    finally:
        os.close(fd)
