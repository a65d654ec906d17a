"""The client's file system capability without an editor: `fs/read_text_file`, `fs/write_text_file`.

`FileAccess` serves one session: every path must be absolute and, once symlinks are
resolved, lie under one of the session's roots (its cwd plus configured extra roots),
unless the `outside_roots_allowed` hook (a permission rule) says yes for that resolved
path. Reads honour `line` (1-based) and `limit` (a number of lines) and keep line endings;
a missing file is `-32002`. Writes create missing directories and replace the file
atomically, keeping its mode.

`EditorPort` is the seam the Neovim layer fills with buffer-backed reads and writes; it
can reuse `FileAccess.check_path` and `slice_lines` so confinement and slicing stay the same.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio.to_thread

from louise.acp.errors import INTERNAL_ERROR, RESOURCE_NOT_FOUND, RpcError
from louise.store import atomic_write_bytes

__all__ = [
    "DEFAULT_MAX_READ_BYTES",
    "EditorPort",
    "FileAccess",
    "OutsideRootsHook",
    "slice_lines",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_READ_BYTES = 16 * 1024 * 1024

OutsideRootsHook = Callable[[Path], bool]
"""Called with the resolved path of a request outside every root; True allows it."""


@runtime_checkable
class EditorPort(Protocol):
    """What serves `fs/*` for a session: the disk (`FileAccess`) or an editor's buffers.

    Both methods take the raw camelCase ACP params and return the ACP result, raising
    `RpcError` for anything the agent should see as an error response.
    """

    async def read_text_file(self, params: Mapping[str, Any]) -> dict[str, Any]: ...

    async def write_text_file(self, params: Mapping[str, Any]) -> dict[str, Any]: ...


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

        Blocking (it follows symlinks on disk): call it from a worker thread.
        """
        if not isinstance(raw_path, str) or not raw_path:
            raise RpcError.invalid_params("path must be a non-empty string")
        if "\x00" in raw_path:
            raise RpcError.invalid_params("path must not contain NUL characters")
        if not os.path.isabs(raw_path):
            raise RpcError.invalid_params(f"path must be absolute, got {raw_path!r}")
        # realpath(strict=False) resolves every symlink that exists and normalises "..",
        # so a link inside a root that points outside is judged by where it lands.
        resolved = Path(os.path.realpath(raw_path))
        if self._inside_roots(resolved) or self._hook_allows(resolved):
            return resolved
        where = ""
        if str(resolved) != os.path.normpath(raw_path):
            where = f" (it resolves to {resolved})"
        roots = ", ".join(str(root) for root in self._roots) or "none"
        raise RpcError.invalid_params(
            f"{raw_path} is outside the directories this session may access{where}; "
            f"allowed roots: {roots}. To allow it, add its directory to the extra fs roots "
            "in louise's config (fs.roots), or allow it with a permission rule"
        )

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

    # -- fs/read_text_file -------------------------------------------------------------

    async def read_text_file(self, params: Mapping[str, Any]) -> dict[str, Any]:
        line = optional_count(params, "line", minimum=1)
        limit = optional_count(params, "limit", minimum=0)
        raw_path = params.get("path")
        text = await anyio.to_thread.run_sync(self._read_blocking, raw_path)
        return {"content": slice_lines(text, line, limit)}

    def _read_blocking(self, raw_path: object) -> str:
        path = self.check_path(raw_path)
        try:
            # O_NONBLOCK so a FIFO cannot hang the open; O_NOFOLLOW narrows the window in
            # which a component swapped for a symlink after the check could be followed.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise _os_error(exc, "read", path) from exc
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
        finally:
            os.close(fd)
        if len(data) > self._max_read_bytes:
            raise self._too_large(path, len(data))
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RpcError.invalid_params(
                f"{path} is not UTF-8 text (invalid byte at offset {exc.start})"
            ) from exc

    def _too_large(self, path: Path, size: int) -> RpcError:
        return RpcError.invalid_params(
            f"{path} is too large to read ({size} bytes; the limit is {self._max_read_bytes} "
            "bytes); read it in parts with another tool instead"
        )

    # -- fs/write_text_file ------------------------------------------------------------

    async def write_text_file(self, params: Mapping[str, Any]) -> dict[str, Any]:
        content = params.get("content")
        if not isinstance(content, str):
            raise RpcError.invalid_params("content must be a string")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RpcError.invalid_params("content is not valid Unicode text") from exc
        await anyio.to_thread.run_sync(self._write_blocking, params.get("path"), data)
        return {}

    def _write_blocking(self, raw_path: object, data: bytes) -> None:
        path = self.check_path(raw_path)
        try:
            info: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise _os_error(exc, "write", path) from exc
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise RpcError.invalid_params(f"{path} is a directory, not a text file")
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise RpcError.invalid_params(f"{path} is not a regular file")
        mode = stat.S_IMODE(info.st_mode) if info is not None else _new_file_mode()
        try:
            # Created here, with the umask's usual modes, rather than by the store (which
            # makes louise's private state directories 0700).
            path.parent.mkdir(parents=True, exist_ok=True)
            # The replacement is a new inode: give it the old file's mode, or the mode a
            # plain create would have had.
            atomic_write_bytes(path, data, mode=mode)
        except OSError as exc:
            raise _os_error(exc, "write", path) from exc


def optional_count(params: Mapping[str, Any], key: str, *, minimum: int) -> int | None:
    """An optional integer param (`line`, `limit`) or a clear invalid-params error."""
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise RpcError.invalid_params(f"{key} must be an integer >= {minimum} or null")
    return value


def _os_error(exc: OSError, action: str, path: Path) -> RpcError:
    if action == "read" and exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return RpcError(RESOURCE_NOT_FOUND, f"File not found: {path}", {"path": str(path)})
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
