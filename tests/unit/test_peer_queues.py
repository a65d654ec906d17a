"""The peer's byte-bounded queues: order, room, nothing lost, cancellation."""

from __future__ import annotations

import anyio
import pytest

from louise.acp.queues import InboundQueue, OutboundQueue
from louise.acp.rpc_events import Notification

pytestmark = pytest.mark.anyio


async def test_lines_that_do_not_fit_wait_in_order_and_are_all_written() -> None:
    queue = OutboundQueue(capacity=10)
    assert queue.offer(b"aaaaaaaa") is None  # 8 bytes: fits
    first, second = queue.offer(b"bbbb"), queue.offer(b"c")
    assert first is not None and second is not None  # "c" would fit, but waits its turn
    assert queue.backlog == 13
    assert await queue.take(max_bytes=100) == b"aaaaaaaa"
    assert first.admitted and second.admitted
    assert await queue.take(max_bytes=100) == b"bbbbc"  # joined for one write
    assert queue.backlog == 0


async def test_a_line_longer_than_the_budget_goes_alone_into_an_empty_queue() -> None:
    queue = OutboundQueue(capacity=4)
    assert queue.offer(b"x" * 100) is None
    ticket = queue.offer(b"y")
    assert ticket is not None and not ticket.admitted
    assert await queue.take(max_bytes=1000) == b"x" * 100
    assert ticket.admitted


async def test_a_cancelled_wait_gives_up_its_place_and_the_next_moves_up() -> None:
    queue = OutboundQueue(capacity=4)
    queue.offer(b"xxxx")
    quitter, stayer = queue.offer(b"yyyy"), queue.offer(b"zz")
    assert quitter is not None and stayer is not None
    with anyio.move_on_after(0.01):
        await queue.wait(quitter)
    assert not quitter.admitted and queue.backlog == 6
    assert await queue.take(max_bytes=100) == b"xxxx"
    assert stayer.admitted and await queue.take(max_bytes=100) == b"zz"


async def test_close_refuses_waiting_and_new_lines() -> None:
    queue = OutboundQueue(capacity=1)
    queue.offer(b"xx")
    ticket = queue.offer(b"y")
    assert ticket is not None
    queue.close()
    await queue.wait(ticket)
    assert ticket.refused and not ticket.admitted
    assert not await queue.put(b"z")


async def test_wait_for_room_returns_once_the_backlog_is_under_the_budget() -> None:
    queue = OutboundQueue(capacity=4)
    queue.offer(b"xxxx")
    async with anyio.create_task_group() as tg:
        done: list[bool] = []

        async def wait() -> None:
            await queue.wait_for_room()
            done.append(True)

        tg.start_soon(wait)
        await anyio.wait_all_tasks_blocked()  # the waiter is inside wait_for_room
        assert not done
        await queue.take(max_bytes=100)
    assert done == [True]


async def test_inbound_queue_holds_the_reader_while_over_budget() -> None:
    queue = InboundQueue(capacity=10)
    note = Notification("m", None)
    await queue.put([note], 8)  # under the budget: returns at once
    async with anyio.create_task_group() as tg:
        put_done: list[bool] = []

        async def put() -> None:
            await queue.put([note], 8)  # over: waits for the consumer
            put_done.append(True)

        tg.start_soon(put)
        await anyio.wait_all_tasks_blocked()  # the reader is inside put
        assert not put_done
        assert await queue.get() == ([note], 8)
        queue.release(8)
    assert put_done == [True]
    queue.end()
    assert await queue.get() == ([note], 8)
    assert await queue.get() is None
