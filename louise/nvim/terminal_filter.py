"""What of a command's output may reach Neovim's terminal emulator (`nvim_open_term`).

The output of an agent terminal is the agent's (and the repository's) text: fed raw, an
OSC 52 sets the clipboard (Neovim hands it to the clipboard provider), OSC 0/1/2 sets
`b:term_title`, OSC 8 makes links, DCS/APC/PM/SOS reach handlers. `TerminalFilter` keeps
what real command output uses (SGR colours, cursor movement, erasing, scrolling regions,
cursor visibility, tab, backspace, carriage return) and drops every other escape
sequence and control character whole, in their 7-bit and 8-bit (C1, U+0080..U+009F)
forms alike. A kept 8-bit sequence goes out in its 7-bit form.

One filter per terminal keeps its state between chunks (a sequence split across two
frames is judged whole), bounded: an incomplete sequence held back is at most
`MAX_SEQUENCE_CHARS` long (a longer one is dropped), and a control string (OSC, DCS, …)
that never ends stops being dropped after `MAX_STRING_CHARS` (the rest shows as text, so
a missing terminator cannot hide the rest of the output). Newlines become CR LF (the
process writes to a pipe, not a tty). Pure: no I/O.
"""

from __future__ import annotations

import re

ESC = "\x1b"
MAX_SEQUENCE_CHARS = 128  # a CSI or ESC sequence held back for the next chunk, at most
MAX_STRING_CHARS = 64 * 1024  # an OSC/DCS/SOS/PM/APC string dropped while it lasts, at most

