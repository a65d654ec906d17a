"""`louise chat` at a quota limit: without `--wait` a refused turn is exit status 75
(EX_TEMPFAIL: try again later) with when the limit resets; with `--wait` the turn is
parked until the reset and sent again, with a countdown on stderr (updated in place on a
terminal, one line otherwise)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import anyio

    from louise.cli.commands._common import CliError
    from louise.registry.events import RegistryEvent
    from louise.registry.governor import QuotaRefused

EXIT_TEMPFAIL = 75
TICK = 1.0


def refused_failure(agent: str, refusal: QuotaRefused, now: float) -> CliError:
    """The `louise: …` line (exit 75) for a turn refused for quota, without `--wait`."""
    from louise.cli.commands._common import CliError, local_zone
    from louise.limits import format_until, format_utc

    message = str(refusal).partition("\n")[0]
    resets = refusal.block.resets_at
    when = (f"it resets in {format_until(resets, now)} ({format_utc(resets, local=local_zone())})"
            if resets is not None and resets > now else "its reset time is not known")
    return CliError(f"{message}; {when}. `louise chat --wait` waits for it and sends the "
                    "prompt again", EXIT_TEMPFAIL)


def countdown(seconds: float) -> str:
    whole = max(0, int(seconds + 0.999))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ParkedCountdown:
    """Prints a parked turn's wait on stderr: a line when it parks, then (on a terminal) a
    countdown updated in place every second, and a line when it goes again."""

    def __init__(self, session_id: str | None, err: TextIO | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        import time

        self.session_id = session_id
        self.err = err if err is not None else sys.stderr
        self.clock = time.time if clock is None else clock
        self.until: float | None = None
        self.wake: anyio.Event | None = None
        self._shown = False

    def __call__(self, event: RegistryEvent) -> None:
        from louise.cli.commands._common import local_zone
        from louise.cli.terminal_text import safe
        from louise.limits import format_utc
        from louise.registry.events import SessionParked, SessionUnparked

        if getattr(event, "session_id", None) != self.session_id:
            return
        if isinstance(event, SessionParked):
            self.until = event.until
            what = "the reset" if event.known else "another try (reset time not given)"
            self._end_line()
            self.err.write(f"louise: {safe(event.reason)}; parked until "
                           f"{format_utc(event.until, local=local_zone())}, {what}: the "
                           "prompt goes again then (Ctrl-C to stop)\n")
            self.err.flush()
            if self.wake is not None:
                self.wake.set()
        elif isinstance(event, SessionUnparked):
            self.until = None
            self._end_line()
            if event.outcome == "resend":
                self.err.write("louise: sending the prompt again\n")
                self.err.flush()

    def _end_line(self) -> None:
        if self._shown:
            self.err.write("\n")
            self._shown = False

    async def run(self) -> None:
        """The in-place countdown, while parked (on a terminal only)."""
        import anyio

        if not self.err.isatty():
            return
        while True:
            if self.until is None:
                self.wake = anyio.Event()
                await self.wake.wait()
                continue
            left = self.until - self.clock()
            self.err.write(f"\rlouise: waiting for the reset: {countdown(left)} left ")
            self.err.flush()
            self._shown = True
            await anyio.sleep(TICK)
