"""The engine's own msgpack-RPC channel to Neovim (louise/nvim/channel.py) and the
bridge's fallback to pynvim, against a stand-in Neovim server on a Unix socket."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import msgpack
import pytest

from louise.nvim import channel as channel_module
from louise.nvim.bridge import PynvimCalls, UiBridge
from louise.nvim.channel import ChannelClosed, NvimChannel

Serve = Callable[[anyio.abc.SocketStream], Awaitable[None]]


async def messages(stream: anyio.abc.SocketStream) -> AsyncIterator[Any]:
    unpacker = msgpack.Unpacker(raw=False)
    while True:
        try:
            data = await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        unpacker.feed(data)
        for message in unpacker:
            yield message


@asynccontextmanager
async def fake_neovim(serve: Serve) -> AsyncIterator[str]:
    """A Neovim stand-in listening on a Unix socket; `serve` handles each connection."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "nvim.sock")
        listener = await anyio.create_unix_listener(path)
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, serve)
            yield path
            tg.cancel_scope.cancel()


def answering(result: Callable[[str, list[Any]], Any]) -> Serve:
    """Answers every request with `result(method, args)`."""
    async def serve(stream: anyio.abc.SocketStream) -> None:
        async for message in messages(stream):
            await stream.send(msgpack.packb([1, message[1], None,
                                             result(message[2], message[3])]))
    return serve