# Outside sequences: every character the terminal would act on, except the harmless ones
# kept as they are (BS, TAB, LF, CR). DEL and the C1 range are in it.
_SPECIAL = re.compile("[\x00-\x07\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Inside a control string: what ends it (BEL, CAN, SUB, ESC for ESC \ or a new sequence,
# the 8-bit ST).
_STRING_END = re.compile("[\x07\x18\x1a\x1b\x9c]")
# A CSI's body after its introducer: parameters, intermediates, then the final byte.
_CSI_BODY = re.compile("([0-?]*)([ -/]*)([@-~])?")
_CSI_PARAMS = re.compile("[0-9;:]*")
_SKIPPABLE = re.compile("[ -?]*")  # parameter and intermediate bytes of an over-long CSI
_INTERMEDIATES = re.compile("[ -/]*")

# CSI final bytes kept with plain numeric parameters: SGR, cursor movement and position,
# erasing in line/display, inserting and deleting characters and lines, scrolling, tab
# stops forward and back, the scrolling region, save/restore cursor.
_CSI_KEPT = frozenset("mABCDEFGHfdea`JKXLMP@STIZrsu")
# DEC private modes a command may set and reset: the cursor's visibility, autowrap.
_PRIVATE_MODES_KEPT = frozenset({"?25", "?7"})
# ESC + one character kept: save/restore cursor (7, 8), index, next line, reverse index,
# keypad modes. Their C1 forms IND (0x84), NEL (0x85) and RI (0x8D) map onto D, E, M.
_ESC_KEPT = frozenset("78DEM=>")
_STRINGS = frozenset("]PX^_")  # OSC, DCS, SOS, PM, APC
# Text and complete sequences kept exactly as they are (what `_sequence` would keep), in
# one match: coloured output costs one regex pass, not a Python step per sequence.
_KEPT_RUN = re.compile(
    "(?:[^\x00-\x1f\x7f-\x9f]|[\x08\t\n\r]"
    f"|\x1b\\[[0-9;:]{{0,{MAX_SEQUENCE_CHARS - 3}}}[{re.escape(''.join(sorted(_CSI_KEPT)))}]"
    f"|\x1b\\[\\?[0-9;:]{{0,{MAX_SEQUENCE_CHARS - 4}}}[JK]"
    "|\x1b\\[\\?(?:25|7)[hl]|\x1b[78DEM=>])*")


def _csi_kept(params: str, intermediates: str, final: str) -> bool:
    if intermediates:
        return False
    if final in "hl":
        return params in _PRIVATE_MODES_KEPT
    if params.startswith("?") and final in "JK":
        params = params[1:]  # selective erase: the same as J/K here
    return final in _CSI_KEPT and _CSI_PARAMS.fullmatch(params) is not None


class TerminalFilter:
    """Feed a terminal's output text in chunks; each `feed` returns what may be shown."""

    __slots__ = ("_held", "_in_string", "_skipping_csi", "_string_chars")

    def __init__(self) -> None:
        self._held = ""  # an incomplete sequence from the previous chunk (bounded)
        self._in_string = False  # inside an OSC/DCS/SOS/PM/APC string being dropped
        self._string_chars = 0
        self._skipping_csi = False  # inside an over-long CSI being dropped

    def feed(self, text: str) -> str:
        if self._held:
            text, self._held = self._held + text, ""
        elif not (self._in_string or self._skipping_csi) and _SPECIAL.search(text) is None:
            return text.replace("\n", "\r\n")  # the common case: nothing to judge
        out: list[str] = []
        at, size = 0, len(text)
        while at < size:
            if self._in_string:
                at = self._skip_string(text, at)
                continue
            if self._skipping_csi:
                end = _SKIPPABLE.match(text, at)
                at = end.end() if end is not None else at
                if at < size:
                    self._skipping_csi = False
                    if "@" <= text[at] <= "~":
                        at += 1  # its final byte: the sequence is over
                continue
            run = _KEPT_RUN.match(text, at)
            start = run.end() if run is not None else at
            if start > at:
                out.append(text[at:start])
            at = self._sequence(text, start, out) if start < size else start
        return "".join(out).replace("\n", "\r\n")

    def _skip_string(self, text: str, at: int) -> int:
        """Drop a control string's content from `at`; returns where reading goes on."""
        found = _STRING_END.search(text, at)
        end = found.start() if found is not None else len(text)
        room = MAX_STRING_CHARS - self._string_chars
        if end - at > room:
            self._in_string = False  # never terminated: what follows is shown as text
            return at + room
        self._string_chars += end - at
        if found is None:
            return end
        if text[end] != ESC:
            self._in_string = False  # BEL, ST, CAN or SUB ends it
            return end + 1
        if end + 1 == len(text):
            self._held = ESC  # ESC \ or a new sequence: the next chunk tells
            return end + 1
        self._in_string = False
        return end + 2 if text[end + 1] == "\\" else end  # else ESC starts a new sequence

    def _sequence(self, text: str, start: int, out: list[str]) -> int:
        """Judge the control character or sequence at `start`; returns where it ends."""
        char = text[start]
        if char == ESC:
            if start + 1 == len(text):
                self._held = ESC
                return start + 1
            kind, body = text[start + 1], start + 2
        elif "\x80" <= char <= "\x9f":
            kind, body = chr(ord(char) - 0x40), start + 1  # C1: the 7-bit form's letter
        else:
            return start + 1  # another control character (NUL, BEL, SO, SI, VT, FF, …)
        if kind == "[":
            return self._csi(text, start, body, out)
        if kind in _STRINGS:
            self._in_string, self._string_chars = True, 0
            return body
        if kind in _ESC_KEPT:
            out.append(ESC + kind)
            return body
        if char == ESC and " " <= kind <= "/":  # ESC + intermediates + final (charsets, …)
            end = _INTERMEDIATES.match(text, start + 1)
            stop = end.end() if end is not None else body
            if stop == len(text):
                self._hold(text, start)
                return stop
            return stop + 1 if "0" <= text[stop] <= "~" else stop
        if char == ESC and kind < " ":
            return start + 1  # ESC then a control: the ESC alone is dropped
        return body  # anything else (RIS, single shifts, DECID, a stray ST, …): dropped

    def _csi(self, text: str, start: int, body: int, out: list[str]) -> int:
        found = _CSI_BODY.match(text, body)
        assert found is not None  # every part of the pattern is optional
        params, intermediates, final = found.groups()
        end = found.end()
        if final is None:
            if end == len(text):
                self._hold(text, start)  # the rest of it comes in the next chunk
                return end
            return end  # broken off by another character: dropped, that one is read
        if end - start <= MAX_SEQUENCE_CHARS and _csi_kept(params, intermediates, final):
            out.append(ESC + "[" + params + final)
        return end

    def _hold(self, text: str, start: int) -> None:
        """Keep an incomplete sequence for the next chunk, if it is short enough; a longer
        one is dropped up to its final byte."""
        if len(text) - start <= MAX_SEQUENCE_CHARS:
            self._held = text[start:]
        else:
            self._skipping_csi = True
