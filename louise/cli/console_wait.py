"""`louise chat` is never silent while it waits: while the agent starts and while a turn
runs with nothing printed, stderr says how long it has been (`louise: starting claude ·
3s`, `louise: working 12s`) and the agent's last note of its own state (codex's
"Reconnecting... 2/5"). On a terminal the line is updated in place every second (a
carriage return and spaces: no escape sequence) and erased before anything else is
printed; otherwise a plain line every PLAIN_EVERY seconds
of quiet, never inside an unfinished line where it shows (the reply's, when stdout and
stderr show in one place)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

import anyio

from louise.cli.output import put
from louise.cli.terminal_text import safe

TICK = 1.0
TTY_AFTER = 1.0  # quiet this long before the line shows on a terminal
PLAIN_EVERY = 5.0  # a plain line after this long quiet, and again as long as it lasts


def elapsed(seconds: float) -> str:
    """`12s`, `3m 05s`, `1h 02m`: a wait as a person reads it."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


@dataclass
class WaitingLine:
    """The wait shown on `err`. `begin(phase)` starts one (`starting claude`, `working`),
    `end()` stops it; `output()` is called before anything else is printed (it erases the
    line on a terminal and restarts the quiet); `can_draw()` says whether a line may be
    drawn now (no unfinished line, no question on the terminal, no permission waiting)."""

    err: TextIO
    tty: bool
    can_draw: Callable[[], bool] = lambda: True
    clock: Callable[[], float] = time.monotonic
    phase: str | None = None
    note: str | None = None  # the agent's last note, with its name
    _since: float = 0.0
    _quiet_since: float = 0.0
    _last_plain: float = 0.0
    _shown: int = field(default=0)  # the width of the line drawn on the terminal

    def begin(self, phase: str) -> None:
        self.erase()
        now = self.clock()
        self.phase, self.note = phase, None
        self._since = self._quiet_since = self._last_plain = now

    def end(self) -> None:
        self.erase()
        self.phase = self.note = None

    def set_note(self, note: str | None) -> None:
        self.note = note

    def output(self) -> None:
        """Something else is printed now: off the line, and the quiet starts again."""
        self.erase()
        self._quiet_since = self._last_plain = self.clock()

    def echoed(self, width: int) -> None:
        """The terminal echoed `width` columns after the line (`^C`): erased with it."""
        if self._shown:
            self._shown += width

    def erase(self) -> None:
        # Spaces over it, not an escape sequence: nothing but text reaches the terminal.
        if self._shown:
            put(self.err, "\r" + " " * self._shown + "\r")
            self._shown = 0

    def text(self, now: float) -> str:
        phase = self.phase or ""
        sep = " · " if phase.startswith("starting") else " "
        line = f"louise: {phase}{sep}{elapsed(now - self._since)}"
        return f"{line} · {self.note}" if self.note else line

    def tick(self) -> None:
        if self.phase is None:
            return
        if not self.can_draw():
            self.erase()
            return
        now = self.clock()
        if self.tty:
            if now - self._quiet_since >= TTY_AFTER:
                # Within the terminal's width: a wrapped line is not erased by a return.
                width = shutil.get_terminal_size().columns - 1
                text = safe(self.text(now))
                text = text if len(text) <= width else text[:max(width - 1, 0)] + "…"
                pad = " " * max(0, self._shown - len(text))
                put(self.err, "\r" + text + pad)
                self._shown = max(len(text), self._shown)
        elif now - self._last_plain >= PLAIN_EVERY:
            put(self.err, safe(self.text(now)) + "\n")
            self._last_plain = now

    async def run(self) -> None:
        while True:
            self.tick()
            await anyio.sleep(TICK)
