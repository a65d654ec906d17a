"""A session's history held once and compactly (issue 25, item 5): a message's text is
packed (UTF-8, zlib) as it streams and when it is finished, and every reader gets it back
exactly: `Message.text`, equality, the chat's lines, the Markdown export.
"""

from __future__ import annotations

import gc
import random
import tracemalloc
from typing import Any

import pytest

from louise.acp.schema import parse_update
from louise.nvim.chat_lines import message_lines
from louise.session import Message, Session, records
from louise.storage.transcript import to_markdown

SID = "ce69273e-0d0b-4bd4-9cf4-0d3a3e7f1a10"
MB5 = 5_000_000
# Words of a coding agent's reply: generated text compresses about as well as prose
# (~2.8x with zlib's fastest level, the repository's README 2.5x), not as a repeated line.
WORDS_TEXT = ("the a session model keeps what an agent said in each turn and louise shows it chat "
         "window where person reads while works on files tests commands runs reply text "
         "stream chunk frame buffer engine memory history export resume preview search "
         "function return value error line column path config option python lua neovim "
         "install update delete rename move copy check build deploy")
WORDS = WORDS_TEXT.split()


def prose(chars: int, seed: int = 25, accents: bool = False) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < chars:
        roll = rng.random()
        if roll < 0.1:
            word = str(rng.randrange(10**6))
        elif roll < 0.15:
            word = f"`{rng.choice(WORDS)}_{rng.choice(WORDS)}()`"
        elif accents and roll < 0.2:
            word = rng.choice(("café", "naïve", "→", "über", "日本語", "✓"))
        else:
            word = rng.choice(WORDS)
        word += "\n" if rng.random() < 0.08 else " "
        out.append(word)
        size += len(word)
    return "".join(out)[:chars]


def chunk(text: str, message_id: str = "m1") -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "messageId": message_id,
            "content": {"type": "text", "text": text}}


def new_session() -> Session:
    session = Session(SID, "claude", "/projects/hello")
    session.mark_ready()
    return session


def stream_turn(session: Session, text: str, size: int = 1000) -> None:
    """One turn whose reply is `text`, in chunks of `size` (new strings, as decoding a
    line makes them)."""
    session.begin_turn([{"type": "text", "text": "Go"}])
    update = parse_update(chunk("", f"m{session.turn}"))
    for start in range(0, len(text), size):
        update.raw["content"] = {"type": "text", "text": text[start:start + size]}
        session.apply(update)
    session.end_turn("end_turn")


def held_after_turn(text: str) -> int:
    """Bytes the session still holds (tracemalloc) after a turn whose reply is `text`."""
    session = new_session()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        stream_turn(session, text)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert session.messages()[-1].text == text
    return held


def test_a_5_mb_reply_is_held_in_less_than_its_size() -> None:
    """main held a 5 MB reply at 1.02x its text (a string per 64 chunks); packed, about
    0.36x for text that compresses like prose."""
    text = prose(MB5)
    held = held_after_turn(text)
    assert held < 0.6 * len(text), f"{held / len(text):.2f} x the text"


def test_a_non_ascii_reply_is_held_as_utf8_not_as_wide_characters() -> None:
    """One non-ASCII character makes a str take 2-4 bytes a character (main: 2x the
    UTF-8 of this text, 4x with the emoji-wide 日本語 … ✓ range); packed it is smaller than
    its UTF-8."""
    text = prose(MB5 // 5, accents=True)
    utf8 = len(text.encode())
    held = held_after_turn(text)
    assert held < 0.6 * utf8, f"{held / utf8:.2f} x its UTF-8"


def test_packed_text_reads_back_exactly_at_every_stage(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setattr(records, "PACK_CHARS", 50)  # many blocks from a short text
    monkeypatch.setattr(records, "SEAL_PACK_CHARS", 1)
    pieces = ["ascii ", "café ", "😀", "\ud800 lone surrogate ", "x" * 120, "\n" * 3, "end"]
    message = Message("agent", "m1")
    expected = ""
    for round_ in range(30):
        for piece in pieces:
            message.append(piece)
            expected += piece
        assert message.text == expected, round_  # read while it streams
    assert message.packed, "the text was packed as it streamed"
    message.seal()
    assert not message.parts and message.text == expected
    message.append("more after the seal")
    expected += "more after the seal"
    assert message.text == expected
    # Equal messages have equal text however it is held.
    other = Message("agent", "m1")
    for char in expected:
        other.append(char)
    assert other == message and other.packed != message.packed
    other.append("!")
    assert other != message


def test_a_finished_short_message_stays_a_string_unless_it_is_not_ascii() -> None:
    session = new_session()
    stream_turn(session, "short reply")
    stream_turn(session, "réponse " * 40)
    stream_turn(session, "x" * records.SEAL_PACK_CHARS)
    replies = [m for m in session.messages() if m.role == "agent"]
    assert [bool(m.packed) for m in replies] == [False, True, True]
    assert [m.text for m in replies] == ["short reply", "réponse " * 40,
                                         "x" * records.SEAL_PACK_CHARS]


def test_the_chat_and_the_export_read_a_packed_history_as_it_was(
        monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [prose(200_000, seed=1), prose(3_000, seed=2, accents=True), "ok"]

    def session_of() -> Session:
        session = new_session()
        for text in texts:
            stream_turn(session, text, size=700)
        return session

    packed = session_of()
    assert sum(bool(m.packed) for m in packed.messages()) == 2
    for name in ("PACK_CHARS", "SEAL_PACK_CHARS", "NON_ASCII_PACK_CHARS"):
        monkeypatch.setattr(records, name, 10**9)
    plain = session_of()
    assert not any(m.packed for m in plain.messages())
    assert to_markdown(packed) == to_markdown(plain)
    assert [message_lines(m, "claude") for m in packed.messages()] == \
        [message_lines(m, "claude") for m in plain.messages()]
    assert packed.messages() == plain.messages()
