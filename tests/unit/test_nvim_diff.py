"""Diff previews (chat tool details and permission floats): bounded work whatever the
file's size, and still a correct unified diff."""

from __future__ import annotations

import difflib
import random
import re
from typing import Any

import pytest

from louise.nvim.tool_text import DIFF_WINDOW_LINES, MAX_DIFF_LINES, clipped_diff, diff_lines

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply(old: list[str], diff: list[str]) -> list[str]:
    """Apply a unified diff (as `patch` would) to `old`."""
    out: list[str] = []
    at = 0  # next line of old to copy
    for line in diff[2:]:
        match = HUNK.match(line)
        if match:
            start = int(match.group(1)) - (0 if match.group(2) == "0" else 1)
            out.extend(old[at:start])
            at = start
        elif line.startswith(" "):
            assert old[at] == line[1:]
            out.append(line[1:])
            at += 1
        elif line.startswith("-"):
            assert old[at] == line[1:]
            at += 1
        elif line.startswith("+"):
            out.append(line[1:])
    return out + old[at:]


def test_a_clipped_diff_is_a_correct_diff() -> None:
    rng = random.Random(14)
    for _ in range(400):
        old = [f"line {rng.randint(0, 9)}" for _ in range(rng.randint(0, 60))]
        new = list(old)
        for _ in range(rng.randint(0, 6)):
            roll = rng.random()
            if roll < 0.4 and new:
                new[rng.randrange(len(new))] = "changed"
            elif roll < 0.7:
                new.insert(rng.randint(0, len(new)), "added")
            elif new:
                del new[rng.randrange(len(new))]
        assert apply(old, clipped_diff(old, new, "a", "a")) == new


def test_hunks_keep_the_line_numbers_of_the_whole_file() -> None:
    old = [f"line {i}" for i in range(10_000)]
    new = list(old)
    new[7_000] = "changed"
    diff = clipped_diff(old, new, "a.py", "a.py")
    assert diff == list(difflib.unified_diff(old, new, "a.py", "a.py", lineterm=""))
    assert diff[2] == "@@ -6998,7 +6998,7 @@"


def test_a_30000_line_diff_is_computed_from_a_clipped_input(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int]] = []
    real = difflib.unified_diff

    def spy(a: list[str], b: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.append((len(a), len(b)))
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(difflib, "unified_diff", spy)  # imported where it diffs
    old = [f"line {i}" for i in range(30_000)]
    new = [("edited " if i % 3 == 0 else "") + line for i, line in enumerate(old)]
    lines = diff_lines([{"type": "diff", "path": "/ws/big.py", "oldText": "\n".join(old),
                         "newText": "\n".join(new)}], "/ws")
    assert seen and all(a <= DIFF_WINDOW_LINES and b <= DIFF_WINDOW_LINES for a, b in seen)
    assert len(lines) == MAX_DIFF_LINES + 1
    assert lines[0] == "    --- big.py"
    assert lines[-1] == "    … diff too long, see :LouisePermission"


def test_a_huge_replace_preview_reads_only_its_head() -> None:
    text = "x\n" * 200_000
    lines = diff_lines([{"type": "diff", "path": "/ws/a.py", "derived": "replace",
                         "oldString": text, "newString": text}], "/ws")
    assert len(lines) == MAX_DIFF_LINES + 1
    assert lines[1] == "    - x"
