"""A file's change as a person reviews it, and taking changes back. Pure: bytes in, bytes
out, no I/O.

Text is handled as lines of bytes, each with its own line ending (`split_lines`), so what
goes back onto a file is byte for byte what was there. A change is a list of hunks (as a
unified diff groups them, with three lines of context). A hunk (`revert_hunk`) or a whole
change (`take_back`) is taken back from the file *as it is now* by a three-way merge:
whatever else changed in the file since (the person's edits, another tool's) stays, and
where both touched the same lines it is a conflict, never resolved silently.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

CONTEXT_LINES = 3
BINARY_SNIFF_BYTES = 8000  # as git: a NUL in the first 8000 bytes means binary
MAX_DIFF_LINES = 50_000  # per side; past it a file is shown as changed, not line by line

Lines = list[bytes]
HunkState = Literal["applied", "reverted", "changed"]


def split_lines(data: bytes) -> Lines:
    """`data` as lines, each ending with its own b"\\n" (the last one may not): joined,
    they are `data` again."""
    if not data:
        return []
    lines = data.split(b"\n")
    out = [line + b"\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_SNIFF_BYTES]


def show(line: bytes) -> str:
    """A line for a person (decoded, its line ending off)."""
    return line.rstrip(b"\n").decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class Hunk:
    """One hunk: the lines it spans in the old text and in the new (context included), and
    the marked lines (`" "`, `"-"`, `"+"`) a person reads."""

    old_start: int  # 0-based, in the old text
    old: tuple[bytes, ...]
    new_start: int  # 0-based, in the new text
    new: tuple[bytes, ...]
    marked: tuple[tuple[str, bytes], ...]

    @property
    def added(self) -> int:
        return sum(1 for mark, _ in self.marked if mark == "+")

    @property
    def removed(self) -> int:
        return sum(1 for mark, _ in self.marked if mark == "-")

    @property
    def lead(self) -> int:
        """Context lines before the first change."""
        count = 0
        for mark, _ in self.marked:
            if mark != " ":
                break
            count += 1
        return count

    @property
    def trail(self) -> int:
        """Context lines after the last change."""
        count = 0
        for mark, _ in reversed(self.marked):
            if mark != " ":
                break
            count += 1
        return count

    @property
    def first_changed_line(self) -> int:
        """The 1-based line of the new text where the change starts (for comments)."""
        return self.new_start + self.lead + 1

    def header(self) -> str:
        """`@@ -a,b +c,d @@` as in a unified diff (1-based; 0 for an empty range)."""
        def where(start: int, count: int) -> str:
            first = start + 1 if count else start
            return f"{first},{count}" if count != 1 else f"{first}"
        return f"@@ -{where(self.old_start, len(self.old))} " \
               f"+{where(self.new_start, len(self.new))} @@"

    def lines(self) -> list[str]:
        """The hunk as a person reads it, header first."""
        out = [self.header()]
        for mark, line in self.marked:
            out.append(mark + show(line))
            if not line.endswith(b"\n"):
                out.append("\\ No newline at end of file")
        return out


def hunks(old: Sequence[bytes], new: Sequence[bytes],
          context: int = CONTEXT_LINES) -> list[Hunk]:
    """The hunks that make `old` into `new`."""
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    out: list[Hunk] = []
    for group in matcher.get_grouped_opcodes(context):
        if all(tag == "equal" for tag, *_ in group):
            continue
        i1, j1 = group[0][1], group[0][3]
        i2, j2 = group[-1][2], group[-1][4]
        marked: list[tuple[str, bytes]] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                marked.extend((" ", line) for line in old[a1:a2])
                continue
            marked.extend(("-", line) for line in old[a1:a2])
            marked.extend(("+", line) for line in new[b1:b2])
        out.append(Hunk(i1, tuple(old[i1:i2]), j1, tuple(new[j1:j2]), tuple(marked)))
    return out


# ------------------------------------------------------------------ three-way merge


@dataclass(frozen=True, slots=True)
class Conflict:
    """Where a merge found both sides changing the same lines: `line` is 1-based in the
    merged text (which holds `ours` there)."""

    line: int
    base: tuple[bytes, ...]
    ours: tuple[bytes, ...]
    theirs: tuple[bytes, ...]


def _sync_regions(base: Sequence[bytes], ours: Sequence[bytes],
                  theirs: Sequence[bytes]) -> list[tuple[int, int, int, int, int, int]]:
    """Stretches of base that both sides kept unchanged: (base start, base end, ours
    start, ours end, theirs start, theirs end), and an empty one at the very end."""
    def blocks(other: Sequence[bytes]) -> list[difflib.Match]:
        return difflib.SequenceMatcher(None, list(base), list(other),
                                       autojunk=False).get_matching_blocks()

    ours_blocks, theirs_blocks = blocks(ours), blocks(theirs)
    regions = []
    a = b = 0
    while a < len(ours_blocks) and b < len(theirs_blocks):
        base_a, match_a, size_a = ours_blocks[a]
        base_b, match_b, size_b = theirs_blocks[b]
        start = max(base_a, base_b)
        end = min(base_a + size_a, base_b + size_b)
        if start < end:
            in_ours = match_a + (start - base_a)
            in_theirs = match_b + (start - base_b)
            regions.append((start, end, in_ours, in_ours + end - start,
                            in_theirs, in_theirs + end - start))
        if base_a + size_a < base_b + size_b:
            a += 1
        else:
            b += 1
    regions.append((len(base), len(base), len(ours), len(ours), len(theirs), len(theirs)))
    return regions


def merge3(base: Sequence[bytes], ours: Sequence[bytes],
           theirs: Sequence[bytes]) -> tuple[Lines, list[Conflict]]:
    """`base` changed both ways: the changes of `theirs` put onto `ours`. Where both sides
    changed the same lines differently, the merged text keeps `ours` and a Conflict says
    where."""
    out: Lines = []
    conflicts: list[Conflict] = []
    at_base = at_ours = at_theirs = 0
    for base_start, base_end, ours_start, ours_end, theirs_start, theirs_end in \
            _sync_regions(base, ours, theirs):
        base_chunk = list(base[at_base:base_start])
        ours_chunk = list(ours[at_ours:ours_start])
        theirs_chunk = list(theirs[at_theirs:theirs_start])
        if ours_chunk == theirs_chunk or theirs_chunk == base_chunk:
            out.extend(ours_chunk)
        elif ours_chunk == base_chunk:
            out.extend(theirs_chunk)
        else:
            conflicts.append(Conflict(len(out) + 1, tuple(base_chunk), tuple(ours_chunk),
                                      tuple(theirs_chunk)))
            out.extend(ours_chunk)
        out.extend(ours[ours_start:ours_end])
        at_base, at_ours, at_theirs = base_end, ours_end, theirs_end
    return out, conflicts


def revert_hunk(after: Sequence[bytes], current: Sequence[bytes], hunk: Hunk) -> Lines | None:
    """`current` with `hunk` (of the change that left `after`) taken back, by a three-way
    merge: whatever else changed in the file since stays, even next to the hunk. None
    when the hunk's own lines changed since (a conflict: nothing is changed)."""
    without = [*after[:hunk.new_start], *hunk.old, *after[hunk.new_start + len(hunk.new):]]
    merged, conflicts = merge3(after, current, without)
    return None if conflicts else merged


