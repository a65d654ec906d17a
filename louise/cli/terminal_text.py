"""The one sanitizer for text louise prints to a terminal.

An agent controls most of what the CLI prints (replies, titles, paths, commands, error
messages, stderr, session titles, transcripts): an escape sequence in any of it could
erase and redraw a permission prompt, retitle the window or worse. `safe` keeps
printable text and replaces every control or format character (C0 and C1 controls,
ESC, DEL, bidi overrides, zero-width characters, line separators) with U+FFFD, so the
person sees that something was there. `safe_json` escapes the same characters inside
JSON output, which stays equal as JSON. Pure: no I/O.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Any

REPLACEMENT = "\ufffd"


def safe(text: str, *, multiline: bool = False) -> str:
    """`text` with nothing a terminal would interpret. With `multiline`, newlines and tabs
    stay and carriage returns are dropped (a "\\r\\n" line end is a plain newline, and a
    lone "\\r" could overwrite the line); otherwise they are replaced too."""
    if text.isprintable():
        return text
    if multiline:
        text = text.replace("\r", "")
        return "\n".join(_safe_line(line, keep_tabs=True) for line in text.split("\n"))
    return _safe_line(text, keep_tabs=False)


def _safe_line(line: str, *, keep_tabs: bool) -> str:
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() or (keep_tabs and c == "\t") else REPLACEMENT
                   for c in line)


def safe_json(value: Any, *, indent: int | None = 2) -> str:
    """`json.dumps` of `value` (non-ASCII text kept readable) with every character a
    terminal could interpret written as a `\\uXXXX` escape instead."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if text.isprintable() or all(c.isprintable() or c == "\n" for c in text):
        return text
    # Outside strings JSON has only printable characters and the indent's newlines, so
    # every other character is inside a string, where an escape means the same.
    return "".join(c if c.isprintable() or c == "\n" else _json_escape(c) for c in text)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
