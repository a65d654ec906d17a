"""Writing to stdout and stderr when their reader may leave (`louise chat … | head`)."""

from __future__ import annotations

import contextlib
import os

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import TextIO


def put(stream: TextIO, text: str) -> bool:
    """Write and flush `text`; False when the stream's reader left (a broken pipe). The
    stream's descriptor then points at /dev/null: what is still written or flushed to it,
    at exit too, goes nowhere instead of failing again."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        silence(stream)
        return False
    return True


def silence(stream: TextIO) -> None:
    """Point `stream`'s descriptor at /dev/null (where it has one)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
