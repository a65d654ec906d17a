"""The two byte-bounded queues of the JSON-RPC peer (anyio, one event loop).

`OutboundQueue`: lines for the writer. Bounded in bytes, never lossy: a line that does not
fit waits, in order, with a `Ticket`. `InboundQueue`: batches of decoded events from the
reader to the ordered consumer, bounded by the bytes they were decoded from.
"""

from __future__ import annotations

from collections import deque

import anyio

from louise.acp.rpc_events import Event


class Ticket:
    """A line waiting for room in the outbound queue."""

    __slots__ = ("admitted", "line", "refused", "wake")

    def __init__(self, line: bytes) -> None:
        self.line = line
        self.admitted = False
        self.refused = False
        self.wake = anyio.Event()


class OutboundQueue:
    """Lines for the writer, bounded in bytes. Waiting lines are admitted in order; a
    line longer than the whole budget is admitted alone into an empty queue. Nothing is
    dropped: until `close`, every line offered is eventually written or waits."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lines: deque[bytes] = deque()
        self._bytes = 0
        self._waiting: deque[Ticket] = deque()
        self._waiting_bytes = 0
        self._has_lines = anyio.Event()
        self._room = anyio.Event()
        self.closed = False

    @property
    def backlog(self) -> int:
        """Bytes queued or waiting to be queued."""
        return self._bytes + self._waiting_bytes

    def offer(self, line: bytes) -> Ticket | None:
        """Queue `line` now (None) or return the ticket it waits with (`wait`)."""
        if self.closed:
            ticket = Ticket(line)
            ticket.refused = True
            ticket.wake.set()
            return ticket
        if not self._waiting and (self._bytes == 0 or self._bytes + len(line) <= self.capacity):
            self._push(line)
            return None
        ticket = Ticket(line)
        self._waiting.append(ticket)
        self._waiting_bytes += len(line)
        return ticket

    async def wait(self, ticket: Ticket) -> None:
        """Until `ticket` is admitted or refused; cancelled, it gives up its place."""
        try:
            await ticket.wake.wait()
        finally:
            if not ticket.wake.is_set():
                self._waiting.remove(ticket)
                self._waiting_bytes -= len(ticket.line)
                self._admit()

    async def put(self, line: bytes) -> bool:
        """Queue `line`, waiting for room as long as it takes; False once closed."""
        ticket = self.offer(line)
        if ticket is None:
            return True
        await self.wait(ticket)
        return ticket.admitted

    def put_urgent(self, line: bytes) -> None:
        """Queue a small control line past the budget. Only for `$/cancel_request`: each
        follows one request that was admitted, so the overshoot stays bounded."""
        if not self.closed:
            self._push(line)

    async def take(self, max_bytes: int) -> bytes:
        """For the writer: the next lines, joined, up to `max_bytes` (at least one)."""
        while not self._lines:
            if self._has_lines.is_set():
                self._has_lines = anyio.Event()
            await self._has_lines.wait()
        parts = [self._lines.popleft()]
        size = len(parts[0])
        while self._lines and size + len(self._lines[0]) <= max_bytes:
            line = self._lines.popleft()
            parts.append(line)
            size += len(line)
        self._bytes -= size
        self._admit()
        self._room.set()
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def wait_for_room(self) -> None:
        """Until the backlog is under the budget."""
        while self.backlog >= self.capacity and not self.closed:
            if self._room.is_set():
                self._room = anyio.Event()
            await self._room.wait()

    def close(self) -> None:
        self.closed = True
        for ticket in self._waiting:
            ticket.refused = True
            ticket.wake.set()
        self._waiting.clear()
        self._waiting_bytes = 0
        self._lines.clear()
        self._bytes = 0
        self._room.set()

    def _push(self, line: bytes) -> None:
        self._lines.append(line)
        self._bytes += len(line)
        self._has_lines.set()

    def _admit(self) -> None:
        while self._waiting:
            ticket = self._waiting[0]
            if self._bytes and self._bytes + len(ticket.line) > self.capacity:
                return
            self._waiting.popleft()
            self._waiting_bytes -= len(ticket.line)
            self._push(ticket.line)
            ticket.admitted = True
            ticket.wake.set()


class InboundQueue:
    """Batches of events from the reader to the ordered consumer, bounded by the bytes
    they were decoded from. One producer, one consumer."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._batches: deque[tuple[list[Event], int]] = deque()
        self._bytes = 0
        self._ended = False
        self._has_batches = anyio.Event()
        self._room = anyio.Event()

    @property
    def empty(self) -> bool:
        return not self._batches

    async def put(self, batch: list[Event], size: int) -> None:
        """Queue a batch, then wait while the queue is over its budget."""
        self._batches.append((batch, size))
        self._bytes += size
        self._has_batches.set()
        while self._bytes > self.capacity:
            if self._room.is_set():
                self._room = anyio.Event()
            await self._room.wait()

    def end(self) -> None:
        self._ended = True
        self._has_batches.set()

    async def get(self) -> tuple[list[Event], int] | None:
        """The next batch, or None once the input has ended and all were taken."""
        while not self._batches:
            if self._ended:
                return None
            if self._has_batches.is_set():
                self._has_batches = anyio.Event()
            await self._has_batches.wait()
        return self._batches.popleft()

    def release(self, size: int) -> None:
        """The consumer is done with a batch of `size` bytes."""
        self._bytes -= size
        if self._bytes <= self.capacity:
            self._room.set()
