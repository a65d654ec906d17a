"""One Lua call per frame: the chats' edit operations and the outbox's UI work, applied
by `require('louise.render').apply(batch)`.

The applier runs every handler of the batch under `xpcall` and answers which ones failed;
a failed frame is handed to `on_failure` (the engine then sends a full render). A frame
is sent at once and its answer read when the next frame is due (or once nothing more
came for ANSWER_LATER_SECONDS): the answer, back a millisecond later, does not wake the
engine on its own, so a streaming frame costs it one wake-up, its clock. One frame is in
flight at most: a slow Neovim makes bigger batches rather than a growing queue.

While agents stream, their readers are parked here and each frame's slot is a timer's
callback: it reads them, runs their handlers and sends the frame, one round of the
engine's loop per frame (the reader's, the loop task's and the channel's own wake-ups
were ~3.4 rounds, ~0.3 ms of CPU a frame on a shared VM: bench/engine_profile.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from louise.nvim.bridge import LuaCaller, PostedLua
from louise.nvim.outbox import Outbox
from louise.nvim.render import ChatRenderer
from louise.session import Session

log = logging.getLogger("louise.nvim")

FRAME_SECONDS = 0.012  # the steady pace while something streams (~83 frames/s)
# Frames that may go out back to back after an idle spell: the one announcing a prompt and
# the one with its first chunk, a few ms later, both go at once (no first-token delay);
# and a chat's first prompt, typed while its agent started, goes as the chat is ready: the
# ready frame, the prompt's and its first chunk's come within two intervals (with two, the
# first chunk waited up to ~5 ms for its token: bench/startup.py).
FRAME_BURST = 3
# A frame's answer is read with the next frame, or after this long without one.
ANSWER_LATER_SECONDS = 2 * FRAME_SECONDS
# A slot's timer may run this much before the frame's time: the frame goes all the same.
SLOT_EARLY_SECONDS = 0.001
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
        # The frame loop's wait, ended by `mark` (or by the answer's deadline). The loop's
        # own primitives, not anyio's: this runs every frame on the engine's asyncio loop.
        self._waiter: asyncio.Future[None] | None = None
        self._wake_due = False
        self.pacer = FramePacer()
        self._in_flight: tuple[PostedLua, dict[str, Any]] | None = None
        # Streaming agents' readers parked with their pull (`ReadSlot.park`): read in this
        # loop's step at each frame's slot, before its batch is taken.
        self._parked: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._next_pull = 0.0  # when the parked readers are read next (time.monotonic)
        self._pulling = False  # `run` runs: it reads parked readers
        self.read_slot = ReadSlot(self)
        # While readers are parked, each slot is a timer's callback (`_on_slot`) that sends
        # the frame itself when it can go at once, and wakes `run` only when it cannot.
        self._post_nowait: Callable[..., PostedLua | None] | None = getattr(
            ui, "post_lua_nowait", None)
        self._slot_result: asyncio.Future[bool] | None = None
        self._slot_timer: asyncio.TimerHandle | None = None
        self._slot_loop: asyncio.AbstractEventLoop | None = None  # `_slots`' loop
        self._unsent: dict[str, Any] | None = None  # a slot's batch left for `run` to send
        self._outbox_left = False  # the outbox still had work after the last `take`

    def mark(self) -> None:
        """Something waits for the next frame (once per frame, not once per chunk)."""
        if not self._wake_due:
            self._wake_due = True
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self, timeout: float | None) -> None:
        """Until `mark`, or `timeout` seconds."""
        if self._wake_due:
            return
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        timer = None if timeout is None else loop.call_later(timeout, self._wake)
        try:
            await self._waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    def take(self) -> dict[str, Any] | None:
        """This frame's batch, or None when there is nothing to send."""
        batch = self.renderer.take_batch(self.status_for)
        if self.outbox.pending:
            batch.update(self.outbox.take())
            self._outbox_left = self.outbox.pending
        else:
            # Nothing left: the slot need not ask the outbox again (a scan of every kind
            # of UI work, twice a frame while a chat streams).
            self._outbox_left = False
            if not (batch["chats"] or batch["status"]):
                return None
        return batch

    async def send(self, batch: dict[str, Any]) -> None:
        """Send a frame (its answer is read by the next `settle`)."""
        await self.settle()
        try:
            call = await self.ui.post_lua(APPLY, batch)
        except Exception as exc:  # the call itself failed: none of it can be trusted
            self._answered(batch, exc)
            return
        self._in_flight = (call, batch)

    async def settle(self) -> None:
        """Read the answer of the frame in flight, if any (waiting for it if need be)."""
        if self._in_flight is None:
            return
        call, batch = self._in_flight
        self._in_flight = None
        try:
            report = await call.result()
        except Exception as exc:
            self._answered(batch, exc)
        else:
            self._answered(batch, report)

    def _answered(self, batch: dict[str, Any], report: Any) -> None:
        if isinstance(report, Exception):  # the call itself failed: none of it can be trusted
            log.warning("render batch failed: %s", report)
            failed = frozenset(batch)
        else:
            failed = failed_handlers(report)
        self.frames += 1
        if failed:
            self.failures_in_a_row += 1
            log.warning("frame %d: handlers failed in Neovim: %s", self.frames,
                        ", ".join(sorted(failed)))
            self.on_failure(failed, batch)
        else:
            self.failures_in_a_row = 0

    async def wait_read_slot(self) -> None:
        """The agents' read pace while they stream, for a reader that reads itself: until
        the next frame that is not yet due may go. A chunk read earlier would only wait
        for that frame; read then, all chunks since the last frame take one wake-up of
        the reader (and mark the frame, which then goes at once). After an idle spell the
        slot is now: the leading edge is kept."""
        now = time.monotonic()
        delay = self.pacer.next_slot(now, pending=self._wake_due) - now
        if delay > 0:
            await asyncio.sleep(delay)

    async def park(self, pull: Callable[[], bool]) -> None:
        """A streaming reader's pace, read for it: `pull` is called in this loop's step
        at each frame's slot (the slot `wait_read_slot` would wait for), before the
        frame's batch is taken, until it answers False; then this returns. A streamed
        chunk so costs one wake-up of the engine, the frame's, instead of the reader's
        and the frame loop's each. Without a running loop: `wait_read_slot`."""
        if not self._pulling:
            await self.wait_read_slot()
            return
        if not self._parked:
            self._next_pull = self.pacer.next_slot(time.monotonic(), pending=self._wake_due)
        entry = (pull, asyncio.get_running_loop().create_future())
        self._parked.append(entry)
        self._wake()  # a loop waiting for a change reads the parked readers from now on
        try:
            await entry[1]
        finally:
            if entry in self._parked:
                self._parked.remove(entry)

    def _pull_parked(self) -> None:
        """Read every parked reader; a reader whose pull answers False goes on itself."""
        parked = self._parked
        for entry in tuple(parked):
            pull, resume = entry
            try:
                keep = pull()
            except Exception:  # the reader goes on and meets the failure itself
                log.exception("a parked reader's read failed")
                keep = False
            if not keep:
                parked.remove(entry)
                if not resume.done():
                    resume.set_result(None)
        now = time.monotonic()
        self._next_pull = self.pacer.next_slot(now, pending=self._wake_due)
        if not self._wake_due:  # read nothing to show (part of a line): not again at once
            self._next_pull = max(self._next_pull, now + self.pacer.interval)

    def _release_parked(self) -> None:
        parked, self._parked = self._parked, []
        for _, resume in parked:
            if not resume.done():
                resume.set_result(None)

    async def _slots(self) -> bool:
        """The slots of parked readers, each run by a timer's callback (`_on_slot`): it
        reads them and sends the frame itself when the frame can go at once (the last
        answer back, the channel free), so a streamed chunk costs the engine one round of
        its loop. Returns when a slot leaves work to `run`: True, a frame (`_unsent`, or
        one still to take); False, no reader is parked any more."""
        loop = self._slot_loop = asyncio.get_running_loop()
        self._slot_result = loop.create_future()
        self._slot_timer = loop.call_at(self._next_pull, self._on_slot)
        try:
            return await self._slot_result
        finally:
            self._slot_result = None
            if self._slot_timer is not None:
                self._slot_timer.cancel()
                self._slot_timer = None

    def _on_slot(self) -> None:
        self._slot_timer = None
        result = self._slot_result
        if result is None or result.done():
            return
        try:
            leave = self._slot_step()
        except Exception:  # `run` goes on with the frame; the failure is not repeated
            log.exception("a frame's slot failed")
            leave = True
        if leave is None:
            loop = self._slot_loop
            assert loop is not None  # the timer was armed by `_slots`, on its loop
            self._slot_timer = loop.call_at(self._next_pull, self._on_slot)
        else:
            result.set_result(leave)

    def _slot_step(self) -> bool | None:
        """One slot, in a callback: None when it is done (the next slot is armed), else
        what `_slots` returns."""
        self._pull_parked()
        if self._wake_due:
            now = time.monotonic()
            # A timer may run a little early (the loop's clock resolution).
            if self._post_nowait is None or self.pacer.delay(now) > SLOT_EARLY_SECONDS:
                return True
            # The last frame's call is released once this one is sent: the channel
            # never counts as idle in between (`NvimChannel.answer_nowait`'s `keep`).
            last = self._in_flight[0] if self._in_flight is not None else None
            release = getattr(last, "release", None)
            try:
                if not self._settle_nowait(keep=release is not None):
                    return True  # not answered yet: still out, not released
                self.pacer.spend(now)
                self._wake_due = False
                batch = self.take()
                if batch is not None:
                    call = self._post_nowait(APPLY, batch)
                    if call is None:  # the channel is busy: `run` sends it, waiting
                        self._unsent = batch
                        return True
                    self._in_flight = (call, batch)
            finally:
                # Answered (even if its failure's handling raised): no longer out.
                if release is not None and (self._in_flight is None
                                            or self._in_flight[0] is not last):
                    release()
            # Work sent in slices (terminal output) goes on. The outbox as `take` left it:
            # nothing since could change it (this is one step of the loop).
            if self._outbox_left:
                self.mark()
        else:
            self._settle_nowait()  # nothing new: the last answer is read if it is back
        return None if self._parked else False

    def _settle_nowait(self, keep: bool = False) -> bool:
        """`settle` without waiting: False when the answer has not come yet. `keep`: the
        call, answered, is released by the caller (`LuaCall.release`)."""
        if self._in_flight is None:
            return True
        call, batch = self._in_flight
        result_nowait = getattr(call, "result_nowait", None)
        if result_nowait is None:
            return False
        try:
            done, report = result_nowait(keep=True) if keep else result_nowait()
        except Exception as exc:
            self._in_flight = None
            self._answered(batch, exc)
            return True
        if not done:
            return False
        self._in_flight = None
        self._answered(batch, report)
        return True

    async def run(self) -> None:
        """Frames on the leading edge: a change after an idle spell goes out at once, and
        so does the next one (the prompt's frame, then its first chunk); a steady stream
        gets one frame per FRAME_SECONDS (a token bucket of FRAME_BURST frames). While
        readers are parked (agents streaming), their slots read them and send what they
        and anything else changed meanwhile (`_slots`)."""
        pacer = self.pacer
        self._pulling = True
        try:
            while True:
                if self._parked:
                    if not await self._slots():
                        continue
                    if self._unsent is not None:
                        unsent, self._unsent = self._unsent, None
                        await self.send(unsent)
                        if self.outbox.pending:
                            self.mark()
                        continue
                else:
                    await self._wait(None if self._in_flight is None
                                     else ANSWER_LATER_SECONDS)
                    if not self._wake_due:  # nothing more came: the answer is read now
                        if not self._parked:  # (else a reader parked: read it at its slot)
                            await self.settle()
                        continue
                delay = pacer.delay(time.monotonic())
                if delay > 0:
                    await asyncio.sleep(delay)  # changes meanwhile join this frame
                pacer.spend(time.monotonic())
                self._wake_due = False
                await self.settle()  # the last frame's failure is handled before this one
                if self._parked and time.monotonic() >= self._next_pull:
                    # A slot passed while the answer was awaited (a slow Neovim): what the
                    # readers wrote meanwhile goes in this frame, as it would have been read.
                    self._pull_parked()
                    self._wake_due = False
                    self._next_pull = pacer.next_slot(time.monotonic(), pending=False)
                batch = self.take()
                if batch is not None:
                    await self.send(batch)
                if self.outbox.pending:  # work sent in slices (terminal output) goes on
                    self.mark()
        finally:
            self._pulling = False
            self._release_parked()


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


class ReadSlot:
    """The frame loop's pace for the agents' readers (`SessionRegistry(read_pace=…)`):
    awaited, the next read slot (`FrameLoop.wait_read_slot`); `park`, reads done for
    the reader at each slot (`FrameLoop.park`, `louise.acp.jsonrpc.ReadPuller`)."""

    __slots__ = ("_frames",)

    def __init__(self, frames: FrameLoop) -> None:
        self._frames = frames

    def __call__(self) -> Awaitable[None]:
        return self._frames.wait_read_slot()

    def park(self, pull: Callable[[], bool]) -> Awaitable[None]:
        return self._frames.park(pull)
