"""One awaited Lua call per frame: the chats' edit operations and the outbox's UI work,
applied by `require('louise.render').apply(batch)`.

The applier runs every handler of the batch under `xpcall` and answers which ones failed;
a failed frame is handed to `on_failure` (the engine then sends a full render). The call
is awaited, so a slow Neovim makes bigger batches rather than a growing queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import anyio

from louise.nvim.bridge import LuaCaller
from louise.nvim.outbox import Outbox
from louise.nvim.render import ChatRenderer
from louise.session import Session

log = logging.getLogger("louise.nvim")

FRAME_SECONDS = 0.012  # the steady pace while something streams (~83 frames/s)
# Frames that may go out back to back after an idle spell: the one announcing a prompt and
# the one with its first chunk, a few ms later, both go at once (no first-token delay).
FRAME_BURST = 2
APPLY = "return require('louise.render').apply(...)"
MAX_FAILED_NAMES = 64


def failed_handlers(report: Any) -> frozenset[str]:
    """The handler names of the applier's answer (`nil` or `{failed = {…}}`); anything
    else is read as nothing failed, bounded."""
    if not isinstance(report, dict):
        return frozenset()
    names = report.get("failed")
    if not isinstance(names, list):
        return frozenset()
    return frozenset(str(name) for name in names[:MAX_FAILED_NAMES])


class FrameLoop:
    def __init__(self, ui: LuaCaller, renderer: ChatRenderer, outbox: Outbox,
                 status_for: Callable[[Session], dict[str, Any]],
                 on_failure: Callable[[frozenset[str], dict[str, Any]], None]) -> None:
        self.ui = ui
        self.renderer = renderer
        self.outbox = outbox
        self.status_for = status_for
        self.on_failure = on_failure
        self.frames = 0
        self.failures_in_a_row = 0
        self._wake = anyio.Event()
        self._wake_due = False
        self.pacer = FramePacer()

    def mark(self) -> None:
        """Something waits for the next frame (once per frame, not once per chunk)."""
        if not self._wake_due:
            self._wake_due = True
            self._wake.set()

    def take(self) -> dict[str, Any] | None:
        """This frame's batch, or None when there is nothing to send."""
        batch = self.renderer.take_batch(self.status_for)
        if self.outbox.pending:
            batch.update(self.outbox.take())
        elif not (batch["chats"] or batch["status"]):
            return None
        return batch

    async def send(self, batch: dict[str, Any]) -> None:
        try:
            failed = failed_handlers(await self.ui.exec_lua(APPLY, batch))
        except Exception as exc:  # the call itself failed: none of it can be trusted
            log.warning("render batch failed: %s", exc)
            failed = frozenset(batch)
        self.frames += 1
        if failed:
            self.failures_in_a_row += 1
            log.warning("frame %d: handlers failed in Neovim: %s", self.frames,
                        ", ".join(sorted(failed)))
            self.on_failure(failed, batch)
        else:
            self.failures_in_a_row = 0

    async def read_slot(self) -> None:
        """The agents' read pace while they stream (`SessionRegistry(read_pace=…)`): until
        the next frame that is not yet due may go. A chunk read earlier would only wait
        for that frame; read then, all chunks since the last frame take one wake-up of
        the reader (and mark the frame, which then goes at once). After an idle spell the
        slot is now: the leading edge is kept."""
        now = time.monotonic()
        delay = self.pacer.next_slot(now, pending=self._wake_due) - now
        if delay > 0:
            await anyio.sleep(delay)

    async def run(self) -> None:
        """Frames on the leading edge: a change after an idle spell goes out at once, and
        so does the next one (the prompt's frame, then its first chunk); a steady stream
        gets one frame per FRAME_SECONDS (a token bucket of FRAME_BURST frames)."""
        pacer = self.pacer
        while True:
            await self._wake.wait()
            delay = pacer.delay(time.monotonic())
            if delay > 0:
                await anyio.sleep(delay)  # changes meanwhile join this frame
            pacer.spend(time.monotonic())
            self._wake = anyio.Event()
            self._wake_due = False
            batch = self.take()
            if batch is not None:
                await self.send(batch)
            if self.outbox.pending:  # work sent in slices (terminal output) goes on
                self.mark()


class FramePacer:
    """A token bucket: FRAME_BURST frames at once after idle, then one per interval."""

    def __init__(self, interval: float = FRAME_SECONDS, burst: int = FRAME_BURST) -> None:
        self.interval = interval
        self.burst = burst
        self.tokens = float(burst)
        self.at = -1e9  # when `tokens` was counted

    def _tokens(self, now: float) -> float:
        return min(float(self.burst), self.tokens + (now - self.at) / self.interval)

    def delay(self, now: float) -> float:
        """Seconds until a frame may go (0: now)."""
        return max(0.0, (1.0 - self._tokens(now)) * self.interval)

    def next_slot(self, now: float, pending: bool) -> float:
        """When a frame may go after the one already due (`pending`), if any."""
        tokens = self._tokens(now)
        start = now
        if pending:
            start = now + max(0.0, (1.0 - tokens) * self.interval)
            tokens = max(0.0, tokens - 1.0) if start == now else 0.0
        return start + max(0.0, (1.0 - tokens) * self.interval)

    def spend(self, now: float) -> None:
        self.tokens = max(0.0, self._tokens(now) - 1.0)
        self.at = now
