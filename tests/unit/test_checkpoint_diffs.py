"""The pure model of a turn's changes (louise/checkpoints/diffs.py, review.py, undo.py,
records.py): hunks, taking a hunk or a whole change back from a file changed since,
three-way merges, the summary line, review comments, what the store remembers."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from louise.checkpoints.diffs import (
    counts,
    hunk_state,
    hunks,
    merge3,
    revert_hunk,
    split_lines,
    take_back,
)
from louise.checkpoints.records import NoSuchTurn, StoreState, TurnRecord, pick_turn
from louise.checkpoints.review import comments_prompt, file_review, quote, summary
from louise.checkpoints.snapshots import Snapshot
from louise.checkpoints.undo import ABSENT_CONTENT, FilePlan, Step, take_back_steps

TWENTY = b"".join(b"line %d\n" % n for n in range(1, 21))


def edited(text: bytes, **lines: bytes) -> bytes:
    """`text` with some of its lines (`l3=b"…\\n"`) replaced."""
    out = split_lines(text)
    for name, line in lines.items():
        out[int(name[1:]) - 1] = line
    return b"".join(out)


line_lists = st.lists(st.sampled_from([b"a\n", b"b\n", b"c\n", b"d\n", b"\r\n", b"e"]),
                      max_size=30)


@given(st.binary(max_size=200))
def test_lines_join_back_to_the_same_bytes(data: bytes) -> None:
    assert b"".join(split_lines(data)) == data


@given(line_lists, line_lists)
def test_taking_back_every_hunk_one_by_one_gives_the_old_text(old: list[bytes],
                                                               new: list[bytes]) -> None:
    current = list(new)
    for hunk in reversed(hunks(old, new)):
        back = revert_hunk(new, current, hunk)
        assert back is not None
        current = back
    assert b"".join(current) == b"".join(old)


def test_a_hunk_taken_back_leaves_the_other_hunks() -> None:
    after = edited(TWENTY, l2=b"agent two\n", l18=b"agent eighteen\n")
    found = hunks(split_lines(TWENTY), split_lines(after))
    assert len(found) == 2
    first = revert_hunk(split_lines(after), split_lines(after), found[0])
    assert first is not None
    assert b"".join(first) == edited(TWENTY, l18=b"agent eighteen\n")
    assert hunk_state(split_lines(after), first, found[0]) == "reverted"
    assert hunk_state(split_lines(after), first, found[1]) == "applied"


def test_a_hunk_is_taken_back_around_edits_made_since_even_in_its_context() -> None:
    after = edited(TWENTY, l10=b"agent ten\n")
    (hunk,) = hunks(split_lines(TWENTY), split_lines(after))
    mine = edited(after, l8=b"my eight\n", l1=b"my one\n")  # l8 is in the hunk's context
    back = revert_hunk(split_lines(after), split_lines(mine), hunk)
    assert back is not None
    assert b"".join(back) == edited(TWENTY, l8=b"my eight\n", l1=b"my one\n")


def test_a_hunk_whose_lines_changed_since_is_a_conflict() -> None:
    after = edited(TWENTY, l10=b"agent ten\n")
    (hunk,) = hunks(split_lines(TWENTY), split_lines(after))
    mine = split_lines(edited(after, l10=b"my ten\n"))
    assert revert_hunk(split_lines(after), mine, hunk) is None
    assert hunk_state(split_lines(after), mine, hunk) == "changed"


def test_merge3_puts_both_sides_changes_together_and_names_a_conflict() -> None:
    base = split_lines(TWENTY)
    ours = split_lines(edited(TWENTY, l3=b"ours\n"))
    theirs = split_lines(edited(TWENTY, l15=b"theirs\n"))
    merged, conflicts = merge3(base, ours, theirs)
    assert conflicts == []
    assert b"".join(merged) == edited(TWENTY, l3=b"ours\n", l15=b"theirs\n")
    clash = split_lines(edited(TWENTY, l3=b"theirs too\n"))
    merged, conflicts = merge3(base, ours, clash)
    assert [c.line for c in conflicts] == [3]
    assert b"".join(merged) == b"".join(ours), "the file is left as it is"


def test_taking_a_change_back_keeps_what_changed_since_elsewhere() -> None:
    after = edited(TWENTY, l5=b"agent\n")
    now = edited(after, l15=b"mine\n")
    back = take_back(TWENTY, after, now)
    assert back.ok and back.result == edited(TWENTY, l15=b"mine\n")
    clash = take_back(TWENTY, after, edited(after, l5=b"mine\n"))
    assert not clash.ok and clash.conflicts and clash.conflicts[0].line == 5


@pytest.mark.parametrize(("before", "after", "now", "result", "ok"), [
    (None, b"new\n", b"new\n", None, True),  # created: removed
    (None, b"new\n", b"new, then mine\n", b"new, then mine\n", False),
    (b"old\n", None, None, b"old\n", True),  # removed: restored
    (b"old\n", None, b"someone else's\n", b"someone else's\n", False),
    (b"old\n", b"new\n", b"old\n", b"old\n", True),  # already back
    (b"a\r\nb\r\n", b"a\r\nc", b"a\r\nc", b"a\r\nb\r\n", True),  # bytes, line endings
])
def test_take_back_of_whole_files(before: bytes | None, after: bytes | None,
                                  now: bytes | None, result: bytes | None, ok: bool) -> None:
    back = take_back(before, after, now)
    assert back.ok is ok
    assert back.result == result


def test_counts_and_the_summary_line() -> None:
    assert counts(TWENTY, edited(TWENTY, l2=b"x\n") + b"more\n") == (2, 1)
    assert counts(None, b"a\nb\n") == (2, 0)
    assert counts(b"\0binary", b"\0other") == (0, 0)
    assert summary([(12, 0), (0, 4), (0, 0)]) == "3 files changed (+12 \u22124)"
    assert summary([(1, 1)]) == "1 file changed (+1 \u22121)"


def test_a_file_review_shows_each_hunk_and_where_it_stands() -> None:
    after = edited(TWENTY, l2=b"agent two\n", l18=b"agent eighteen\n")
    now = edited(TWENTY, l18=b"agent eighteen\n")  # the first hunk was taken back
    review = file_review("notes.txt", TWENTY, after, now)
    assert review.status == "modified" and (review.added, review.removed) == (2, 2)
    assert review.states == ["reverted", "applied"]
    assert review.hunks[0].lines()[:5] == ["@@ -1,5 +1,5 @@", " line 1", "-line 2",
                                           "+agent two", " line 3"]
    assert review.hunks[1].first_changed_line == 18
    assert file_review("gone.txt", b"x\n", None, None).states == ["applied"]
    assert file_review("new.txt", None, b"x\n", None).states == ["reverted"]
    assert "binary" in file_review("b.bin", b"\0a", b"\0b", b"\0b").note


def test_review_comments_are_one_prompt_quoted_with_file_and_line() -> None:
    after = edited(TWENTY, l2=b"agent two\n")
    (hunk,) = hunks(split_lines(TWENTY), split_lines(after))
    text = comments_prompt("turn 3", [
        {"path": "src/x.py", "line": hunk.first_changed_line, "quote": quote(hunk),
         "text": "Why a new name?"},
        {"path": "src/y.py", "line": 0, "quote": [], "text": "   "},  # empty: left out
    ])
    assert text == ("Review comments on your changes (turn 3):\n\nsrc/x.py:2\n"
                    "> -line 2\n> +agent two\nWhy a new name?")


def test_an_undo_takes_the_agents_steps_back_around_the_persons_save() -> None:
    """The person saved the file during the turn (line 15): the agent's change before
    (line 2) and after (line 8) their save go back, theirs stays."""
    first = edited(TWENTY, l2=b"agent\n")
    pre = first
    post = edited(first, l15=b"mine\n")
    last = edited(post, l8=b"agent again\n")
    plan = FilePlan("f", ("file", last, 0o644), ("file", last, 0o644))
    take_back_steps(plan, [Step(("file", TWENTY, 0o644), ("file", pre, 0o644)),
                           Step(("file", post, 0o644), ("file", last, 0o644))])
    assert plan.problem == ""
    assert plan.result == ("file", edited(TWENTY, l15=b"mine\n"), 0o644)


def test_an_undo_removes_a_created_file_and_keeps_a_mode_changed_since() -> None:
    plan = FilePlan("new", ("file", b"x\n", 0o755), ("file", b"x\n", 0o755))
    take_back_steps(plan, [Step(ABSENT_CONTENT, ("file", b"x\n", 0o644))])
    assert plan.result == ABSENT_CONTENT and plan.changes
    plan = FilePlan("f", ("file", b"b\n", 0o755), ("file", b"b\n", 0o755))
    take_back_steps(plan, [Step(("file", b"a\n", 0o644), ("file", b"b\n", 0o644))])
    assert plan.result == ("file", b"a\n", 0o755)


def record(seq: int, session: str, number: int, after: bool = True) -> TurnRecord:
    turn = TurnRecord(seq, session, session.split(":")[0], number, f"prompt {seq}", 1.0,
                      before=Snapshot("git", commit="a" * 40))
    turn.after = Snapshot("git", commit="b" * 40) if after else None
    return turn


def test_the_store_state_round_trips_and_drops_what_does_not_fit() -> None:
    state = StoreState("/w", "git", next_seq=3, turns=[record(1, "claude:s1", 1),
                                                       record(2, "claude:s1", 2)])
    again = StoreState.from_json(state.to_json(), "/w")
    assert again.to_json() == state.to_json()
    raw: dict[str, Any] = state.to_json()
    raw["turns"].append({"seq": "x"})
    raw["turns"][0]["before"] = {"mode": "git", "commit": "../../etc"}
    hostile = StoreState.from_json(raw, "/w")
    assert [t.seq for t in hostile.turns] == [1, 2]
    assert hostile.turns[0].before is None
    assert StoreState.from_json(raw, "/elsewhere").turns == [], "another workspace's file"


def test_a_turn_is_picked_by_session_and_number() -> None:
    state = StoreState("/w", turns=[record(1, "claude:s1", 1), record(2, "codex:s2", 1),
                                    record(3, "claude:s1", 2), record(4, "claude:s1", 3,
                                                                      after=False)])
    assert pick_turn(state).seq == 3, "the newest finished turn of the newest session"
    assert pick_turn(state, "s2").seq == 2
    assert pick_turn(state, "claude:s1", 1).seq == 1
    assert pick_turn(state, seq=4).seq == 4
    with pytest.raises(NoSuchTurn, match="no recorded turn 9"):
        pick_turn(state, "claude:s1", 9)
    with pytest.raises(NoSuchTurn):
        pick_turn(StoreState("/w"))
