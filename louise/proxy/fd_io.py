"""Blocking reads and writes of a descriptor for the byte pumps: the proxy's
(`louise/proxy/run.py`) and the session host's pipe (`louise/serve/pipe.py`). No imports
beyond the standard library's, so `louise attach` starts light."""

from __future__ import annotations

import os
import select

# Under glibc's mmap threshold (128 KiB): a larger read buffer is mapped and unmapped on
# every read, three system calls and a TLB shootdown a message at a paced rate.
READ_CHUNK = 64 * 1024


def read_some(fd: int) -> bytes:
    """Whatever `fd` holds (up to READ_CHUNK), waiting for some; b"" at its end or on an
    error (the proxy's pumps and the session host's pipe, `louise/serve/pipe.py`)."""
    while True:
        try:
            return os.read(fd, READ_CHUNK)
        except BlockingIOError:  # a descriptor its giver left non-blocking
            select.select([fd], [], [])
        except OSError:
            return b""


def write_all(fd: int, data: bytes) -> bool:
    """All of `data` to `fd`, waiting for room; False when its reader is gone."""
    try:
        _write_all(fd, data)
    except OSError:
        return False
    return True


def _write_all(fd: int, data: bytes) -> None:
    try:
        written = os.write(fd, data)  # mostly all of it: no view to make
    except BlockingIOError:
        written = 0
    if written == len(data):
        return
    view = memoryview(data)[written:]
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            select.select([], [fd], [])
