"""Files and images attached to a prompt, read for the agent as its prompt capabilities
allow: a file mentioned with `@path` (or added with :LouiseAdd file) is embedded as a
`resource` when the agent takes embedded context and the file is small UTF-8 text, else
linked (`resource_link`); an image (png, jpeg, gif, webp, recognised by its bytes, not its
name) is sent as an `image` block only to an agent with `promptCapabilities.image`.

Reading is bounded (MAX_EMBED_BYTES for text, MAX_IMAGE_BYTES for images), follows no
surprise: only regular files, opened once; anything unreadable falls back to a link, or
for an image to a note saying why it was left out.
"""

from __future__ import annotations

import base64
import contextlib
import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

MAX_EMBED_BYTES = 256 * 1024
MAX_IMAGE_BYTES = 10 * 1024 * 1024
IMAGE_TYPES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(data: bytes) -> str | None:
    """The image's MIME type from its first bytes, or None when it is not one louise
    sends."""
    for magic, mime in IMAGE_TYPES:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _read_regular(path: str, limit: int) -> bytes | None:
    """Up to limit+1 bytes of a regular file; None when it is not one or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def instructions_file(name: str, cwd: str) -> str | None:
    """`context.instructions_file` of a session in `cwd` (e.g. "AGENTS.md"): its path when
    it is a regular file inside that directory (a link out of it is not followed), else
    None (nothing to attach)."""
    if not name:
        return None
    root = os.path.realpath(cwd)
    path = os.path.realpath(os.path.join(root, name))
    if os.path.commonpath([root, path]) != root or not os.path.isfile(path):
        return None
    return path


def _load(chip: Mapping[str, Any], capabilities: Mapping[str, Any]) -> dict[str, Any]:
    loaded = dict(chip)
    path = str(chip.get("path") or "")
    kind = chip.get("kind")
    if kind == "file" and capabilities.get("embeddedContext") is True and path:
        data = _read_regular(path, MAX_EMBED_BYTES)
        if data is not None and len(data) <= MAX_EMBED_BYTES and b"\0" not in data:
            with contextlib.suppress(UnicodeDecodeError):  # not text: linked
                loaded["text"] = data.decode("utf-8")
    elif kind == "image":
        if capabilities.get("image") is not True:
            loaded["problem"] = "the agent does not take images"
            return loaded
        data = _read_regular(path, MAX_IMAGE_BYTES)
        if data is None:
            loaded["problem"] = "it cannot be read"
        elif len(data) > MAX_IMAGE_BYTES:
            loaded["problem"] = f"it is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MiB"
        elif (mime := image_type(data)) is None:
            loaded["problem"] = "it is not a png, jpeg, gif or webp image"
        else:
            loaded["mime"] = mime
            loaded["data"] = base64.b64encode(data).decode("ascii")
    return loaded


async def load_attachments(context: Sequence[Mapping[str, Any]],
                           capabilities: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chips with what the agent will get read in (in a worker thread)."""
    chips = [c for c in context if isinstance(c, Mapping)]
    if not any(c.get("kind") in ("file", "image") for c in chips):
        return [dict(c) for c in chips]
    return await anyio.to_thread.run_sync(
        lambda: [_load(chip, capabilities) for chip in chips])
