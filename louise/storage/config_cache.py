"""The validated-configuration cache's file (`config-cache.json` in the state directory):
a few entries of plain JSON data, each under the digest of everything its validation
depended on (`louise/config/cached.py` makes the digests and the data; this module only
keeps them).

A file that is missing, not the user's own, writable by others, not a regular file, over
MAX_FILE_BYTES, not JSON, or of another format or Python build is read as empty (and
replaced at the next write): the cache never stops a start. Written atomically (a
temporary file renamed over it), private (0600 in a 0700 directory), at most MAX_ENTRIES
entries (the oldest dropped first) and MAX_FILE_BYTES bytes. Two processes writing at once
may lose one entry: that input is validated again and written at its next start. No lock:
a reader never waits and a writer never blocks a start."""

from __future__ import annotations

import json
import os
import stat
import sys

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import Any

FILE_NAME = "config-cache.json"
FORMAT = 1
MAX_FILE_BYTES = 1024 * 1024
MAX_ENTRIES = 8
# The validators' results, and json's and the dataclasses' behaviour, are Python's.
BUILD = f"{sys.implementation.cache_tag} {sys.version}"


def cache_file_name() -> str:
    from louise.storage import paths

    return os.path.join(paths.state_dir_name(), FILE_NAME)


def read_entries(path: str) -> dict[str, Any]:
    """The entries kept in `path`, by key, oldest first; empty when the file is missing,
    unsafe, too big, corrupt or of another format or build."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES \
                or (hasattr(os, "getuid") and info.st_uid != os.getuid()) \
                or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return {}
        raw = os.read(fd, MAX_FILE_BYTES + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        return {}
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON (UnicodeDecodeError is a ValueError)
        return {}
    if not (type(document) is dict and document.get("format") == FORMAT
            and document.get("build") == BUILD and type(document.get("entries")) is dict):
        return {}
    entries: dict[str, Any] = document["entries"]
    return dict(list(entries.items())[-MAX_ENTRIES:])


def read_entry(path: str, key: str) -> Any | None:
    """The entry kept under `key`, None when there is none (or no usable file)."""
    return read_entries(path).get(key)


def write_entry(path: str, key: str, value: Any) -> bool:
    """Keep `value` (JSON-able) under `key`, with the newest of the other entries that
    fit the bounds; False when it cannot be kept (too big, or the file cannot be
    written). Never raises."""
    try:
        entries = read_entries(path)
        entries.pop(key, None)
        entries[key] = value
        while True:
            kept = dict(list(entries.items())[-MAX_ENTRIES:])
            data = json.dumps({"format": FORMAT, "build": BUILD, "entries": kept},
                              allow_nan=False, separators=(",", ":")).encode()
            if len(data) <= MAX_FILE_BYTES:
                break
            if len(kept) <= 1:
                return False  # this entry alone is past the bound: not kept
            entries = dict(list(kept.items())[1:])  # drop the oldest, try again
        from louise.storage import durable

        durable.ensure_private_dir(os.path.dirname(path))
        durable.atomic_write_bytes(path, data)
    except Exception:  # a cache: whatever goes wrong, the start goes on without it
        return False
    return True