def hunk_state(after: Sequence[bytes], current: Sequence[bytes], hunk: Hunk) -> HunkState:
    """Whether the file now holds the hunk as the turn left it ("applied"), as it was
    before ("reverted"), or the hunk's lines changed since ("changed")."""
    back = revert_hunk(after, current, hunk)
    if back is None:
        return "changed"
    return "reverted" if back == list(current) else "applied"


# ------------------------------------------------------------------ whole files


@dataclass(frozen=True, slots=True)
class TakeBack:
    """What taking a change back does to a file: `result` is its new content (None:
    remove it), `unchanged` when it already is as it should be, `conflicts` when the file
    changed since where the change did too (then nothing is written)."""

    result: bytes | None
    unchanged: bool = False
    conflicts: tuple[Conflict, ...] = ()
    reason: str = ""

    @property
    def ok(self) -> bool:
        return not self.conflicts and not self.reason


def take_back(before: bytes | None, after: bytes | None, current: bytes | None) -> TakeBack:
    """Take the change `before` → `after` back from the file as it is now (`current`;
    None: absent), keeping every other change made to it since."""
    if current == after:
        return TakeBack(before)
    if current == before:
        return TakeBack(current, unchanged=True)
    if before is None:  # the change created the file; it has been changed since
        return TakeBack(current, reason="the file it created was changed since")
    if after is None:  # the change removed the file; it is back, with other content
        return TakeBack(current, reason="the file it removed is there again")
    if current is None:
        return TakeBack(None, reason="the file was removed since")
    if is_binary(before) or is_binary(after) or is_binary(current):
        return TakeBack(current, reason="a binary file changed since")
    merged, conflicts = merge3(split_lines(after), split_lines(current), split_lines(before))
    if conflicts:
        return TakeBack(current, conflicts=tuple(conflicts))
    return TakeBack(b"".join(merged))


def counts(before: bytes | None, after: bytes | None) -> tuple[int, int]:
    """Lines added and removed by the change (0, 0 for a binary one)."""
    old, new = before or b"", after or b""
    if is_binary(old) or is_binary(new):
        return 0, 0
    a, b = split_lines(old), split_lines(new)
    if len(a) > MAX_DIFF_LINES or len(b) > MAX_DIFF_LINES:
        return len(b), len(a)
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed
