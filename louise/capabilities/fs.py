"""The client's file system capability without an editor: `fs/read_text_file`, `fs/write_text_file`.

`FileAccess` serves one session: every path must be absolute and, once symlinks are
resolved, lie under one of the session's roots (its cwd plus configured extra roots),
unless the `outside_roots_allowed` hook (a permission rule) says yes for that resolved
path. Reads honour `line` (1-based) and `limit` (a number of lines) and keep line endings;
a missing file is `-32002`. Writes create missing directories and replace the file
atomically, keeping its mode.

Paths are resolved without a race: every component is opened relative to the directory
opened before it, with `O_NOFOLLOW`, so the kernel never follows a symlink on louise's
behalf. A symlink met on the way is read and its target walked the same way, so links
work (inside a root, or to another root) while a directory swapped for a link between
two steps is seen as a link and judged by where it points. The file is then opened or
atomically replaced relative to the directory that was checked, never by path again.
The Neovim layer reuses `check_path` (and `slice_lines`) for buffer reads and writes.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread

from louise.acp.errors import INTERNAL_ERROR, RESOURCE_NOT_FOUND, RpcError
from louise.capabilities.fs_paths import (
    DIR_FLAGS,
    MAX_SYMLINKS,
    Location,
    Refused,
    Walk,
    components,
    readlink,
)

__all__ = [
    "DEFAULT_MAX_READ_BYTES",
    "FileAccess",
    "OutsideRootsHook",
    "slice_lines",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_READ_BYTES = 16 * 1024 * 1024
_OPEN_ATTEMPTS = 3  # a final component swapped for a link while it was opened: walk again

OutsideRootsHook = Callable[[Path], bool]
"""Called with the resolved path of a request outside every root; True allows it."""


def slice_lines(text: str, line: int | None = None, limit: int | None = None) -> str:
    """Lines `line`.. (1-based) of `text`, at most `limit` of them, line endings kept.

    Lines end at "\\n" only (a "\\r\\n" ending stays whole in its line). A start past the
    last line gives "". Work is bounded by the number of lines, whatever the numbers.
    """
    if line is None and limit is None:
        return text
    start = 0
    for _ in range((line or 1) - 1):
        newline = text.find("\n", start)
        if newline < 0:
            return ""
        start = newline + 1
    if limit is None:
        return text[start:]
    end = start
    for _ in range(limit):
        newline = text.find("\n", end)
        if newline < 0:
            return text[start:]
        end = newline + 1
    return text[start:end]


class FileAccess:
    """Disk-backed `fs/read_text_file` and `fs/write_text_file` confined to roots.

    `roots` are absolute directories (the session cwd first, then configured extra
    roots); they are resolved once here so a root that is itself a symlink still works.
    """

    def __init__(
        self,
        roots: Iterable[str | os.PathLike[str]],
        *,
        outside_roots_allowed: OutsideRootsHook | None = None,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
    ) -> None:
        resolved: list[Path] = []
        for root in roots:
            path = Path(root).expanduser()
            if not path.is_absolute():
                raise ValueError(f"file access root must be an absolute path, got {str(root)!r}")
            real = Path(os.path.realpath(path))
            if real not in resolved:
                resolved.append(real)
        if max_read_bytes < 0:
            raise ValueError("max_read_bytes must be >= 0")
        self._roots = tuple(resolved)
        self._outside_roots_allowed = outside_roots_allowed
        self._max_read_bytes = max_read_bytes

    @property
    def roots(self) -> tuple[Path, ...]:
        """The allowed roots, resolved."""
        return self._roots

    @property
    def max_read_bytes(self) -> int:
        return self._max_read_bytes

    # -- confinement -------------------------------------------------------------------

    def check_path(self, raw_path: object) -> Path:
        """Validate an agent-given path and return it resolved; raise `RpcError` if refused.

        Blocking (it reads the file system): call it from a worker thread. The result is
        where the path lands now; reads and writes here do not trust it later, they walk
        again and open relative to the directory they checked.
        """
        location = self._locate(raw_path, make_dirs=False)
        location.close()
        return location.path

    def _allowed(self, path: Path) -> bool:
        return self._inside_roots(path) or self._hook_allows(path)

    def _inside_roots(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self._roots)

    def _hook_allows(self, path: Path) -> bool:
        if self._outside_roots_allowed is None:
            return False
        try:
            return bool(self._outside_roots_allowed(path))
        except Exception:
            # A failing rule must never widen access: fail closed.
            log.exception("outside_roots_allowed hook failed for %s; refusing", path)
            return False

    def _refusal(self, raw_path: str, resolved: Path) -> RpcError:
        where = ""
        if str(resolved) != os.path.normpath(raw_path):
            where = f" (it resolves to {resolved})"
        roots = ", ".join(str(root) for root in self._roots) or "none"
        return RpcError.invalid_params(
            f"{raw_path} is outside the directories this session may access{where}; "
            f"allowed roots: {roots}. To allow it, add its directory to fs.roots in louise's "
            "config ([fs] roots, or [agents.NAME.fs] roots for one agent)"
        )

    def _locate(self, raw_path: object, *, make_dirs: bool) -> Location:
        """Resolve an agent's path (see the module docstring) and check it is allowed.

        With `make_dirs`, missing directories are created, once the path they lead to is
        known to be allowed. Every refusal or failure is an `RpcError`; the caller owns
        the returned location's handle.
        """
        if not isinstance(raw_path, str) or not raw_path:
            raise RpcError.invalid_params("path must be a non-empty string")
        if "\x00" in raw_path:
            raise RpcError.invalid_params("path must not contain NUL characters")
        if not os.path.isabs(raw_path):
            raise RpcError.invalid_params(f"path must be absolute, got {raw_path!r}")
        try:
            return self._walk(raw_path, make_dirs=make_dirs)
        except Refused as refused:
            raise self._refusal(raw_path, refused.path) from None
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise _not_found(Path(os.path.normpath(raw_path))) from exc
            # Whatever stops the resolution (a loop, a file used as a directory, no
            # permission) is a refusal the agent can read, not an internal error.
            reason = "too many levels of symbolic links, or a link that changed while " \
                "being followed" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            raise RpcError.invalid_params(f"cannot resolve {raw_path}: {reason}") from exc

    def _walk(self, raw_path: str, *, make_dirs: bool) -> Location:
        walk = Walk()
        try:
            pending = components(raw_path)
            hops = 0
            while pending:
                name = pending.pop(0)
                if name == "..":
                    walk.up()
                    continue
                if not pending:  # the last component: resolved if a link, never opened
                    link = readlink(walk.fd, name)
                    if link is None:
                        return self._found(walk, name)
                else:
                    try:
                        fd = os.open(name, DIR_FLAGS, dir_fd=walk.fd)
                    except FileNotFoundError:
                        return self._missing(walk, [name, *pending], make_dirs)
                    except OSError as exc:
                        link = readlink(walk.fd, name) if exc.errno in (
                            errno.ELOOP, errno.ENOTDIR) else None
                        if link is None:
                            raise
                    else:
                        walk.down(name, fd)
                        continue
                hops += 1
                if hops > MAX_SYMLINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
                if link.startswith("/"):
                    walk.to_root()
                pending = components(link) + pending
            return self._found(walk, "")
        except BaseException:
            walk.close()
            raise

    def _found(self, walk: Walk, name: str) -> Location:
        path = walk.path(name) if name else walk.path()
        if not self._allowed(path):
            raise Refused(path)
        return Location(path, walk.take(), name)

    def _missing(self, walk: Walk, rest: list[str], make_dirs: bool) -> Location:
        """The walk reached a directory that does not exist: nothing below it can be a
        link, so the rest of the path is applied as written (".." included)."""
        new: list[str] = []
        for name in rest:
            if name != "..":
                new.append(name)
            elif new:
                new.pop()
            else:
                walk.up()
        if not new:  # e.g. /ws/missing/..: an existing directory after all
            return self._found(walk, "")
        path = walk.path(*new)
        if not self._allowed(path):
            raise Refused(path)
        if not make_dirs:
            walk.close()
            return Location(path, None, new[-1])
        for name in new[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=walk.fd)
            # If something else took the name meanwhile (a link), this open refuses it.
            walk.down(name, os.open(name, DIR_FLAGS, dir_fd=walk.fd))
        return Location(path, walk.take(), new[-1])

    # -- fs/read_text_file -------------------------------------------------------------

    async def read_text_file(self, params: Mapping[str, Any]) -> dict[str, Any]:
        line = optional_count(params, "line", minimum=1)
        limit = optional_count(params, "limit", minimum=0)
        raw_path = params.get("path")
        text = await anyio.to_thread.run_sync(self._read_blocking, raw_path)
        return {"content": slice_lines(text, line, limit)}

    def _read_blocking(self, raw_path: object) -> str:
        data, path = self._read_bytes(raw_path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RpcError.invalid_params(
                f"{path} is not UTF-8 text (invalid byte at offset {exc.start})"
            ) from exc

    def _read_bytes(self, raw_path: object) -> tuple[bytes, Path]:
        for _ in range(_OPEN_ATTEMPTS):
            location = self._locate(raw_path, make_dirs=False)
            try:
                path = location.path
                if location.parent_fd is None:
                    raise _not_found(path)
                if not location.name:
                    raise RpcError.invalid_params(f"{path} is a directory, not a text file")
                try:
                    # O_NONBLOCK so a FIFO cannot hang the open; O_NOFOLLOW: the name was
                    # not a link when resolved, and is not followed if it became one.
                    fd = os.open(location.name,
                                 os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC,
                                 dir_fd=location.parent_fd)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        continue  # swapped for a link meanwhile: resolve it again
                    raise _os_error(exc, "read", path) from exc
            finally:
                location.close()
            try:
                return self._read_fd(fd, path), path
            finally:
                os.close(fd)
        raise RpcError.invalid_params(f"{raw_path} kept changing while being opened")

    def _read_fd(self, fd: int, path: Path) -> bytes:
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise RpcError.invalid_params(f"{path} is a directory, not a text file")
            if not stat.S_ISREG(info.st_mode):
                raise RpcError.invalid_params(f"{path} is not a regular file")
            if info.st_size > self._max_read_bytes:
                raise self._too_large(path, info.st_size)
            with os.fdopen(fd, "rb", closefd=False) as handle:
                # One byte past the bound: the file may have grown since fstat.
                data = handle.read(self._max_read_bytes + 1)
        except OSError as exc:
            raise _os_error(exc, "read", path) from exc
        if len(data) > self._max_read_bytes:
            raise self._too_large(path, len(data))
        return data

    def _too_large(self, path: Path, size: int) -> RpcError:
        return RpcError.invalid_params(
            f"{path} is too large to read ({size} bytes; the limit is {self._max_read_bytes} "
            "bytes); read it in parts with another tool instead"
        )

    # -- fs/write_text_file ------------------------------------------------------------

    async def write_text_file(self, params: Mapping[str, Any], *,
                              expected: Path | None = None) -> dict[str, Any]:
        """Write the file; with `expected` (where a check let it write), only when the
        path still lands there: a link swapped since then refuses the write."""
        content = params.get("content")
        if not isinstance(content, str):
            raise RpcError.invalid_params("content must be a string")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RpcError.invalid_params("content is not valid Unicode text") from exc
        await anyio.to_thread.run_sync(self._write_blocking, params.get("path"), data,
                                       expected)
        return {}

    def _write_blocking(self, raw_path: object, data: bytes, expected: Path | None) -> None:
        location = self._locate(raw_path, make_dirs=True)
        try:
            path, dir_fd = location.path, location.parent_fd
            if expected is not None and path != expected:
                raise RpcError.invalid_params(
                    f"{raw_path} now leads to {path}, not to {expected} as it did when the "
                    "write was checked; the file was not changed")
            assert dir_fd is not None  # make_dirs: the directory exists now
            if not location.name:
                raise RpcError.invalid_params(f"{path} is a directory, not a text file")
            try:
                info: os.stat_result | None = os.stat(location.name, dir_fd=dir_fd,
                                                      follow_symlinks=False)
            except FileNotFoundError:
                info = None
            except OSError as exc:
                raise _os_error(exc, "write", path) from exc
            if info is not None and stat.S_ISDIR(info.st_mode):
                raise RpcError.invalid_params(f"{path} is a directory, not a text file")
            if info is not None and not stat.S_ISREG(info.st_mode) \
                    and not stat.S_ISLNK(info.st_mode):
                raise RpcError.invalid_params(f"{path} is not a regular file")
            # The replacement is a new inode: give it the old file's mode, or the mode a
            # plain create would have had (not a private 0600 as louise's own files).
            mode = stat.S_IMODE(info.st_mode) if info is not None and stat.S_ISREG(
                info.st_mode) else _new_file_mode()
            try:
                _replace_at(dir_fd, location.name, data, mode)
            except OSError as exc:
                raise _os_error(exc, "write", path) from exc
        finally:
            location.close()


def _replace_at(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    """Atomically replace `name` in the directory `dir_fd` with `data` (temp file in that
    same directory, fsync, rename, fsync of the directory). A link that took `name`
    meanwhile is replaced, not followed."""
    temp = f".{name[:200]}.{os.urandom(6).hex()}.tmp"  # secrets.token_hex(6), without hashlib
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):  # durability of the rename, where it can be had
        directory = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def optional_count(params: Mapping[str, Any], key: str, *, minimum: int) -> int | None:
    """An optional integer param (`line`, `limit`) or a clear invalid-params error."""
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise RpcError.invalid_params(f"{key} must be an integer >= {minimum} or null")
    return value


def _not_found(path: Path) -> RpcError:
    return RpcError(RESOURCE_NOT_FOUND, f"File not found: {path}", {"path": str(path)})


def _os_error(exc: OSError, action: str, path: Path) -> RpcError:
    if action == "read" and exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return _not_found(path)
    if exc.errno == errno.ELOOP:
        return RpcError.invalid_params(
            f"{path} is a symbolic link that cannot be followed safely "
            "(a loop, or it changed while being opened)"
        )
    reason = exc.strerror or str(exc)
    return RpcError(INTERNAL_ERROR, f"cannot {action} {path}: {reason}", {"path": str(path)})


def _new_file_mode() -> int:
    """0o666 minus the process umask: what `open(path, "w")` would have created."""
    umask: int | None = None
    with contextlib.suppress(OSError, ValueError):
        # Reading it here avoids os.umask(), which briefly changes a process-wide value
        # while other threads may be creating files.
        for entry in Path("/proc/self/status").read_text().splitlines():
            if entry.startswith("Umask:"):
                umask = int(entry.split()[1], 8)
                break
    if umask is None:
        umask = os.umask(0o022)
        os.umask(umask)
    return 0o666 & ~umask
