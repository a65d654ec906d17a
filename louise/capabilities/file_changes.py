"""What a proposed edit does to a whole file, for the person reviewing it.

Agents describe an edit as a `diff` content item. codex sends the whole file
(`oldText` = the file, `newText` = the file after); claude and vibe send only the changed
region (`oldText "old line"`, `newText "new line by mock"`); Edit/Write tools may send
only their raw input (louise derives the same shapes from it, see `louise.permissions.broker`).
`proposed_change` puts any of them onto the text the file has now (a loaded buffer's, or
the disk's) and returns the whole file before and after; when that cannot be done (the
old text is missing, or occurs more than once) it returns the agent's snippet as it is,
with the reason. It is the one place that applies an agent's edit for display: the diff
tab, the float's preview and the CLI's prompt all go through it.

`proposed_change` is pure; `read_for_review` is the bounded disk read that feeds it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A file larger than this is shown as the agent's snippet only (its whole text would
# travel to Neovim, twice, and be diffed).
MAX_REVIEW_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file of a request: its text `before` and `after` the edit. `whole_file` is
    False when only the agent's snippet could be shown (`note` says why)."""

    path: str
    before: str
    after: str
    whole_file: bool
    mode: str  # "edit", "new" (the file does not exist yet), "delete"
    note: str | None = None

    def to_diff_item(self) -> dict[str, Any]:
        """As a `diff` content item (what `louise.nvim.tool_text.diff_lines` shows)."""
        if self.mode == "delete":
            return {"type": "diff", "path": self.path, "derived": "delete"}
        item: dict[str, Any] = {"type": "diff", "path": self.path,
                                "oldText": None if self.mode == "new" else self.before,
                                "newText": self.after}
        if self.note:
            item["note"] = self.note
        return item


_HUNK = r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@"  # compiled (and cached by `re`) on first use


def clipped_diff(old: list[str], new: list[str], fromfile: str, tofile: str, *,
                 window: int, context: int = 3) -> list[str]:
    """A unified diff of `old` and `new` computed from a bounded window: the common head
    and tail are skipped (hunk numbers stay those of the whole files) and at most `window`
    lines of each side are compared (difflib is quadratic in the worst case); a cut says
    so. A 30,000-line file costs what a 400-line one does."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head:head + 256] == new[head:head + 256]:  # in C, by blocks
        head += 256
    head = min(head, limit)
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    room = limit - head
    while tail + 256 <= room and (old[len(old) - tail - 256:len(old) - tail]
                                  == new[len(new) - tail - 256:len(new) - tail]):
        tail += 256
    while tail < room and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    start = max(head - context, 0)
    old_mid = old[start:len(old) - max(tail - context, 0)]
    new_mid = new[start:len(new) - max(tail - context, 0)]
    cut = len(old_mid) > window or len(new_mid) > window
    import difflib  # with an edit's first diff, not with the engine's start

    out: list[str] = []
    hunk = re.compile(_HUNK)
    for line in difflib.unified_diff(old_mid[:window], new_mid[:window], fromfile=fromfile,
                                     tofile=tofile, lineterm="", n=context):
        match = hunk.match(line)
        if match is not None and start:
            a, b, c, d = match.groups()
            line = f"@@ -{int(a) + start}{b or ''} +{int(c) + start}{d or ''} @@"
        out.append(line)
    if cut:
        out.append(f"… the diff goes on past line {start + window} (not computed for the "
                   "preview)")
    return out


def hunk_lines(change: FileChange, shown_path: str, max_lines: int = 80) -> list[str]:
    """The change as unified-diff hunks (3 lines of context), at most `max_lines`,
    computed from a bounded window of the files."""
    if change.mode == "delete":
        return [f"delete {shown_path}"]
    lines = clipped_diff(
        change.before.splitlines(), change.after.splitlines(),
        "/dev/null" if change.mode == "new" else shown_path, shown_path,
        window=max_lines + 6)
    if change.note:
        lines.insert(0, f"({change.note})")
    if len(lines) > max_lines:
        lines = [*lines[:max_lines - 1], f"… {len(lines) - max_lines + 1} more lines"]
    return lines


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def proposed_change(item: Mapping[str, Any], current: str | None) -> FileChange:
    """`item` (a diff content item, or one louise derived: `derived` replace/write/delete)
    applied to `current`, the file's text now (None: it does not exist or cannot be
    read)."""
    path = str(item.get("path") or "")
    derived = item.get("derived")
    if derived == "delete":
        return FileChange(path, current or "", "", current is not None, "delete",
                          None if current is not None else "the file does not exist")
    if derived == "replace":
        old = _text(item.get("oldString"))
        new = _text(item.get("newString")) or ""
    else:
        old = _text(item.get("oldText"))
        new = _text(item.get("newText")) or ""
        if derived == "write":
            old = None
    if old is None or (old == "" and current is None):
        # A new file, or the whole of it written; an empty old text for a file that does
        # not exist is a new file too (qwen-code and gemini-cli send new files so).
        if current is None:
            return FileChange(path, "", new, True, "new")
        return FileChange(path, current, new, True, "edit")
    if current is None:
        return FileChange(path, old, new, False, "edit",
                          "the file is missing or could not be read: only the agent's snippet is "
                          "shown")
    return _apply_snippet(path, current, old, new)


def _apply_snippet(path: str, current: str, old: str, new: str) -> FileChange:
    if old == current:
        return FileChange(path, current, new, True, "edit")
    candidates = [(old, new)]
    if "\r\n" in current and "\n" in old and "\r\n" not in old:
        # The agent read the file with its line endings normalized.
        candidates.append((old.replace("\n", "\r\n"), new.replace("\n", "\r\n")))
    found = 0
    for old_variant, new_variant in candidates:
        found = _occurrences(current, old_variant)
        if found == 1 and old_variant:
            at = current.index(old_variant)
            after = current[:at] + new_variant + current[at + len(old_variant):]
            return FileChange(path, current, after, True, "edit")
        if found > 1:
            break
    if not old:
        why = "the agent's old text is empty but the file is not"
    elif found == 0:
        why = "the agent's old text is not in the current file"
    else:
        why = f"the agent's old text occurs {found} times in the current file"
    return FileChange(path, old, new, False, "edit", f"{why}: only its snippet is shown")


def _occurrences(text: str, part: str, most: int = 2) -> int:
    """How many times `part` occurs in `text`, overlaps included, counting up to `most`."""
    if not part:
        return 0
    count, at = 0, text.find(part)
    while at != -1 and count < most:
        count += 1
        at = text.find(part, at + 1)
    return count


def read_for_review(path: str, max_bytes: int = MAX_REVIEW_BYTES) -> str | None:
    """A regular file's text for review: None when it is missing, not a regular file (a
    FIFO or a device never blocks or floods this), larger than `max_bytes`, or not
    UTF-8. Never follows the agent anywhere but to read: nothing is written."""
    if not os.path.isabs(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            return None
        return b"".join(chunks).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
