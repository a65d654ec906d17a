"""SHA-256 of short values (names, paths, ids) without loading OpenSSL.

`hashlib.sha256` is OpenSSL's: importing hashlib loads libcrypto (`_hashlib`, ~4 ms and
~4 MiB of RSS at every start, for nothing else in the engine). Python's own implementation
(`_sha2` from 3.12, `_sha256` before) gives the same digests, ~5x slower on bulk data: the
values hashed here are a few dozen bytes. File contents keep hashlib's (checkpoints'
blobs, `workspace_files.Blobs`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

def _builtin_sha256() -> Callable[[bytes], Any]:
    name = "_sha2" if sys.version_info >= (3, 12) else "_sha256"  # Python's own module
    try:
        new: Callable[[bytes], Any] = __import__(name).sha256
    except ImportError:  # a Python built without its own hashes: OpenSSL's
        import hashlib

        new = hashlib.sha256
    return new


_sha256 = _builtin_sha256()


def sha256_hex(data: bytes) -> str:
    """The SHA-256 digest of `data`, in hex (as `hashlib.sha256(data).hexdigest()`)."""
    return str(_sha256(data).hexdigest())