class FakePynvim:
    """pynvim's side of the bridge: `async_call` runs the work at once."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def async_call(self, work: Callable[[], None]) -> None:
        work()

    def exec_lua(self, code: str, *args: Any) -> Any:
        self.calls.append((code, args))
        return "through pynvim"


def test_answers_are_matched_to_their_requests_by_id() -> None:
    async def serve(stream: anyio.abc.SocketStream) -> None:
        held: list[Any] = []
        async for message in messages(stream):
            held.append(message)
            if len(held) == 2:  # answer the second request first
                for kind, ident, _method, args in reversed(held):
                    assert kind == 0
                    await stream.send(msgpack.packb([1, ident, None, args[1][0] * 10]))

    async def main() -> list[Any]:
        results: dict[int, Any] = {}
        async with fake_neovim(serve) as path:
            channel = await NvimChannel.connect(path)
            async with anyio.create_task_group() as tg:
                tg.start_soon(channel.run)

                async def call(n: int) -> None:
                    results[n] = await channel.exec_lua("return ...", n)

                async with anyio.create_task_group() as calls:
                    calls.start_soon(call, 1)
                    await anyio.wait_all_tasks_blocked()  # 1 is sent and waits for its answer
                    calls.start_soon(call, 2)
                tg.cancel_scope.cancel()
        return [results[1], results[2]]

    assert anyio.run(main) == [10, 20]


def test_an_error_answer_raises_with_neovims_message() -> None:
    async def serve(stream: anyio.abc.SocketStream) -> None:
        async for message in messages(stream):
            await stream.send(msgpack.packb([1, message[1], [1, "E5108: boom"], None]))

    async def main() -> None:
        async with fake_neovim(serve) as path:
            channel = await NvimChannel.connect(path)
            async with anyio.create_task_group() as tg:
                tg.start_soon(channel.run)
                with pytest.raises(RuntimeError, match="E5108: boom"):
                    await channel.exec_lua("error('boom')")
                assert channel.open  # one failed call does not end the channel
                tg.cancel_scope.cancel()

    anyio.run(main)


def test_an_oversized_message_ends_the_channel_and_fails_the_waiting_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(channel_module, "MAX_MESSAGE_BYTES", 4096)

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async for message in messages(stream):
            await stream.send(msgpack.packb([1, message[1], None, "x" * 100_000]))

    async def main() -> None:
        async with fake_neovim(serve) as path:
            channel = await NvimChannel.connect(path)
            async with anyio.create_task_group() as tg:
                tg.start_soon(channel.run)
                with anyio.fail_after(10), pytest.raises(ChannelClosed):
                    await channel.exec_lua("return ...")
            assert not channel.open
            with pytest.raises(ChannelClosed):
                await channel.exec_lua("return 1")

    anyio.run(main)


def test_neovim_closing_the_socket_fails_the_waiting_call() -> None:
    async def serve(stream: anyio.abc.SocketStream) -> None:
        async for _message in messages(stream):
            await stream.aclose()
            return

    async def main() -> None:
        async with fake_neovim(serve) as path:
            channel = await NvimChannel.connect(path)
            async with anyio.create_task_group() as tg:
                tg.start_soon(channel.run)
                with anyio.fail_after(10), pytest.raises(ChannelClosed):
                    await channel.exec_lua("return 1")
            assert not channel.open

    anyio.run(main)


def test_a_request_from_neovim_gets_an_error_answer() -> None:
    answers: list[Any] = []

    async def serve(stream: anyio.abc.SocketStream) -> None:
        await stream.send(msgpack.packb([0, 7, "some_method", []]))
        async for message in messages(stream):
            if message[0] == 1:
                answers.append(message)
                return

    async def main() -> None:
        async with fake_neovim(serve) as path:
            channel = await NvimChannel.connect(path)
            async with anyio.create_task_group() as tg:
                tg.start_soon(channel.run)
                with anyio.fail_after(10):
                    while not answers:
                        await anyio.sleep(0.01)
                tg.cancel_scope.cancel()

    anyio.run(main)
    assert answers[0][1] == 7 and answers[0][2] and answers[0][3] is None


def test_the_bridge_uses_its_own_channel_when_it_can_and_pynvim_after_it_closed() -> None:
    pynvim = FakePynvim()
    closing = anyio.Event()

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async for message in messages(stream):
            await stream.send(msgpack.packb([1, message[1], None, "through the socket"]))
            await closing.wait()
            await stream.aclose()
            return

    async def main() -> list[Any]:
        seen = []
        async with fake_neovim(serve) as path:
            bridge = UiBridge(PynvimCalls(pynvim), path)
            async with anyio.create_task_group() as tg:
                await tg.start(bridge.serve)
                seen.append(await bridge.exec_lua("return 1"))
                closing.set()
                with anyio.fail_after(10):
                    while bridge.channel is not None:
                        await anyio.sleep(0.01)
                seen.append(await bridge.exec_lua("return 2"))
        return seen

    assert anyio.run(main) == ["through the socket", "through pynvim"]
    assert pynvim.calls == [("return 2", ())]


@pytest.mark.parametrize("address", [None, "/nonexistent/louise-test/nvim.sock"])
def test_without_a_reachable_socket_the_bridge_calls_through_pynvim(
        address: str | None) -> None:
    pynvim = FakePynvim()

    async def main() -> Any:
        bridge = UiBridge(PynvimCalls(pynvim), address)
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(10):
                await tg.start(bridge.serve)
            assert bridge.channel is None
            return await bridge.exec_lua("return 3", "x")

    assert anyio.run(main) == "through pynvim"
    assert pynvim.calls == [("return 3", ("x",))]


def test_stopping_the_engine_ends_the_channel_while_a_call_waits() -> None:
    async def serve(stream: anyio.abc.SocketStream) -> None:
        async for _message in messages(stream):
            pass  # never answers: a busy Neovim

    async def main() -> None:
        async with fake_neovim(serve) as path:
            bridge = UiBridge(PynvimCalls(FakePynvim()), path)
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    await tg.start(bridge.serve)
                    channel = bridge.channel
                    assert channel is not None
                    tg.start_soon(bridge.exec_lua, "return 1")
                    await anyio.wait_all_tasks_blocked()  # the call waits for its answer
                    tg.cancel_scope.cancel()  # what Engine._main does on stop
            assert bridge.channel is None and not channel.open

    anyio.run(main)


def test_a_neovim_that_reads_nothing_makes_callers_wait_not_memory_grow() -> None:
    reading = anyio.Event()

    async def serve(stream: anyio.abc.SocketStream) -> None:
        await reading.wait()  # Neovim busy: nothing is read meanwhile
        async for message in messages(stream):
            await stream.send(msgpack.packb([1, message[1], None, len(message[3][0])]))

    async def main() -> tuple[int, int, list[Any]]:
        results: list[Any] = []
        async with fake_neovim(serve) as path:
            channel = await NvimChannel.connect(path)
            async with anyio.create_task_group() as tg:
                tg.start_soon(channel.run)

                async def call() -> None:
                    results.append(await channel.exec_lua("x" * 256 * 1024))

                async with anyio.create_task_group() as calls:
                    for _ in range(100):  # 25 MiB asked for
                        calls.start_soon(call)
                    # Every caller has written what it could and waits (for room or for
                    # its answer).
                    await anyio.wait_all_tasks_blocked()
                    unsent = channel.unsent_bytes  # held here, beyond the system's buffer
                    written = len(channel._waiting)
                    reading.set()
                tg.cancel_scope.cancel()
        return unsent, written, results

    unsent, written, results = anyio.run(main)
    assert unsent <= 256 * 1024 + 1024  # one message at most
    assert written < 100  # the others waited for room before writing
    assert len(results) == 100


def test_a_call_posted_without_waiting_is_answered_without_waiting() -> None:
    """Issue 25 item 3: a frame sent from a slot's timer callback (`post_nowait`), its
    answer read at the next slot (`answer_nowait`); (False, None) before it is back."""
    gate = anyio.Event()

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async for message in messages(stream):
            await gate.wait()
            await stream.send(msgpack.packb([1, message[1], None, message[3][1][0] + 1]))

    async def main() -> None:
        async with fake_neovim(serve) as path:
            channel = await NvimChannel.connect(path)
            async with anyio.create_task_group() as tg:
                tg.start_soon(channel.run)
                posted = channel.post_nowait("nvim_exec_lua", "return ...", [41])
                assert posted is not None
                await anyio.wait_all_tasks_blocked()
                assert channel.answer_nowait(posted) == (False, None)
                gate.set()
                with anyio.fail_after(10):
                    while not (answer := channel.answer_nowait(posted))[0]:
                        await anyio.sleep(0.005)
                assert answer == (True, 42)
                assert await channel.exec_lua("return ...", 1) == 2  # the channel goes on
                tg.cancel_scope.cancel()

    anyio.run(main)


def test_an_answer_kept_counts_as_out_until_released() -> None:
    """The frame loop reads a frame's answer, then sends the next frame in the same step
    (`answer_nowait(keep=True)`, then `release`): the channel must not arm its idle watch
    in between (a timer armed and cancelled every frame); released with nothing else
    out, it does."""
    async def main() -> None:
        async with fake_neovim(answering(lambda method, args: args[1][0] + 1)) as path:
            channel = await NvimChannel.connect(path)
            async with anyio.create_task_group() as tg:
                tg.start_soon(channel.run)
                await anyio.wait_all_tasks_blocked()
                first = channel.post_nowait("nvim_exec_lua", "return ...", [1])
                assert first is not None
                with anyio.fail_after(10):
                    while not (answer := channel.answer_nowait(first, keep=True))[0]:
                        await anyio.sleep(0.005)
                assert answer == (True, 2)
                assert channel._idle_timer is None, "kept: still out, no idle watch"
                second = channel.post_nowait("nvim_exec_lua", "return ...", [2])
                assert second is not None
                channel.release(first)
                assert channel._idle_timer is None, "the next call is out"
                with anyio.fail_after(10):
                    while not (answer := channel.answer_nowait(second, keep=True))[0]:
                        await anyio.sleep(0.005)
                channel.release(second)
                assert channel._idle_timer is not None, "nothing out: the idle watch"
                assert await channel.exec_lua("return ...", 1) == 2  # the channel goes on
                tg.cancel_scope.cancel()

    anyio.run(main)


def test_a_message_posted_in_part_is_finished_before_any_later_call() -> None:
    """A frame bigger than the system's buffer: `post_nowait` writes what fits and a task
    of its own the rest, and a later call's message never cuts into it."""
    reading = anyio.Event()

    async def serve(stream: anyio.abc.SocketStream) -> None:
        await reading.wait()
        async for message in messages(stream):
            await stream.send(msgpack.packb([1, message[1], None, len(message[3][0])]))

    async def main() -> None:
        async with fake_neovim(serve) as path:
            channel = await NvimChannel.connect(path)
            async with anyio.create_task_group() as tg:
                tg.start_soon(channel.run)
                big = channel.post_nowait("nvim_exec_lua", "x" * (4 << 20), [])
                assert big is not None and channel.unsent_bytes > 0  # the rest waits
                assert channel.post_nowait("nvim_exec_lua", "y", []) is None  # not now
                results: list[Any] = []

                async def later() -> None:
                    results.append(await channel.exec_lua("z" * 10))

                tg.start_soon(later)
                reading.set()
                with anyio.fail_after(20):
                    while not results:
                        await anyio.sleep(0.005)
                    while not (answer := channel.answer_nowait(big))[0]:
                        await anyio.sleep(0.005)
                assert answer == (True, 4 << 20) and results == [10]
                tg.cancel_scope.cancel()

    anyio.run(main)
