"""The JSON-RPC peer on in-memory streams: the end of its input (what was read delivered,
then the pending requests failed with the reason; a running notification handler not cut)
and the pace of its reads. The rest, and the harness these tests use: test_jsonrpc_peer.py.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from louise.acp.errors import (
    ConnectionClosed,
)
from tests.memstream import encode
from tests.unit.test_jsonrpc_peer import harness, wait_until

pytestmark = pytest.mark.anyio


async def test_end_input_delivers_what_was_read_then_fails_pending_with_the_reason() -> None:
    async with harness() as h, anyio.create_task_group() as tg:
        errors: list[BaseException] = []

        async def call() -> None:
            try:
                await h.peer.request("session/prompt", {})
            except ConnectionClosed as exc:
                errors.append(exc)

        tg.start_soon(call)
        await h.wire.next()
        await h.agent_out.send(encode({"jsonrpc": "2.0", "method": "last", "params": {}}))
        await wait_until(lambda: h.peer.bytes_received > 0)
        # The stream stays open (a child holds it); the process is gone.
        h.peer.end_input(ConnectionClosed("the agent exited", 5, "bye"))
        await wait_until(lambda: errors)
        assert h.handler.notifications == [("last", {})]
        assert isinstance(errors[0], ConnectionClosed) and errors[0].exit_status == 5
        assert h.peer.closed is errors[0]


def note(n: int) -> bytes:
    return encode({"jsonrpc": "2.0", "method": "session/update", "params": {"n": n}})


async def test_a_stream_of_small_notification_reads_waits_for_the_pace_and_loses_nothing() -> None:
    turns: list[int] = []
    gate = anyio.Event()

    async def pace() -> None:
        turns.append(len(turns))
        await gate.wait()  # the next frame: until the test lets the reader go on

    async with harness(read_pace=pace) as h:
        await h.agent_out.send(note(1))
        await wait_until(lambda: turns)
        for n in (2, 3, 4):  # written while the reader waits for its pace
            await h.agent_out.send(note(n))
        await anyio.wait_all_tasks_blocked()  # a reader not waiting would have read them
        assert [p["n"] for _, p in h.handler.notifications] == [1]
        gate.set()
        await wait_until(lambda: len(h.handler.notifications) == 4)
        assert [p["n"] for _, p in h.handler.notifications] == [1, 2, 3, 4]


async def test_a_request_or_a_big_read_is_never_paced() -> None:
    paced: list[int] = []

    async def pace() -> None:
        paced.append(1)
        await anyio.sleep_forever()  # a paced read would never come back

    async with harness(read_pace=pace) as h:
        big = encode({"jsonrpc": "2.0", "method": "session/update",
                      "params": {"text": "x" * 40_000}})
        await h.agent_out.send(big)
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 1, "method": "echo",
                                       "params": {"v": 1}}))
        answer = await h.wire.next()
        assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"v": 1}}
        assert paced == [] and len(h.handler.notifications) == 1


async def test_end_input_does_not_cut_a_notification_handler_the_reader_runs() -> None:
    async with harness() as h:
        inside, release = anyio.Event(), anyio.Event()

        async def waiting_update(method: str, params: Any) -> None:
            inside.set()
            await release.wait()  # the handler awaits inside
            h.handler.notifications.append((method, params))

        h.handler.handle_notification = waiting_update  # type: ignore[method-assign]
        await h.agent_out.send(note(7))
        with anyio.fail_after(10):
            await inside.wait()
        h.peer.end_input(ConnectionClosed("the agent exited", 0, ""))
        release.set()
        await wait_until(lambda: h.peer.closed is not None)
        assert h.handler.notifications == [("session/update", {"n": 7})]


@pytest.mark.parametrize("consumer_busy", [False, True])
async def test_a_burst_handled_is_not_kept_while_the_peer_waits(consumer_busy: bool) -> None:
    """Issue 25 item 5: the reader (the consumer idle) or the consumer (busy when the burst
    came) kept a burst's last batch, thousands of decoded notifications in an engine
    whose agent went quiet, until the agent spoke again."""
    import gc

    from louise.acp.rpc_events import Notification

    def kept() -> int:
        gc.collect()
        return sum(type(o) is Notification for o in gc.get_objects())

    async with harness() as h:
        seen: list[int] = []
        busy = anyio.Event()
        release = anyio.Event()

        async def counting(method: str, params: Any) -> None:
            if params["n"] == -1:  # holds the consumer while the burst is read
                busy.set()
                await release.wait()
            seen.append(params["n"])  # the number only, not the notification

        h.handler.handle_notification = counting  # type: ignore[method-assign]
        if consumer_busy:  # with a request in its read, the batch goes to the consumer
            await h.agent_out.send(note(-1) + encode({"jsonrpc": "2.0", "id": 1,
                                                      "method": "echo", "params": {}}))
            with anyio.fail_after(10):
                await busy.wait()
        else:
            release.set()
        await h.agent_out.send(b"".join(note(n) for n in range(500)))
        await wait_until(lambda: h.peer.bytes_received > 500 * 40)
        release.set()
        await wait_until(lambda: len(seen) == 500 + consumer_busy)
        await anyio.wait_all_tasks_blocked()
        assert kept() == 0
