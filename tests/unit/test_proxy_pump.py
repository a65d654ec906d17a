"""The proxy's line pump (`louise.proxy.run._Pump`) over in-process pipes: whatever the
read boundaries, it sends on exactly what reading the whole stream as lines would —
whole lines, in order, a line split across reads joined, `\\r\\n` and blank lines as the
line decoder treats them, a line over the limit dropped — and a read of plain whole
lines (the common case: one message a read) goes on without being decoded line by line.

Each chunk is written to the pump's pipe only once the pump has read everything before
it (`_Pump.received`), so every chunk is exactly one read."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar

import pytest

from louise.acp.framing import LineDecoder, OversizedLine
from louise.proxy import ProxyCore, Routed
from louise.proxy import run as proxy_run
from louise.proxy.run import _Pump, _Side, _Writer

TIMEOUT = 30.0


def _passes(lines: bytes) -> bool:
    return b"route" not in lines


def _route(line: bytes, now: float) -> Routed:
    return Routed(to_client=[b"ahead:" + line], to_agent=[b"back:" + line])


def _dropped(size: int, head: bytes, limit: int) -> Routed:
    return Routed(to_agent=[b"dropped %d %s" % (size, head[:12])])


SIDE = _Side("agent", _passes, _route, _dropped, lambda line: Routed(to_client=[line]))


def expected(stream: bytes, max_line_bytes: int) -> tuple[bytes, bytes]:
    """What the pump must send ahead and back: the stream read as lines in one piece."""
    decoder = LineDecoder(max_line_bytes)
    ahead: list[bytes] = []
    back: list[bytes] = []
    for item in decoder.feed(stream) + decoder.finish():
        routed = (_dropped(item.size, item.head, max_line_bytes)
                  if isinstance(item, OversizedLine)
                  else Routed(to_client=[item]) if _passes(item) else _route(item, 0.0))
        ahead += routed.to_client
        back += routed.to_agent
    return (b"".join(line + b"\n" for line in ahead), b"".join(line + b"\n" for line in back))


def _drain(fd: int) -> bytes:
    chunks = []
    while data := os.read(fd, 1 << 16):
        chunks.append(data)
    return b"".join(chunks)


def _wait_until(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, "the pump did not read what was written"
        time.sleep(0.001)


class _Outputs:
    """One pipe for each writer, drained by a thread so no write waits on a full pipe."""

    def __init__(self, count: int) -> None:
        self.pipes = [os.pipe() for _ in range(count)]
        self.writers = [_Writer(write) for _, write in self.pipes]
        self.got: list[bytes] = [b""] * count
        self.threads = [threading.Thread(target=self._collect, args=(index,))
                        for index in range(count)]
        for thread in self.threads:
            thread.start()

    def _collect(self, index: int) -> None:
        self.got[index] = _drain(self.pipes[index][0])

    def close(self) -> list[bytes]:
        for _, write in self.pipes:
            os.close(write)
        for thread in self.threads:
            thread.join(TIMEOUT)
        for read, _ in self.pipes:
            os.close(read)
        return self.got


@contextmanager
def pumping(side: _Side, ahead: _Writer, back: _Writer, max_line_bytes: int,
            lock: threading.Lock | None = None,
            blocking: bool = True) -> Iterator[Callable[[bytes], None]]:
    """A pump on a pipe; yields `send(chunk)`, which returns once the pump has read it."""
    read, write = os.pipe()
    os.set_blocking(read, blocking)
    pump = _Pump(read, side, ahead, back, lock or threading.Lock(), max_line_bytes,
                 lambda: 0.0)
    thread = threading.Thread(target=pump.run)
    thread.start()
    sent = 0

    def send(chunk: bytes) -> None:
        nonlocal sent
        os.write(write, chunk)
        sent += len(chunk)
        _wait_until(lambda: pump.received == sent)

    try:
        yield send
    finally:
        os.close(write)
        thread.join(TIMEOUT)
        os.close(read)
    assert not thread.is_alive()


def through_pump(chunks: Sequence[bytes], max_line_bytes: int = 1 << 20,
                 blocking: bool = True) -> tuple[bytes, bytes]:
    outputs = _Outputs(2)
    for _, write in outputs.pipes:
        os.set_blocking(write, blocking)
    with pumping(SIDE, outputs.writers[0], outputs.writers[1], max_line_bytes,
                 blocking=blocking) as send:
        for chunk in chunks:
            send(chunk)
    ahead, back = outputs.close()
    return ahead, back


# Plain lines, lines the core routes, and what the decoder treats specially: `\r\n`, blank
# and all-space lines (skipped), a line starting with a space (kept), a `\r` inside a line.
STREAM = (b'{"a":1}\n{"route":2}\r\n\n   \n{"b":"x\ry"}\n \t{"c":3}\n'
          b'{"route":4}\n{"d":[1,2,3]}\n\x0b\n{"e":5}\n')


def test_a_stream_split_at_every_byte_offset_goes_on_as_one_piece_would() -> None:
    want = expected(STREAM, 1 << 20)
    assert want[0].count(b"\n") == 7 and want[1] == b'back:{"route":2}\nback:{"route":4}\n'
    for cut in range(1, len(STREAM)):
        assert through_pump([STREAM[:cut], STREAM[cut:]]) == want, cut


# Without a `\r` anywhere: a blank line or a spaced one may end or start a read of whole lines.
BLANKS = b'{"a":1}\n\n{"b":2}\n \n{"c":3}\n\t{"d":4}\n\x0c\n{"route":5}\n\n'


def test_blank_and_spaced_lines_at_every_byte_offset() -> None:
    want = expected(BLANKS, 1 << 20)
    assert want[0].count(b"\n") == 5
    for cut in range(1, len(BLANKS)):
        assert through_pump([BLANKS[:cut], BLANKS[cut:]]) == want, cut
    assert through_pump([BLANKS]) == want


def test_a_stream_in_three_reads_at_every_pair_of_offsets() -> None:
    want = expected(STREAM, 1 << 20)
    for first in range(1, len(STREAM) - 1, 3):
        for second in range(first + 1, len(STREAM), 5):
            chunks = [STREAM[:first], STREAM[first:second], STREAM[second:]]
            assert through_pump(chunks) == want, (first, second)


def test_a_stream_one_byte_a_read() -> None:
    assert through_pump([bytes([byte]) for byte in STREAM]) == expected(STREAM, 1 << 20)


@pytest.mark.parametrize("tail", [b'{"last":1}', b'{"route":9}', b"   ", b"\r"])
def test_a_last_line_without_its_newline_goes_on_at_the_end_of_input(tail: bytes) -> None:
    stream = b'{"a":1}\n' + tail
    want = expected(stream, 1 << 20)
    for cut in range(1, len(stream)):
        assert through_pump([stream[:cut], stream[cut:]]) == want, cut
    assert through_pump([stream]) == want


def test_a_line_over_the_limit_is_dropped_wherever_the_reads_cut_it() -> None:
    limit = 24
    stream = (b'{"a":1}\n{"long":"' + b"x" * 40 + b'"}\n{"b":2}\n'
              + b'{"exactly":"' + b"y" * (limit - 14) + b'"}\n{"c":3}\n')
    want = expected(stream, limit)
    assert want[1].startswith(b"dropped 51 ")  # the long line, answered back
    assert b'"exactly"' in want[0]  # a line of exactly the limit passes
    for cut in range(1, len(stream)):
        assert through_pump([stream[:cut], stream[cut:]], limit) == want, cut
    # Whole in one read, several plain lines together longer than the limit: each line on
    # its own is what counts.
    assert through_pump([stream], limit) == want
    plain = b'{"a":1}\n' * 10
    assert through_pump([plain], limit) == (plain, b"")


def test_both_directions_at_once_keep_each_line_whole_and_in_order() -> None:
    """Two pumps writing to the same side (one's lines, the other's answers back) never
    interleave inside a line, and each keeps its own order."""
    client = _Side("client", _passes, lambda line, now: Routed(to_client=[b"answer:" + line]),
                   _dropped, lambda line: Routed(to_agent=[line]))
    outputs = _Outputs(2)  # 0: to the client, 1: to the agent
    to_client, to_agent = outputs.writers
    lock = threading.Lock()
    from_agent = [b'{"agent":%d,"pad":"%s"}\n' % (index, b"a" * (index % 50))
                  for index in range(600)]
    from_client = [b'{"route":%d}\n' % index if index % 2 else b'{"client":%d}\n' % index
                   for index in range(600)]
    with pumping(SIDE, to_client, to_agent, 1 << 20, lock) as agent_send, \
            pumping(client, to_agent, to_client, 1 << 20, lock) as client_send:
        senders = [threading.Thread(target=lambda: [agent_send(b"".join(from_agent[i:i + 7]))
                                                    for i in range(0, 600, 7)]),
                   threading.Thread(target=lambda: [client_send(b"".join(from_client[i:i + 5]))
                                                    for i in range(0, 600, 5)])]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(TIMEOUT)
    got_client, got_agent = outputs.close()
    client_lines = got_client.splitlines(keepends=True)
    assert [line for line in client_lines if b'"agent"' in line] == from_agent
    assert [line for line in client_lines if line.startswith(b"answer:")] == [
        b"answer:" + line for line in from_client if b"route" in line]
    assert len(client_lines) == 600 + 300
    assert got_agent.splitlines(keepends=True) == [
        line for line in from_client if b"route" not in line]


class _CountingDecoder(LineDecoder):
    fed: ClassVar[list[bytes]] = []

    def feed(self, data: bytes) -> list[bytes | OversizedLine]:
        _CountingDecoder.fed.append(data)
        return super().feed(data)


def test_reads_of_plain_whole_lines_are_not_decoded_line_by_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One message a read (a paced stream) goes on as it was read: decoding it into lines
    and joining them again was most of the proxy's own work per message."""
    monkeypatch.setattr(proxy_run, "LineDecoder", _CountingDecoder)
    _CountingDecoder.fed = []
    messages = [b'{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}\n' % index
                for index in range(20)]
    ahead, back = through_pump([*messages, b"".join(messages)])
    assert (ahead, back) == (b"".join(messages) * 2, b"")
    assert _CountingDecoder.fed == []
    # A read that ends inside a line: only that line's pieces are decoded.
    _CountingDecoder.fed = []
    ahead, _ = through_pump([messages[0] + messages[1][:10], messages[1][10:] + messages[2]])
    assert ahead == b"".join(messages[:3])
    assert _CountingDecoder.fed == [messages[1][:10], messages[1][10:]]


