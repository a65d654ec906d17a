"""A turn's changes as a person reviews them: per file, its hunks and whether each is
still there, taken back, or changed since; the one-line summary the turn's end shows;
review comments as the next prompt. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from louise.checkpoints.diffs import (
    MAX_DIFF_LINES,
    Hunk,
    HunkState,
    counts,
    hunk_state,
    hunks,
    is_binary,
    show,
    split_lines,
)

MAX_REVIEW_LINES = 20_000  # lines of hunks sent to a view in one review
MAX_COMMENTS = 50
MAX_COMMENT_CHARS = 4_000
MAX_QUOTED_LINES = 12


@dataclass(slots=True)
class ReviewFile:
    path: str
    status: str  # added, removed, modified, noted, link
    added: int = 0
    removed: int = 0
    note: str = ""  # e.g. why it cannot be shown or taken back
    hunks: list[Hunk] = field(default_factory=list)
    states: list[HunkState] = field(default_factory=list)
    revertible: bool = True

    def to_wire(self, budget: list[int]) -> dict[str, Any]:
        """For Neovim: the file and its hunks' lines, within `budget[0]` lines."""
        out_hunks = []
        for index, (hunk, state) in enumerate(zip(self.hunks, self.states, strict=True)):
            lines = hunk.lines()
            if budget[0] <= 0:
                break
            lines = lines[:budget[0]]
            budget[0] -= len(lines)
            out_hunks.append({"index": index, "state": state, "lines": lines,
                              "line": hunk.first_changed_line})
        shown_all = len(out_hunks) == len(self.hunks)
        note = self.note
        if not shown_all:
            note = (note + "; " if note else "") + "too long to show whole"
        return {"path": self.path, "status": self.status, "added": self.added,
                "removed": self.removed, "note": note, "hunks": out_hunks,
                "revertible": self.revertible}


def file_review(path: str, before: bytes | None, after: bytes | None,
                current: bytes | None, *, note: str = "") -> ReviewFile:
    """One file's change `before` → `after` (None: absent) and where each hunk stands in
    `current`, the file now."""
    status = "added" if before is None else ("removed" if after is None else "modified")
    old, new = before or b"", after or b""
    if is_binary(old) or is_binary(new):
        return ReviewFile(path, status, note=note or "binary: not shown line by line")
    a, b = split_lines(old), split_lines(new)
    if len(a) > MAX_DIFF_LINES or len(b) > MAX_DIFF_LINES:
        return ReviewFile(path, status, len(b), len(a),
                          note=note or "too many lines to show line by line")
    found = hunks(a, b)
    added, removed = counts(before, after)
    if current is not None and is_binary(current):
        return ReviewFile(path, status, added, removed, note or "binary now: not shown",
                          revertible=False)
    now = split_lines(current or b"")
    states: list[HunkState] = [hunk_state(b, now, hunk) for hunk in found]
    return ReviewFile(path, status, added, removed, note, found, states)


def noted_review(path: str, status: str, why: str) -> ReviewFile:
    return ReviewFile(path, "noted", note=f"{why} file, not copied: it cannot be shown or "
                      f"taken back ({status})", revertible=False)


def summary(files: Sequence[ReviewFile] | Sequence[tuple[int, int]], more: int = 0) -> str:
    """`3 files changed (+12 −4)`."""
    added = removed = 0
    for item in files:
        if isinstance(item, ReviewFile):
            added, removed = added + item.added, removed + item.removed
        else:
            added, removed = added + item[0], removed + item[1]
    count = len(files) + more
    noun = "file" if count == 1 else "files"
    return f"{count} {noun} changed (+{added} \u2212{removed})"


def to_wire(files: Sequence[ReviewFile]) -> list[dict[str, Any]]:
    budget = [MAX_REVIEW_LINES]
    return [item.to_wire(budget) for item in files]


# ------------------------------------------------------------------ comments


def comments_prompt(title: str, comments: Sequence[Mapping[str, Any]]) -> str:
    """Review comments as one prompt: each quoted with its file and line, then the
    comment."""
    parts = [f"Review comments on your changes ({title}):"]
    for comment in list(comments)[:MAX_COMMENTS]:
        path = " ".join(str(comment.get("path") or "").split())
        line = comment.get("line")
        where = f"{path}:{line}" if isinstance(line, int) and line > 0 else path
        quoted = [str(q) for q in comment.get("quote") or [] if isinstance(q, str)]
        text = str(comment.get("text") or "").strip()[:MAX_COMMENT_CHARS]
        if not text:
            continue
        block = [f"\n{where}"]
        block.extend(f"> {q}" for q in quoted[:MAX_QUOTED_LINES])
        if len(quoted) > MAX_QUOTED_LINES:
            block.append(f"> … ({len(quoted) - MAX_QUOTED_LINES} more lines)")
        block.append(text)
        parts.append("\n".join(block))
    return "\n".join(parts)


def quote(hunk: Hunk) -> list[str]:
    """A hunk's changed lines, as a comment quotes them."""
    return [mark + show(line) for mark, line in hunk.marked if mark != " "]
