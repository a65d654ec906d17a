"""Byte budgets for what an agent sends: sizes measured cheaply, and visible markers where
content is cut. Pure functions; no I/O.

Sizes approximate the JSON text in UTF-8 (string escapes are not counted): close enough to
bound memory, and every walk stops as soon as it passes its limit, so measuring a huge
value costs no more than its limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_SCALAR_BYTES = 8  # a number, true/false/null and its separator


def text_bytes(text: str) -> int:
    """UTF-8 size of `text` (O(1) for ASCII, which CPython flags on the string)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def json_size(value: Any, limit: int) -> int:
    """Approximate JSON size of `value` in bytes; any result over `limit` means "more than
    `limit`" (the walk stops there)."""
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) > limit - total:
                return limit + 1
            total += text_bytes(item) + 2
        elif isinstance(item, Mapping):
            total += 2 + 4 * len(item)
            if total > limit:
                return total
            for key, sub in item.items():
                total += len(key) if isinstance(key, str) else _SCALAR_BYTES
                stack.append(sub)
        elif isinstance(item, (list, tuple)):
            total += 2 + len(item)
            if total > limit:
                return total
            stack.extend(item)
        else:
            total += _SCALAR_BYTES
        if total > limit:
            return total
    return total


# Where a message's text or blocks stop because its budget is spent (the chat, `louise
# chat`'s output): the same words wherever it shows.
MESSAGE_CUT_MARKER = "[… message truncated: too long to keep]"


def cut_text(what: str, limit: int) -> str:
    """The marker that stands for a value that was not kept."""
    return f"[… {what} not kept: over the {limit}-byte limit]"


def fit_items(items: Sequence[dict[str, Any]], limit: int, max_items: int
              ) -> tuple[list[dict[str, Any]], int, int]:
    """The leading items that fit in `limit` bytes and `max_items`: (kept, their size,
    how many were left out)."""
    kept: list[dict[str, Any]] = []
    used = 0
    for item in items[:max_items]:
        size = json_size(item, limit - used)
        if used + size > limit:
            break
        kept.append(item)
        used += size
    return kept, used, len(items) - len(kept)


def clean_list(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


SMALL_BLOCK_KEYS = ("type", "uri", "name", "mimeType", "title")


def block_stub(block: Mapping[str, Any], limit: int) -> dict[str, Any]:
    """A content block too big to keep: its type and names only, flagged truncated."""
    stub: dict[str, Any] = {key: block[key] for key in SMALL_BLOCK_KEYS
                            if isinstance(block.get(key), str) and len(block[key]) <= 1024}
    stub["truncated"] = cut_text(f"{stub.get('type', 'content')} content", limit)
    return stub