def test_descriptors_left_non_blocking_are_waited_on_not_lost() -> None:
    """A client may hand the proxy non-blocking descriptors: an empty read waits for input,
    and a write larger than the pipe holds waits for its reader, in pieces, whole."""
    big = b"".join(b'{"n":%d,"pad":"%s"}\n' % (index, b"p" * 200) for index in range(1200))
    assert len(big) > 1 << 16  # more than the output pipe holds at once
    chunks = [STREAM[:20], STREAM[20:], big[:70_000], big[70_000:]]
    ahead, back = through_pump(chunks, blocking=False)
    want = expected(STREAM + big, 1 << 20)
    assert (ahead, back) == want


def test_a_write_to_a_full_non_blocking_pipe_waits_and_sends_it_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's first try finds the pipe full (its reader is not reading yet): it waits
    for room and then writes everything, in order."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    filler = b"f" * 4096
    held = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            held += os.write(write, filler)
    reader_may_read = threading.Event()
    real_write = os.write

    def first_write_finds_it_full(fd: int, data: bytes | memoryview) -> int:
        try:
            return real_write(fd, data)
        except BlockingIOError:
            reader_may_read.set()  # only now: the first try must have found no room
            raise

    got: list[bytes] = []

    def reader() -> None:
        reader_may_read.wait(TIMEOUT)
        got.append(_drain(read))

    thread = threading.Thread(target=reader)
    thread.start()
    monkeypatch.setattr(os, "write", first_write_finds_it_full)
    data = b"".join(b'{"n":%d}\n' % index for index in range(20_000))
    writer = _Writer(write)
    writer.write(data)
    assert not writer.broken and reader_may_read.is_set()
    os.close(write)
    thread.join(TIMEOUT)
    os.close(read)
    assert got == [filler * (held // len(filler)) + filler[:held % len(filler)] + data]


class _NoContains(bytes):
    def __contains__(self, mark: object) -> bool:
        raise AssertionError(f"`{mark!r} in lines` on the per-read path")


def test_the_per_read_checks_search_without_bytes_in() -> None:
    """`mark in data` on bytes first tries `mark` as an integer and discards the TypeError:
    profiled, it was most of the proxy's own work per paced message. The checks every read
    goes through use `find` and `re`."""
    core = ProxyCore()
    core.from_agent(b'{"jsonrpc":"2.0","id":0,"result":{"agentCapabilities":{}}}', 0.0)
    line = (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'
            b'"update":{"sessionUpdate":"agent_message_chunk"}}}\n')
    for lines in (line, line * 3, b" " + line, line.replace(b"s1", b"\\u0073")):
        spy = _NoContains(lines)
        assert core.passes_from_agent(spy) == core.passes_from_agent(bytes(lines))
        assert core.passes_from_client(spy) == core.passes_from_client(bytes(lines))
        assert proxy_run._plain(spy) == proxy_run._plain(bytes(lines))
