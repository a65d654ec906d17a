"""How many bytes a text takes inside a JSON line as louise writes it (`rpc_state._encode`:
UTF-8, non-ASCII as is). `"`, `\\`, BS, TAB, LF, FF and CR take 2 bytes, every other
control character 6 (`\\u0000`): 16 MiB of NUL bytes is a 96 MiB line. `json_tail` cuts
a text from its start to fit a byte budget as encoded, so what louise sends stays within
the limits it enforces on what it reads. Pure: no I/O.
"""

from __future__ import annotations

_SHORT = b'"\\\b\t\n\f\r'  # escaped as two characters
_LONG = bytes(b for b in range(0x20) if b not in _SHORT)  # escaped as \u00XX
_BLOCK = 64 * 1024


def json_bytes(data: bytes) -> int:
    """The encoded size of UTF-8 `data` inside a JSON string (quotes not counted)."""
    short = len(data) - len(data.translate(None, _SHORT))
    long = len(data) - len(data.translate(None, _LONG))
    return len(data) + short + 5 * long


def json_tail(text: str, budget: int) -> tuple[str, bool]:
    """The longest end of `text` whose JSON encoding takes at most `budget` bytes (cut on
    a character boundary), and whether anything was cut."""
    data = text.encode("utf-8", "surrogatepass")
    if json_bytes(data) <= budget:
        return text, False
    # Whole blocks from the end while they fit, then a binary search in the next one.
    start, used = len(data), 0
    while start > 0:
        low = max(0, start - _BLOCK)
        size = json_bytes(data[low:start])
        if used + size > budget:
            break
        used, start = used + size, low
    low, high = max(0, start - _BLOCK), start
    while low < high:
        middle = (low + high) // 2
        if used + json_bytes(data[middle:start]) <= budget:
            high = middle
        else:
            low = middle + 1
    while low < len(data) and data[low] & 0xC0 == 0x80:
        low += 1  # not inside a character: the cut moves to the next one
    return data[low:].decode("utf-8", "surrogatepass"), True
