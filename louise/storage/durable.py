"""Durable-file helpers shared by everything louise persists (limits, permissions, …).

- `atomic_write_bytes` / `atomic_write_json`: readers see either the old file or the new
  one, never a partial write, even across a crash: a temporary file in the same directory
  is written and fsynced, renamed over the target, and the directory is fsynced so the
  rename itself is durable.
- `exclusive_lock`: a cross-process (and cross-thread) exclusive lock held on a *sidecar*
  lock file, so the data file can keep being replaced atomically while the lock stays on a
  stable inode. Use it around read-modify-write cycles; plain readers need no lock.
- `open_private_append`, `ensure_private_dir`, `make_private`: louise's files are private
  to the person (0600 files, 0700 directories), including files appended to and files an
  older louise left with looser modes.

POSIX uses `fcntl.flock` (per open file description, so two threads of one process
exclude each other too, and the kernel releases it if the process dies). Windows falls back
to `msvcrt.locking` on the first byte of the lock file. Lock files are never deleted:
deleting one while another process waits on it would let two holders in at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
from collections.abc import Iterator

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    import threading
    from pathlib import Path
    from typing import Any, TextIO

_POLL_MIN = 0.002
_POLL_MAX = 0.05

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def make_private(path: Path | str, *, directory: bool) -> bool:
    """Tighten an existing file (to 0600) or directory (to 0700) of this user's.

    Only removes permission bits, never adds any; never follows a symlink; leaves alone
    what is missing, of the other type, owned by someone else, or a shared (sticky)
    directory. Returns whether the mode was changed.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if directory:
        flags |= os.O_DIRECTORY
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        kind_ok = stat.S_ISDIR(info.st_mode) if directory else stat.S_ISREG(info.st_mode)
        ours = not hasattr(os, "getuid") or info.st_uid == os.getuid()
        mode = stat.S_IMODE(info.st_mode)
        if not kind_ok or not ours or mode & stat.S_ISVTX:
            return False
        private = mode & (PRIVATE_DIR_MODE if directory else PRIVATE_FILE_MODE)
        if private == mode:
            return False
        os.fchmod(fd, private)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def ensure_private_dir(path: Path | str) -> Path:
    """`path` as a private directory: created 0700 when missing (missing parents get the
    usual modes, as with `mkdir -p`), tightened to 0700 when it is this user's."""
    from pathlib import Path  # on use: a reader's start (louise inspect) is without it
    directory = Path(path)
    directory.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    make_private(directory, directory=True)
    return directory


def open_private_append(path: Path | str) -> TextIO:
    """Open `path` to append UTF-8 text (e.g. a transcript's JSON lines), creating it 0600
    and its directory 0700; an existing file with looser modes is tightened. A symlink in
    its place is refused (`OSError`), not followed."""
    from pathlib import Path  # on use: a reader's start (louise inspect) is without it
    target = Path(path)
    if not target.parent.is_dir():
        ensure_private_dir(target.parent)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(target, flags, PRIVATE_FILE_MODE)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{target} is not a regular file")
        mode = stat.S_IMODE(info.st_mode)
        if mode & ~PRIVATE_FILE_MODE:
            os.fchmod(fd, mode & PRIVATE_FILE_MODE)
        return os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def fsync_directory(directory: Path | str) -> None:
    """Make a rename or creation inside `directory` durable (a no-op where unsupported)."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path | str, data: bytes, *, mode: int = 0o600) -> None:
    """Replace `path` with `data` atomically and durably; missing parent dirs are created
    (0o700: louise's files are private by default). The file gets permission bits `mode`."""
    from pathlib import Path  # on use: a reader's start (louise inspect) is without it
    target = Path(path)
    directory = target.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    import tempfile  # here: a reader (`louise inspect`) never pays for it

    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    fsync_directory(directory)


def dump_json(value: Any, *, indent: int | None = None) -> bytes:
    """Strict JSON bytes (UTF-8, no NaN/Infinity, sorted keys, final newline)."""
    text = json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def atomic_write_json(
    path: Path | str, value: Any, *, mode: int = 0o600, indent: int | None = None
) -> None:
    """`atomic_write_bytes` of `dump_json(value)`; a value JSON cannot represent raises
    `ValueError`/`TypeError` before anything is written."""
    atomic_write_bytes(path, dump_json(value, indent=indent), mode=mode)


def lock_path_for(path: Path | str) -> Path:
    """The sidecar lock file guarding `path`: `<name>.lock` next to it."""
    from pathlib import Path  # on use: a reader's start (louise inspect) is without it
    target = Path(path)
    return target.with_name(target.name + ".lock")


if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _lock_blocking(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class LockAbandoned(TimeoutError):
    """A wait for a lock given up on request (`give_up`), before the lock was taken."""


@contextlib.contextmanager
def exclusive_lock(lock_path: Path | str, *, timeout: float | None = None,
                   give_up: threading.Event | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` (created if missing) for the `with` body.

    `timeout=None` waits as long as needed; otherwise `TimeoutError` after `timeout` seconds.
    `give_up`: once set, a wait for the lock stops at once with `LockAbandoned` (a lock
    already taken is kept until the body ends).
    """
    from pathlib import Path  # on use: a reader's start (louise inspect) is without it
    path = Path(lock_path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if timeout is None and give_up is None and sys.platform != "win32":
            _lock_blocking(fd)
        else:
            deadline = None if timeout is None else time.monotonic() + timeout
            delay = _POLL_MIN
            while not _try_lock(fd):
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"could not lock {path} within {timeout} s")
                if give_up is None:
                    time.sleep(delay)
                elif give_up.wait(delay):
                    raise LockAbandoned(f"gave up waiting for the lock {path}")
                delay = min(delay * 2, _POLL_MAX)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(path: Path | str, *, timeout: float | None = None,
           give_up: threading.Event | None = None) -> Iterator[None]:
    """`exclusive_lock` on the sidecar lock file of the data file `path`."""
    with exclusive_lock(lock_path_for(path), timeout=timeout, give_up=give_up):
        yield
