"""The engine process's stdio channel to Neovim without pynvim (louise/nvim/stdio.py),
against a stand-in Neovim on a pair of pipes."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest

from louise.nvim.stdio import MAX_MESSAGE_BYTES, RequestError, StdioNeovim


class FakeNeovim:
    """Neovim's end of the job's stdio: what it writes, the engine reads, and back."""

    def __init__(self) -> None:
        self.to_engine_read, self.to_engine = os.pipe()
        self.from_engine, self.from_engine_write = os.pipe()
        self.unpacker = msgpack.Unpacker(raw=False)

    def send(self, message: Any) -> None:
        os.write(self.to_engine, msgpack.packb(message))

    def receive(self) -> Any:
        for message in self.unpacker:
            return message
        while True:
            self.unpacker.feed(os.read(self.from_engine, 65536))
            for message in self.unpacker:
                return message

    def close(self) -> None:
        os.close(self.to_engine)


@pytest.fixture
def neovim() -> Iterator[FakeNeovim]:
    fake = FakeNeovim()
    yield fake
    for fd in (fake.to_engine_read, fake.from_engine, fake.from_engine_write):
        if fd >= 0:
            os.close(fd)


def serving(nvim: StdioNeovim, notes: list[Any]) -> threading.Thread:
    def on_request(name: str, args: list[Any]) -> Any:
        if name == "ping":
            return "pong"
        if name == "boom":
            raise ValueError("a bug")
        raise RequestError(f"unknown {name}")

    thread = threading.Thread(target=nvim.run_loop,
                              args=(on_request, lambda n, a: notes.append((n, a))))
    thread.start()
    return thread


def test_the_starts_call_is_answered_while_the_same_thread_reads(neovim: FakeNeovim) -> None:
    nvim = StdioNeovim(neovim.to_engine_read, neovim.from_engine_write)
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(nvim.call_lua("return 1", 2)))
    thread.start()
    kind, ident, method, args = neovim.receive()
    assert (kind, method, args) == (0, "nvim_exec_lua", ["return 1", [2]])
    neovim.send([2, "louise_stop", [300]])  # before the answer: kept for the loop
    neovim.send([0, 5, "ping", []])
    neovim.send([1, ident, None, {"opts": True}])
    thread.join(10)
    assert answers == [{"opts": True}]
    notes: list[Any] = []
    loop = serving(nvim, notes)
    assert neovim.receive() == [1, 5, None, "pong"]
    neovim.close()
    loop.join(10)
    assert not loop.is_alive()
    assert notes == [("louise_stop", [300])]


def test_requests_notifications_and_calls_from_another_thread(neovim: FakeNeovim) -> None:
    nvim = StdioNeovim(neovim.to_engine_read, neovim.from_engine_write)
    notes: list[Any] = []
    loop = serving(nvim, notes)
    neovim.send([0, 7, "ping", []])
    assert neovim.receive() == [1, 7, None, "pong"]
    neovim.send([0, 8, "nope", []])
    assert neovim.receive() == [1, 8, "unknown nope", None]
    neovim.send([0, 9, "boom", []])  # a handler's bug: answered, the channel goes on
    assert neovim.receive() == [1, 9, "louise: 'boom' failed", None]
    neovim.send([2, "louise", ["chat", {"agent": "demo"}]])
    future = nvim.post_lua("return ...", ("x",))  # the engine thread's fallback
    kind, ident, method, args = neovim.receive()
    assert (kind, method, args) == (0, "nvim_exec_lua", ["return ...", ["x"]])
    neovim.send([1, ident, None, "done"])
    assert future.result(10) == "done"
    failing = nvim.post_lua("error()", ())
    neovim.send([1, neovim.receive()[1], [0, "E5108: boom"], None])
    with pytest.raises(RuntimeError, match="E5108"):
        failing.result(10)
    nvim.notify_lua("require('louise.engine').on_ready(...)", 1, 2)
    assert neovim.receive() == [2, "nvim_exec_lua",
                                ["require('louise.engine').on_ready(...)", [1, 2]]]
    assert notes == [("louise", ["chat", {"agent": "demo"}])]
    waiting = nvim.post_lua("return 1", ())
    neovim.receive()
    neovim.close()  # Neovim gone: the loop ends, what waited fails, nothing more is sent
    loop.join(10)
    assert not loop.is_alive()
    with pytest.raises(ConnectionError):
        waiting.result(10)
    with pytest.raises(ConnectionError):
        nvim.post_lua("return 2", ()).result(10)


def test_a_message_beyond_the_bound_ends_the_channel(neovim: FakeNeovim) -> None:
    nvim = StdioNeovim(neovim.to_engine_read, neovim.from_engine_write)
    loop = serving(nvim, [])
    # A string header announcing more than the bound, then bytes: never buffered whole.
    header = b"\xdb" + (MAX_MESSAGE_BYTES + 1).to_bytes(4, "big")
    writer = threading.Thread(target=lambda: _write_until_closed(
        neovim.to_engine, header + b"x" * (1 << 20)))
    writer.start()
    loop.join(30)
    assert not loop.is_alive()
    os.close(neovim.to_engine_read)  # the writer's next write fails: it stops
    neovim.to_engine_read = -1
    writer.join(30)
    neovim.close()
    with pytest.raises(ConnectionError):
        nvim.post_lua("return 1", ()).result(10)


def _write_until_closed(fd: int, first: bytes) -> None:
    try:
        os.write(fd, first)
        while True:
            os.write(fd, b"x" * (1 << 20))
    except OSError:
        pass
