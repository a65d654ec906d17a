"""Reads pulled for a parked reader (issue 25, item 3): a streaming agent's reader parks
with its `pull`, and the pace (the Neovim engine's frame loop) reads and handles the
stream in its own step at each slot; anything that is not a stream's notifications goes
back to the reader, in order. Real pipes (`PipeReceiveStream`), the peer's own tasks."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from louise.acp.errors import ConnectionClosed
from louise.acp.jsonrpc import JsonRpcPeer
from louise.acp.pipes import PipeReceiveStream, agent_stdout_pipe
from tests.memstream import LineCollector, encode, pipe
from tests.unit.test_jsonrpc_peer import wait_until

pytestmark = pytest.mark.anyio


@dataclass
class Handler:
    """Notifications handled at once, but those whose params ask to wait."""

    seen: list[Any] = field(default_factory=list)
    gate: anyio.Event = field(default_factory=anyio.Event)

    def notify_now(self, method: str, params: Any) -> Awaitable[None] | None:
        if isinstance(params, dict) and params.get("wait"):
            return self._later(params)
        self.seen.append(params["n"])
        return None

    async def _later(self, params: Any) -> None:
        await self.gate.wait()
        self.seen.append(params["n"])

    async def handle_notification(self, method: str, params: Any) -> None:
        rest = self.notify_now(method, params)
        if rest is not None:
            await rest

    async def handle_request(self, method: str, params: Any) -> Any:
        self.seen.append(method)
        return {}


@dataclass
class Pace:
    """A pace whose slots the test makes: `pull()` reads for the parked reader."""

    parked: list[Callable[[], bool]] = field(default_factory=list)
    paced: int = 0

    async def __call__(self) -> None:
        self.paced += 1
        await anyio.sleep_forever()

    async def park(self, pull: Callable[[], bool]) -> None:
        self.parked.append(pull)
        self.resumed = anyio.Event()
        try:
            await self.resumed.wait()
        finally:
            self.parked.remove(pull)

    def pull(self) -> bool:
        """One slot: True when the reader stays parked."""
        keep = self.parked[0]()
        if not keep:
            self.resumed.set()
        return keep


@dataclass
class Pulled:
    peer: JsonRpcPeer
    handler: Handler
    pace: Pace
    write: Callable[[dict[str, Any]], None]
    wire: LineCollector
    close_input: Callable[[], None]


@asynccontextmanager
async def pulled() -> AsyncIterator[Pulled]:
    read_fd, write_fd = agent_stdout_pipe()
    ends = [write_fd]
    peer_out, agent_in = pipe()
    handler, pace = Handler(), Pace()
    peer = JsonRpcPeer(PipeReceiveStream(read_fd), peer_out, handler, read_pace=pace)

    def write(message: dict[str, Any]) -> None:
        os.write(write_fd, encode(message))

    def close_input() -> None:
        if ends:
            os.close(ends.pop())

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(peer.run)
            yield Pulled(peer, handler, pace, write, LineCollector(agent_in), close_input)
            peer.close()
            tg.cancel_scope.cancel()
    finally:
        close_input()


def note(n: int, **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"n": n, **extra}}


async def test_a_parked_reader_s_stream_is_read_and_handled_in_the_pulling_step() -> None:
    async with pulled() as p:
        p.write(note(1))
        await wait_until(lambda: p.pace.parked)  # the first read parks the reader
        assert p.handler.seen == [1]
        p.write(note(2))
        p.write(note(3))
        assert p.pace.pull() is True  # read and handled right here, no task woken
        assert p.handler.seen == [1, 2, 3]
        p.write(note(4))
        await anyio.wait_all_tasks_blocked()
        assert p.handler.seen == [1, 2, 3]  # nobody reads but the pull
        assert p.pace.pull() is True and p.handler.seen == [1, 2, 3, 4]
        assert p.pace.paced == 0  # parked, never the plain pace


async def test_nothing_to_read_resumes_the_reader_which_then_reads_itself() -> None:
    async with pulled() as p:
        p.write(note(1))
        await wait_until(lambda: p.pace.parked)
        assert p.pace.pull() is False  # the pipe is empty: the reader waits on it
        await wait_until(lambda: not p.pace.parked)
        p.write(note(2))
        await wait_until(lambda: p.pace.parked)  # read by the reader, parked again
        assert p.handler.seen == [1, 2]


async def test_a_request_read_by_a_pull_goes_to_the_reader_after_the_notes_before_it() -> None:
    async with pulled() as p:
        p.write(note(1))
        await wait_until(lambda: p.pace.parked)
        p.write(note(2))
        p.write({"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file", "params": {}})
        p.write(note(3))
        assert p.pace.pull() is False
        assert (await p.wire.next())["id"] == 7
        await wait_until(lambda: len(p.handler.seen) == 4)
        assert p.handler.seen == [1, 2, "fs/read_text_file", 3]


async def test_a_handler_that_must_wait_is_awaited_by_the_reader_before_what_follows() -> None:
    async with pulled() as p:
        p.write(note(1))
        await wait_until(lambda: p.pace.parked)
        p.write(note(2, wait=True))
        p.write(note(3))
        assert p.pace.pull() is False
        await anyio.wait_all_tasks_blocked()
        assert p.handler.seen == [1]  # 3 waits behind 2
        p.handler.gate.set()
        await wait_until(lambda: p.handler.seen == [1, 2, 3])


async def test_the_end_met_by_a_pull_ends_the_input() -> None:
    async with pulled() as p:
        p.write(note(1))
        await wait_until(lambda: p.pace.parked)
        p.write(note(2))
        p.close_input()
        assert p.pace.pull() is True  # note 2
        assert p.pace.pull() is False  # the end
        await wait_until(lambda: p.peer.closed is not None)
        assert p.handler.seen == [1, 2]
        assert isinstance(p.peer.closed, ConnectionClosed)


async def test_end_input_while_parked_still_delivers_what_a_pull_left() -> None:
    async with pulled() as p:
        p.write(note(1))
        await wait_until(lambda: p.pace.parked)
        p.write(note(2, wait=True))
        assert p.pace.pull() is False
        p.peer.end_input(ConnectionClosed("the agent exited", 0, ""))
        p.handler.gate.set()
        await wait_until(lambda: p.peer.closed is not None)
        assert p.handler.seen == [1, 2]
        assert not p.pace.parked
