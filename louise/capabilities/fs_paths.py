"""Race-free path walking for `fs.py`: a stack of directory handles opened one
component at a time with `O_NOFOLLOW`, symlinks read (not followed by the kernel), and
where a path lands."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

MAX_SYMLINKS = 40  # as the kernel's own limit for one path resolution

# A directory handle for *at() calls only; O_PATH (Linux) needs no read permission on it.
DIR_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)


@dataclass(slots=True)
class Location:
    """Where an agent's path lands: `path` with every symlink resolved and `..` applied.

    `parent_fd` is an open handle on the directory that holds `name` (None when that
    directory does not exist); `name` is "" when the path names a directory itself.
    """

    path: Path
    parent_fd: int | None
    name: str

    def close(self) -> None:
        if self.parent_fd is not None:
            os.close(self.parent_fd)
            self.parent_fd = None


class Refused(Exception):
    """The resolved path is outside every root (the RpcError is built by FileAccess)."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path


class Walk:
    """A stack of open directories from `/` down, and the physical path they stand for."""

    def __init__(self) -> None:
        self.fds = [os.open("/", DIR_FLAGS)]
        self.parts: list[str] = []

    @property
    def fd(self) -> int:
        return self.fds[-1]

    def path(self, *more: str) -> Path:
        return Path("/", *self.parts, *more)

    def down(self, name: str, fd: int) -> None:
        self.fds.append(fd)
        self.parts.append(name)

    def up(self) -> None:
        if self.parts:  # ".." of "/" is "/"
            os.close(self.fds.pop())
            self.parts.pop()

    def to_root(self) -> None:
        while self.parts:
            self.up()

    def take(self) -> int:
        """The current directory's handle, now owned by the caller; the walk is closed."""
        fd = self.fds.pop()
        self.close()
        return fd

    def close(self) -> None:
        while self.fds:
            os.close(self.fds.pop())


def components(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def readlink(dir_fd: int, name: str) -> str | None:
    """The target of `name` when it is a symlink; None when it is something else."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise
