"""An agent's edit put onto the file as it is: whole files before and after, or the
snippet with the reason (louise.capabilities.file_changes)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import pytest

from louise.capabilities import file_changes
from louise.capabilities.file_changes import hunk_lines, proposed_change, read_for_review

FILE = "first\nold line\nlast\n"


def test_a_snippet_diff_becomes_the_whole_proposed_file() -> None:
    # claude and vibe: oldText/newText are the changed region only.
    change = proposed_change({"path": "/w/notes.txt", "oldText": "old line",
                              "newText": "new line by mock"}, FILE)
    assert change.whole_file and change.note is None and change.mode == "edit"
    assert change.before == FILE
    assert change.after == "first\nnew line by mock\nlast\n"


def test_a_whole_file_diff_stays_whole() -> None:
    # codex: oldText is the whole file.
    change = proposed_change({"path": "/w/n", "oldText": FILE,
                              "newText": FILE.replace("old", "new")}, FILE)
    assert change.whole_file and change.after == FILE.replace("old", "new")


def test_the_snippet_goes_onto_the_current_text_not_the_agents_idea_of_it() -> None:
    current = "unsaved line\n" + FILE  # the person's buffer has an edit the disk lacks
    change = proposed_change({"path": "/w/n", "oldText": "old line", "newText": "x"},
                             current)
    assert change.after == "unsaved line\nfirst\nx\nlast\n"


def test_old_text_missing_or_repeated_shows_the_snippet_and_why() -> None:
    missing = proposed_change({"path": "/w/n", "oldText": "gone", "newText": "x"}, FILE)
    assert not missing.whole_file
    assert (missing.before, missing.after) == ("gone", "x")
    assert missing.note is not None and "not in the current file" in missing.note
    twice = proposed_change({"path": "/w/n", "oldText": "l", "newText": "L"}, "l l\n")
    assert not twice.whole_file and twice.note is not None and "2 times" in twice.note
    overlapping = proposed_change({"path": "/w/n", "oldText": "aa", "newText": "b"}, "aaa")
    assert not overlapping.whole_file, "an overlapping second match is a second match"
    unreadable = proposed_change({"path": "/w/n", "oldText": "old", "newText": "new"}, None)
    assert not unreadable.whole_file and "missing or could not be read" in str(unreadable.note)


def test_new_files_writes_deletes_and_raw_input_edits() -> None:
    new = proposed_change({"path": "/w/n", "oldText": None, "newText": "hi\n"}, None)
    assert (new.mode, new.before, new.after, new.whole_file) == ("new", "", "hi\n", True)
    # qwen-code's (and gemini-cli's) new file: an empty old text for a missing file.
    empty = proposed_change({"path": "/w/n", "oldText": "", "newText": "hi\n"}, None)
    assert (empty.mode, empty.before, empty.after, empty.whole_file, empty.note) == \
        ("new", "", "hi\n", True, None)
    assert empty.to_diff_item()["oldText"] is None
    # ... but an empty old text for a file that has text is not the file.
    emptied = proposed_change({"path": "/w/n", "oldText": "", "newText": "hi\n"}, FILE)
    assert not emptied.whole_file and "old text is empty" in str(emptied.note)
    write = proposed_change({"path": "/w/n", "derived": "write", "newText": "all\n"}, FILE)
    assert (write.mode, write.before, write.after) == ("edit", FILE, "all\n")
    delete = proposed_change({"path": "/w/n", "derived": "delete", "newText": ""}, FILE)
    assert (delete.mode, delete.before, delete.after) == ("delete", FILE, "")
    replace = proposed_change({"path": "/w/n", "derived": "replace", "oldString": "old line",
                               "newString": "new"}, FILE)
    assert replace.after == "first\nnew\nlast\n"


def test_crlf_files_take_snippets_sent_with_plain_newlines() -> None:
    current = "a\r\nold\r\nb\r\n"
    change = proposed_change({"path": "/w/n", "oldText": "a\nold", "newText": "a\nnew"},
                             current)
    assert change.whole_file and change.after == "a\r\nnew\r\nb\r\n"


def test_hunks_have_context_and_are_bounded() -> None:
    change = proposed_change({"path": "/w/n", "oldText": "old line",
                              "newText": "new line by mock"}, FILE)
    lines = hunk_lines(change, "notes.txt")
    assert lines[:3] == ["--- notes.txt", "+++ notes.txt", "@@ -1,3 +1,3 @@"]
    assert lines[3:] == [" first", "-old line", "+new line by mock", " last"]
    big = proposed_change({"path": "/w/n", "oldText": None,
                           "newText": "".join(f"{i}\n" for i in range(500))}, None)
    bounded = hunk_lines(big, "n", max_lines=10)
    assert len(bounded) == 10 and bounded[-1].startswith("… ")
    missing = proposed_change({"path": "/w/n", "oldText": "zz", "newText": "y"}, FILE)
    assert hunk_lines(missing, "n")[0].startswith("(the agent's old text is not in")


def test_read_for_review_reads_only_small_regular_utf8_files(tmp_path: Path) -> None:
    text = tmp_path / "a.txt"
    text.write_text("hé\n", encoding="utf-8")
    assert read_for_review(str(text)) == "hé\n"
    assert read_for_review(str(text), max_bytes=2) is None
    assert read_for_review("a.txt") is None  # relative: never guessed
    assert read_for_review(str(tmp_path / "missing")) is None
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\xff\xfe")
    assert read_for_review(str(binary)) is None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_for_review(str(fifo)) is None  # returns at once: nothing writes to it
    assert read_for_review(str(tmp_path)) is None


def test_the_cli_hunks_of_a_30000_line_file_are_computed_from_a_bounded_window(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The terminal prompt's hunks are difflib's over a clipped window, never the whole
    files (difflib is quadratic in the worst case: a big file froze the prompt)."""
    seen: list[tuple[int, int]] = []
    real = difflib.unified_diff

    def spy(a: list[str], b: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.append((len(a), len(b)))
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(difflib, "unified_diff", spy)  # imported where it diffs
    old = [f"line {i}" for i in range(30_000)]
    new = [("edited " if i % 3 == 0 else "") + line for i, line in enumerate(old)]
    change = file_changes.FileChange("/ws/big.py", "\n".join(old), "\n".join(new), True, "edit")
    lines = hunk_lines(change, "big.py", max_lines=80)
    assert seen and all(a <= 86 and b <= 86 for a, b in seen)
    assert len(lines) == 80 and lines[0] == "--- big.py"
    # Far from the top, the hunk numbers are still those of the whole file.
    old[20_000] = "changed"
    after = [*old[:20_000], "changed again", *old[20_001:]]
    tail = hunk_lines(file_changes.FileChange("/ws/big.py", "\n".join(old), "\n".join(after),
                                              True, "edit"), "big.py")
    assert "@@ -19998,7 +19998,7 @@" in tail
