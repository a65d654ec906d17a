"""What a terminal tells those who mirror it (`TerminalHost.subscribe`): it was created,
it wrote output (raw bytes, and their text decoded so that no character is split), it
exited (`ExitStatus`: an exit code or a signal's name)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """How a command ended: an exit code, or the name of the signal that ended it."""

    exit_code: int | None
    signal: str | None

    @classmethod
    def from_returncode(cls, returncode: int) -> ExitStatus:
        if returncode >= 0:
            return cls(returncode, None)
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return cls(None, name)

    def to_wire(self) -> dict[str, Any]:
        return {"exitCode": self.exit_code, "signal": self.signal}


@dataclass(frozen=True, slots=True)
class TerminalCreated:
    """A terminal the agent asked for was started."""

    terminal_id: str
    command: str
    args: tuple[str, ...]
    cwd: str


@dataclass(frozen=True, slots=True)
class TerminalOutput:
    """A chunk of output. `data` is raw (escape sequences intact); `text` is its decoding,
    holding back a character split across chunks until it completes. On subscribe with
    replay, one chunk with `replay=True` carries the output retained so far."""

    terminal_id: str
    data: bytes
    text: str
    replay: bool = False


@dataclass(frozen=True, slots=True)
class TerminalExited:
    """A terminal's command ended."""

    terminal_id: str
    status: ExitStatus


TerminalEvent = TerminalCreated | TerminalOutput | TerminalExited
TerminalListener = Callable[[TerminalEvent], None]
