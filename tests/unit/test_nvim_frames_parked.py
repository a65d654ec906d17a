"""The frame loop reads parked readers (issue 25, item 3): a streaming agent's reader parks
with its `pull` (`ReadSlot.park`), and the loop calls it at each frame's slot, before the
frame's batch is taken, so a streamed chunk goes out in the frame of the slot that read it;
a pull answering False resumes its reader, and a loop that stops resumes every reader."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from louise.nvim.frames import FrameLoop
from louise.nvim.outbox import Outbox

pytestmark = pytest.mark.anyio


class Neovim:
    """Frames as they reach Neovim; every answer is `nil` (nothing failed)."""

    def __init__(self) -> None:
        self.frames: list[int] = []

    async def exec_lua(self, code: str, *args: Any) -> Any:
        return None

    async def post_lua(self, code: str, *args: Any) -> Any:
        self.frames.append(len(args[0]["chats"].get("k", [])))

        class Answer:
            async def result(self) -> Any:
                return None

        return Answer()


class Changes:
    def __init__(self) -> None:
        self.pending = 0

    def take_batch(self, status_for: Any) -> dict[str, Any]:
        ops, self.pending = [["append", "x"]] * self.pending, 0
        return {"chats": {"k": ops} if ops else {}, "status": {}}


async def until(predicate: Any) -> None:
    for _ in range(2000):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("timed out")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the frame loop runs on the engine's asyncio loop


async def test_a_parked_reader_is_read_at_each_slot_and_its_changes_go_in_that_frame() -> None:
    neovim, changes = Neovim(), Changes()
    frames = FrameLoop(neovim, changes, Outbox(),  # type: ignore[arg-type]
                       lambda session: {}, lambda failed, batch: None)
    loop_task = asyncio.ensure_future(frames.run())
    pulls: list[int] = []
    stream = [2, 3, 1]  # chunks the agent wrote before each slot; then nothing

    def pull() -> bool:
        pulls.append(len(pulls))
        if not stream:
            return False  # nothing to read: the reader waits on its pipe itself
        changes.pending += stream.pop(0)
        frames.mark()
        return True

    await asyncio.sleep(0)  # the loop runs
    try:
        changes.pending += 1  # the reader's own first read, before it parks
        frames.mark()
        await frames.read_slot.park(pull)  # returns once a pull answers False
        assert pulls == [0, 1, 2, 3]
        await until(lambda: sum(neovim.frames) == 7)
        # Every change in a frame, none held for a later slot: at most one frame per slot
        # that read something (slots that are due at once, the burst after idle, share one).
        assert len(neovim.frames) <= 4
    finally:
        loop_task.cancel()


async def test_a_loop_that_stops_resumes_its_parked_readers() -> None:
    frames = FrameLoop(Neovim(), Changes(), Outbox(),  # type: ignore[arg-type]
                       lambda session: {}, lambda failed, batch: None)
    loop_task = asyncio.ensure_future(frames.run())
    await asyncio.sleep(0)
    parked = asyncio.ensure_future(frames.read_slot.park(lambda: True))
    await asyncio.sleep(0.05)
    assert not parked.done()  # read at every slot, and kept
    loop_task.cancel()
    await asyncio.wait_for(parked, 5)  # resumed: its reader reads itself again


async def test_without_a_running_loop_park_is_the_plain_read_slot() -> None:
    frames = FrameLoop(Neovim(), Changes(), Outbox(),  # type: ignore[arg-type]
                       lambda session: {}, lambda failed, batch: None)
    called: list[int] = []
    await asyncio.wait_for(frames.read_slot.park(lambda: bool(called.append(1))), 5)
    assert called == []


class NowaitNeovim(Neovim):
    """A bridge that can send from a callback; its answers come when the test says."""

    def __init__(self) -> None:
        super().__init__()
        self.answered = True
        self.posted_nowait = 0

    async def post_lua(self, code: str, *args: Any) -> Any:
        self.posted_nowait -= 1
        return self.post_lua_nowait(code, *args)

    def post_lua_nowait(self, code: str, *args: Any) -> Any:
        self.posted_nowait += 1
        self.frames.append(len(args[0]["chats"].get("k", [])))
        neovim = self

        class Answer:
            def result_nowait(self) -> tuple[bool, Any]:
                return (True, None) if neovim.answered else (False, None)

            async def result(self) -> Any:
                while not neovim.answered:
                    await asyncio.sleep(0.001)
                return None

        return Answer()


async def test_slots_send_their_frames_from_the_timer_and_wait_for_a_late_answer() -> None:
    neovim, changes = NowaitNeovim(), Changes()
    frames = FrameLoop(neovim, changes, Outbox(),  # type: ignore[arg-type]
                       lambda session: {}, lambda failed, batch: None)
    loop_task = asyncio.ensure_future(frames.run())
    await asyncio.sleep(0)
    stream = [2] * 10

    def pull() -> bool:
        if not stream:
            return False
        if len(stream) == 5:
            neovim.answered = False  # Neovim is slow with the last frame's answer
            asyncio.get_running_loop().call_later(0.05, setattr, neovim, "answered", True)
        changes.pending += stream.pop(0)
        frames.mark()
        return True

    try:
        changes.pending += 1
        frames.mark()
        await frames.read_slot.park(pull)
        await until(lambda: sum(neovim.frames) == 21)
        # One frame in flight: the one whose answer was late waited for it, and what the
        # reader wrote meanwhile went in the frame after it.
        assert len(neovim.frames) <= 11
        assert neovim.posted_nowait >= 3  # the slots sent them (not the loop's task)
    finally:
        loop_task.cancel()
