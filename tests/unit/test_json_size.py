"""A text's size inside a JSON line as louise writes it, and its longest end within a byte
budget (louise/acp/json_size.py, pure)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from louise.acp.json_size import json_bytes, json_tail


def encoded(text: str) -> int:
    """What louise's writer makes of `text` (rpc_state._encode), quotes not counted."""
    return len(json.dumps(text, ensure_ascii=False).encode()) - 2


TEXTS = st.text(alphabet=st.sampled_from(
    ["a", " ", "é", "€", "😀", '"', "\\", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1b",
     "\x7f", "\u2028"]), max_size=300)


@given(TEXTS)
def test_the_size_is_the_encoded_size(text: str) -> None:
    assert json_bytes(text.encode()) == encoded(text)


@settings(max_examples=300)
@given(TEXTS, st.integers(min_value=0, max_value=400))
def test_the_tail_is_the_longest_end_within_the_budget(text: str, budget: int) -> None:
    tail, cut = json_tail(text, budget)
    assert text.endswith(tail)
    assert cut == (tail != text)
    assert encoded(tail) <= budget
    if cut:
        longer = text[len(text) - len(tail) - 1:]
        assert encoded(longer) > budget, "one more character would not fit"


def test_nul_bytes_count_six_and_a_long_text_is_cut_across_blocks() -> None:
    assert json_bytes(b"\x00") == 6
    text = "\x00" * (1024 * 1024) + "end"
    tail, cut = json_tail(text, 6 * 100_000 + 3)
    assert cut and tail == "\x00" * 100_000 + "end"
    assert json_tail("plain", 5) == ("plain", False)
    assert json_tail("é" * 10, 5) == ("éé", True), "never half a character"
