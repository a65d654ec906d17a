"""Files of a workspace as the checkpoint store reads and restores them, and the store's
own content-addressed blobs.

A workspace is hostile: a path is walked from the workspace one component at a time
without following a symlink (a directory swapped for a link to elsewhere is refused, not
followed), a file is replaced by a rename within its directory (a reader sees the old or
the new file, never half of one), and a symlink is read and restored as a link, never
followed. Reads are bounded.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from louise.storage import durable

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK

Kind = Literal["file", "link", "absent", "other"]


class OutsideWorkspace(OSError):
    """A path that would leave the workspace (through `..` or a symlinked directory)."""


@dataclass(frozen=True, slots=True)
class OnDisk:
    """A workspace file as it is now: its kind, content (a link's target for a link;
    None when absent, other, or over the size asked for), mode bits, size and mtime."""

    kind: Kind
    data: bytes | None = None
    mode: int = 0o644
    size: int = 0
    mtime_ns: int = 0


def parts_of(relative: str) -> list[str]:
    """The components of a workspace-relative path; `..` or an absolute path is refused."""
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if not parts or relative.startswith("/") or ".." in parts:
        raise OutsideWorkspace(errno.EPERM, "not inside the workspace", relative)
    return parts


@contextlib.contextmanager
def _parent(workspace: Path, parts: list[str], create: bool) -> Iterator[int | None]:
    """An open handle on the directory holding the last part (None: it does not exist
    and `create` is False); intermediate links are refused."""
    fd = os.open(workspace, DIR_FLAGS)
    try:
        for name in parts[:-1]:
            try:
                inner = os.open(name, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    fd = -1
                    yield None
                    return
                os.mkdir(name, 0o755, dir_fd=fd)
                inner = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OutsideWorkspace(errno.ELOOP, "a link or a file stands where a "
                                           "directory should be", "/".join(parts)) from None
                raise
            os.close(fd)
            fd = inner
        yield fd
    finally:
        if fd >= 0:
            os.close(fd)


def read(workspace: Path, relative: str, max_bytes: int) -> OnDisk:
    """The file at `relative` now (its data only when it holds at most `max_bytes`)."""
    parts = parts_of(relative)
    try:
        with _parent(workspace, parts, create=False) as parent:
            if parent is None:
                return OnDisk("absent")
            name = parts[-1]
            try:
                info = os.lstat(name, dir_fd=parent)
            except FileNotFoundError:
                return OnDisk("absent")
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                target = os.readlink(name, dir_fd=parent).encode("utf-8", "surrogateescape")
                return OnDisk("link", target, 0o777, len(target), info.st_mtime_ns)
            if not stat.S_ISREG(info.st_mode):
                return OnDisk("other", None, mode, info.st_size, info.st_mtime_ns)
            if info.st_size > max_bytes:
                return OnDisk("file", None, mode, info.st_size, info.st_mtime_ns)
            fd = os.open(name, READ_FLAGS, dir_fd=parent)
            try:
                chunks, total = [], 0
                while chunk := os.read(fd, 1 << 20):
                    chunks.append(chunk)
                    total += len(chunk)
                    if total > max_bytes:
                        return OnDisk("file", None, mode, total, info.st_mtime_ns)
            finally:
                os.close(fd)
            return OnDisk("file", b"".join(chunks), mode, total, info.st_mtime_ns)
    except OutsideWorkspace:
        return OnDisk("other")


def write(workspace: Path, relative: str, data: bytes, *, mode: int = 0o644,
          link: bool = False) -> None:
    """Put `data` at `relative` (a file with `mode`, or a symlink to `data`), replacing
    what is there in one rename; missing directories are created."""
    parts = parts_of(relative)
    with _parent(workspace, parts, create=True) as parent:
        assert parent is not None
        name = parts[-1]
        temp = f".{name}.louise-{os.getpid()}-{os.urandom(4).hex()}"
        if link:
            os.symlink(data.decode("utf-8", "surrogateescape"), temp, dir_fd=parent)
        else:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600, dir_fd=parent)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fchmod(fd, mode & 0o7777)
            except BaseException:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=parent)
                raise
            os.close(fd)
        try:
            os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise


def remove(workspace: Path, relative: str) -> None:
    """Remove the file or link at `relative` (nothing when it is already gone)."""
    parts = parts_of(relative)
    with _parent(workspace, parts, create=False) as parent:
        if parent is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=parent)


def relative_to(workspace: Path, path: str) -> str | None:
    """A path an agent named, relative to the workspace (posix), or None when it is
    outside it. Only the text is looked at (the store walks it safely later)."""
    absolute = os.path.normpath(os.path.join(str(workspace), os.path.expanduser(path)))
    try:
        inside = os.path.relpath(absolute, str(workspace))
    except ValueError:
        return None
    if inside == "." or inside.startswith(".." + os.sep) or inside == "..":
        return None
    return inside.replace(os.sep, "/")


# ------------------------------------------------------------------ blobs


class Blobs:
    """Content-addressed copies (sha256) under one directory, private; written once."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        import hashlib  # OpenSSL's sha256 for file contents (~5x Python's); not at start

        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if not path.exists():
            durable.ensure_private_dir(path.parent)
            durable.atomic_write_bytes(path, data)
        return digest

    def get(self, digest: str) -> bytes | None:
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            return None
        try:
            return self._path(digest).read_bytes()
        except OSError:
            return None

    def keep_only(self, wanted: set[str]) -> None:
        """Remove every blob not in `wanted` (after turns were pruned)."""
        if not self.root.is_dir():
            return
        for folder in self.root.iterdir():
            if not folder.is_dir() or folder.is_symlink():
                continue
            for blob in folder.iterdir():
                if folder.name + blob.name not in wanted:
                    with contextlib.suppress(OSError):
                        blob.unlink()


def tree_bytes(root: Path) -> int:
    """Bytes of every file under `root` (the store's size on disk, roughly)."""
    total = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(Path(entry.path))
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        continue
        except OSError:
            continue
    return total
