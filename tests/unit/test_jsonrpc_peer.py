"""The JSON-RPC peer on in-memory streams: ordering, concurrency, cancellation, bounds (the
end of its input and the pace of its reads: test_jsonrpc_peer_input.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from louise.acp.errors import (
    ConnectionClosed,
    ProtocolError,
    ProtocolErrorKind,
    RequestTimeout,
    RpcError,
)
from louise.acp.jsonrpc import JsonRpcPeer
from louise.acp.peer_limits import PeerLimits
from tests.memstream import LineCollector, PipeWriter, encode, pipe

pytestmark = pytest.mark.anyio


@dataclass
class RecordingHandler:
    notifications: list[tuple[str, Any]] = field(default_factory=list)
    note_delays: dict[int, float] = field(default_factory=dict)
    request_gate: anyio.Event = field(default_factory=anyio.Event)
    started: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)

    async def handle_notification(self, method: str, params: Any) -> None:
        delay = self.note_delays.get(params.get("n", -1), 0.0) if isinstance(params, dict) else 0
        if delay:
            await anyio.sleep(delay)
        self.notifications.append((method, params))

    async def handle_request(self, method: str, params: Any) -> Any:
        self.started.append(method)
        if method == "echo":
            return params
        if method == "wait":
            try:
                await self.request_gate.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(method)
                raise
            return {"waited": True}
        if method == "boom":
            raise ValueError("secret internals")
        if method == "not_json":
            return {"value": object()}
        if method == "read":
            return {"content": "x" * params["size"]}
        raise RpcError.method_not_found(method)


@dataclass
class Harness:
    peer: JsonRpcPeer
    agent_out: PipeWriter  # what the "agent" writes, the peer reads
    wire: LineCollector  # what the peer wrote
    handler: RecordingHandler


@asynccontextmanager
async def harness(limits: PeerLimits | None = None, *, wire_buffer: int = 1024,
                  **peer_kwargs: Any) -> AsyncIterator[Harness]:
    """`wire_buffer`: how many writes the "agent" leaves unread before the peer's writes
    block (it reads only when the test calls `wire.next()`)."""
    agent_out, peer_in = pipe()
    peer_out, agent_in = pipe(buffer=wire_buffer)
    handler = RecordingHandler()
    peer = JsonRpcPeer(peer_in, peer_out, handler, limits=limits, **peer_kwargs)
    async with anyio.create_task_group() as tg:
        await tg.start(peer.run)
        yield Harness(peer, agent_out, LineCollector(agent_in), handler)
        peer.close()
        tg.cancel_scope.cancel()


async def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.005)


async def until_answer(h: Harness, request_id: str) -> list[str]:
    """Read the wire up to the answer to the agent's request `request_id`: the methods of
    what the peer wrote before it (the wire is ordered, so this proves absence)."""
    before: list[str] = []
    while (message := await h.wire.next()).get("id") != request_id:
        before.append(str(message.get("method")))
    return before


async def test_request_result_round_trip() -> None:
    async with harness() as h, anyio.create_task_group() as tg:
        results: list[Any] = []

        async def call() -> None:
            results.append(await h.peer.request("session/new", {"cwd": "/"}))

        tg.start_soon(call)
        sent = await h.wire.next()
        assert sent["method"] == "session/new" and sent["params"] == {"cwd": "/"}
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": sent["id"], "result": {"ok": 1}}))
        await wait_until(lambda: results)
        assert results == [{"ok": 1}]


async def test_error_response_becomes_typed_error_with_data_kept() -> None:
    async with harness() as h, anyio.create_task_group() as tg:
        errors: list[BaseException] = []

        async def call() -> None:
            try:
                await h.peer.request("session/new", {})
            except RpcError as exc:
                errors.append(exc)

        tg.start_soon(call)
        sent = await h.wire.next()
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": sent["id"], "error": {
            "code": -32000, "message": "Authentication required", "data": {"x": 1}}}))
        await wait_until(lambda: errors)
        error = errors[0]
        assert isinstance(error, RpcError)
        assert error.code == -32000 and error.is_auth_required
        assert error.data == {"x": 1}
        assert "x" not in str(error)  # data is for logs, not for the person


async def test_notifications_delivered_in_arrival_order_even_if_handler_awaits() -> None:
    async with harness() as h:
        h.handler.note_delays = {0: 0.05, 1: 0.02}
        for n in range(5):
            await h.agent_out.send(encode({"jsonrpc": "2.0", "method": "session/update",
                                           "params": {"n": n}}))
        await wait_until(lambda: len(h.handler.notifications) == 5)
        assert [p["n"] for _, p in h.handler.notifications] == [0, 1, 2, 3, 4]


async def test_inbound_requests_run_concurrently_with_notifications() -> None:
    async with harness() as h:
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 7, "method": "wait"}))
        await h.agent_out.send(encode({"jsonrpc": "2.0", "method": "n", "params": {"n": 1}}))
        await wait_until(lambda: h.handler.notifications)  # not blocked by the waiting request
        h.handler.request_gate.set()
        reply = await h.wire.next()
        assert reply == {"jsonrpc": "2.0", "id": 7, "result": {"waited": True}}


async def test_unknown_request_gets_method_not_found() -> None:
    async with harness() as h:
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": "x", "method": "nope/nope"}))
        reply = await h.wire.next()
        assert reply["id"] == "x" and reply["error"]["code"] == -32601


async def test_handler_crash_is_internal_error_without_internals() -> None:
    async with harness() as h:
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 1, "method": "boom"}))
        reply = await h.wire.next()
        assert reply["error"]["code"] == -32603
        assert "secret" not in str(reply)


async def test_inbound_cancel_request_answers_minus_32800() -> None:
    async with harness() as h:
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 5, "method": "wait"}))
        await wait_until(lambda: h.handler.started)
        await h.agent_out.send(encode({"jsonrpc": "2.0", "method": "$/cancel_request",
                                       "params": {"requestId": 5}}))
        reply = await h.wire.next()
        assert reply["id"] == 5 and reply["error"]["code"] == -32800
        assert h.handler.cancelled == ["wait"]


async def test_outbound_timeout_sends_cancel_request() -> None:
    async with harness() as h:
        with pytest.raises(RequestTimeout) as info:
            await h.peer.request("session/new", {}, timeout=0.05)
        assert "open a new session" in str(info.value)
        sent = await h.wire.next()
        cancel = await h.wire.next()
        assert cancel == {"jsonrpc": "2.0", "method": "$/cancel_request",
                          "params": {"requestId": sent["id"]}}


async def test_caller_cancellation_sends_cancel_request_and_late_answer_is_ignored() -> None:
    async with harness() as h:
        with anyio.move_on_after(0.05):
            await h.peer.request("session/load", {})
        sent = await h.wire.next()
        cancel = await h.wire.next()
        assert cancel["method"] == "$/cancel_request"
        assert cancel["params"]["requestId"] == sent["id"]
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": sent["id"],
                                       "error": {"code": -32800, "message": "cancelled"}}))
        # The peer keeps working afterwards.
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 9, "method": "echo",
                                       "params": [1]}))
        assert (await h.wire.next())["result"] == [1]


async def test_a_request_given_up_without_announcing_is_only_forgotten() -> None:
    """Through the session host a prompt louise stops waiting for (it is closing) is not
    cancelled at the agent: no `$/cancel_request`, and its late answer is ignored."""
    async with harness() as h:
        with anyio.move_on_after(0.05):
            await h.peer.request("session/prompt", {}, announce_abandon=False)
        sent = await h.wire.next()
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": sent["id"],
                                       "result": {"stopReason": "end_turn"}}))
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 9, "method": "echo",
                                       "params": [1]}))
        assert await h.wire.next() == {"jsonrpc": "2.0", "id": 9, "result": [1]}


async def test_end_of_stream_fails_every_pending_request_at_once() -> None:
    async with harness() as h, anyio.create_task_group() as tg:
        errors: list[BaseException] = []

        async def call(method: str) -> None:
            try:
                await h.peer.request(method, {})
            except ConnectionClosed as exc:
                errors.append(exc)

        tg.start_soon(call, "session/prompt")
        tg.start_soon(call, "session/new")
        await h.wire.next()
        await h.wire.next()
        await h.agent_out.aclose()
        await wait_until(lambda: len(errors) == 2)
        with pytest.raises(ConnectionClosed):
            await h.peer.request("x", {})


async def test_garbage_and_non_objects_are_reported_and_skipped() -> None:
    async with harness() as h:
        await h.agent_out.send(b"this is not json\n[1,2]\n")
        await h.agent_out.send(encode({"jsonrpc": "2.0", "method": "after", "params": {"n": 1}}))
        await wait_until(lambda: h.handler.notifications)
        assert h.handler.notifications == [("after", {"n": 1})]
        assert list(h.peer.protocol_errors) == [
            "invalid_json: not JSON (Expecting value): 'this is not json'",
            "not_an_object: a list, not a JSON-RPC object"]


async def test_oversized_line_reported_and_connection_continues() -> None:
    async with harness(PeerLimits(max_line_bytes=1000)) as h:
        big = encode({"jsonrpc": "2.0", "method": "big", "params": {"x": "y" * 5000}})
        await h.agent_out.send(big)
        await h.agent_out.send(encode({"jsonrpc": "2.0", "method": "small"}))
        await wait_until(lambda: h.handler.notifications)
        assert [m for m, _ in h.handler.notifications] == ["small"]
        assert h.peer.protocol_errors[0].startswith("oversized_line: ")
        assert "limit 1000" in h.peer.protocol_errors[0]


async def test_too_many_concurrent_inbound_requests_are_refused_not_queued() -> None:
    async with harness(PeerLimits(max_concurrent_inbound_requests=2)) as h:
        for i in range(3):
            await h.agent_out.send(encode({"jsonrpc": "2.0", "id": i, "method": "wait"}))
        reply = await h.wire.next()
        assert reply["id"] == 2 and reply["error"]["code"] == -32603
        h.handler.request_gate.set()
        ids = {(await h.wire.next())["id"], (await h.wire.next())["id"]}
        assert ids == {0, 1}


async def test_cancel_request_for_unknown_id_is_harmless() -> None:
    async with harness() as h:
        await h.agent_out.send(encode({"jsonrpc": "2.0", "method": "$/cancel_request",
                                       "params": {"requestId": 99}}))
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 1, "method": "echo",
                                       "params": {"a": 1}}))
        assert (await h.wire.next())["result"] == {"a": 1}
        assert not h.handler.notifications  # $/cancel_request never reaches the handler


async def test_a_reply_never_overtakes_notifications_that_arrived_before_it() -> None:
    async with harness() as h, anyio.create_task_group() as tg:
        h.handler.note_delays = {0: 0.05, 1: 0.05}
        seen_at_reply: list[int] = []

        async def call() -> None:
            await h.peer.request("session/prompt", {})
            seen_at_reply.append(len(h.handler.notifications))

        tg.start_soon(call)
        sent = await h.wire.next()
        for n in range(3):
            await h.agent_out.send(encode({"jsonrpc": "2.0", "method": "session/update",
                                           "params": {"n": n}}))
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": sent["id"],
                                       "result": {"stopReason": "end_turn"}}))
        await wait_until(lambda: seen_at_reply)
        assert seen_at_reply == [3]


async def test_request_timeout_covers_waiting_for_room_in_the_outbound_queue() -> None:
    async with harness(wire_buffer=1) as h, anyio.create_task_group() as tg:
        queued: list[int] = []

        async def fill() -> None:  # far more than the agent reads: 19 MiB, 300 lines
            for n in range(300):
                await h.peer.notify("big", {"n": n, "pad": "x" * 65536})
                queued.append(n)

        tg.start_soon(fill)
        await wait_until(lambda: h.peer.outbound_backlog >= h.peer.limits.max_outbound_bytes)
        with anyio.fail_after(20), pytest.raises(RequestTimeout) as info:
            await h.peer.request("session/set_mode", {}, timeout=0.2)
        assert info.value.unread and "did not read" in str(info.value)
        tg.cancel_scope.cancel()
        # The request never reached the agent, so no $/cancel_request follows it either:
        # everything written before the answer to a later request is the notifications.
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": "later", "method": "echo"}))
        seen = await until_answer(h, "later")
        assert seen and set(seen) == {"big"}


async def test_an_answer_that_arrived_before_the_deadline_is_not_a_timeout() -> None:
    # The answer is read while the ordered consumer is still busy with an update that
    # came before it; the deadline passes in between.
    async with harness() as h, anyio.create_task_group() as tg:
        stall = anyio.Event()

        async def slow_update(method: str, params: Any) -> None:
            await stall.wait()
            h.handler.notifications.append((method, params))

        h.handler.handle_notification = slow_update  # type: ignore[method-assign]
        results: list[Any] = []

        async def call() -> None:
            results.append(await h.peer.request("session/set_mode", {}, timeout=0.3))

        tg.start_soon(call)
        sent = await h.wire.next()
        await h.agent_out.send(
            encode({"jsonrpc": "2.0", "method": "session/update", "params": {"n": 0}})
            + encode({"jsonrpc": "2.0", "id": sent["id"], "result": {"ok": True}}))
        await wait_until(lambda: results)
        assert results == [{"ok": True}]
        stall.set()
        await wait_until(lambda: h.handler.notifications)
        # Nothing was abandoned: no $/cancel_request went out before a later answer.
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": "later", "method": "echo"}))
        assert await until_answer(h, "later") == []


async def test_replies_wait_for_room_and_none_is_dropped() -> None:
    limits = PeerLimits(max_outbound_bytes=64 * 1024)
    async with harness(limits, wire_buffer=1) as h:
        count = 400  # in one burst: 400 replies of 8 KiB for an agent reading nothing
        await h.agent_out.send(b"".join(
            encode({"jsonrpc": "2.0", "id": i, "method": "read", "params": {"size": 8192}})
            for i in range(count)))
        # Intake stops: it takes no more requests than fit in the budget, plus what the
        # writer holds (one write) and the agent's unread pipe (one write).
        await wait_until(lambda: h.peer.outbound_backlog >= limits.max_outbound_bytes)
        # Every task is blocked now: a reader still taking requests would not be.
        await anyio.wait_all_tasks_blocked()
        started = len(h.handler.started)
        assert started <= 3 * limits.max_outbound_bytes // 8192 + 4
        answered: dict[int, Any] = {}
        while len(answered) < count:
            reply = await h.wire.next()
            assert reply["id"] not in answered
            answered[reply["id"]] = reply
        assert all(len(r["result"]["content"]) == 8192 for r in answered.values())
        assert len(h.handler.started) == count


async def test_a_line_larger_than_the_whole_outbound_budget_still_goes() -> None:
    async with harness(PeerLimits(max_outbound_bytes=1024)) as h:
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 1, "method": "read",
                                       "params": {"size": 100_000}}))
        assert len((await h.wire.next())["result"]["content"]) == 100_000


async def test_notify_times_out_when_the_agent_reads_nothing() -> None:
    async with harness(PeerLimits(max_outbound_bytes=1024), wire_buffer=1) as h:
        with anyio.fail_after(20), pytest.raises(RequestTimeout) as info:
            for _ in range(100):
                await h.peer.notify("session/cancel", {"pad": "x" * 1000}, timeout=0.2)
        assert info.value.unread


async def test_cancel_of_a_request_not_started_yet_answers_minus_32800() -> None:
    async with harness() as h:
        stall = anyio.Event()

        async def slow_update(method: str, params: Any) -> None:
            await stall.wait()

        h.handler.handle_notification = slow_update  # type: ignore[method-assign]
        await h.agent_out.send(
            encode({"jsonrpc": "2.0", "method": "session/update", "params": {}})
            + encode({"jsonrpc": "2.0", "id": 3, "method": "wait"})
            + encode({"jsonrpc": "2.0", "method": "$/cancel_request",
                      "params": {"requestId": 3}}))
        await wait_until(lambda: h.peer.state.is_cancelled(3))
        stall.set()
        reply = await h.wire.next()
        assert reply == {"jsonrpc": "2.0", "id": 3,
                         "error": {"code": -32800, "message": "Request cancelled"}}
        assert h.handler.started == []  # its handler never ran


async def test_a_result_that_is_not_json_is_an_internal_error_and_the_peer_goes_on() -> None:
    async with harness() as h:
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 1, "method": "not_json"}))
        assert (await h.wire.next())["error"]["code"] == -32603
        await h.agent_out.send(encode({"jsonrpc": "2.0", "id": 2, "method": "echo",
                                       "params": {"a": 1}}))
        assert (await h.wire.next())["result"] == {"a": 1}


async def test_protocol_errors_reach_the_callback_with_their_kind() -> None:
    seen: list[ProtocolError] = []
    async with harness(on_protocol_error=seen.append) as h:
        await h.agent_out.send(b'{"jsonrpc":"2.0","id":[1],"result":{}}\n')
        await h.agent_out.send(encode({"jsonrpc": "2.0", "method": "after"}))
        await wait_until(lambda: h.handler.notifications)
        assert [(e.kind, e.detail) for e in seen] == [
            (ProtocolErrorKind.INVALID_ID, "an answer whose id is a list")]
        assert h.peer.protocol_errors[0] == "invalid_id: an answer whose id is a list"
        assert h.peer.protocol_error_counts == {ProtocolErrorKind.INVALID_ID: 1}
