"""Newline framing for NDJSON, sans-I/O (in the manner of h11): bytes in, lines out.

A line longer than `max_line_bytes` is discarded as it streams past, never held in memory
whole; the decoder reports its size and its first bytes once its end arrives, so the peer
can log a protocol error (and answer the request the line began, if its head says which).
`\r` before `\n` is stripped and blank lines are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024  # the client's own is smaller: see PeerLimits
HEAD_BYTES = 512  # what is kept of a dropped line: enough for its id and method


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """A line that exceeded the limit and was dropped; `size` counts its bytes, `head`
    holds the first HEAD_BYTES of them."""

    size: int
    head: bytes = b""


class LineDecoder:
    """Splits a byte stream into lines, bounded by `max_line_bytes`."""

    __slots__ = ("_buffer", "_discarded", "_discarding", "_head", "max_line_bytes")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes <= 0:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._discarding = False
        self._discarded = 0
        self._head = b""

    @property
    def idle(self) -> bool:
        """No part of a line is held (or being discarded): the next byte starts a line."""
        return not self._buffer and not self._discarding

    def feed(self, data: bytes) -> list[bytes | OversizedLine]:
        """Accept more bytes; return the complete lines (or oversize reports) they finish."""
        out: list[bytes | OversizedLine] = []
        start = 0
        end = len(data)
        while start < end:
            newline = data.find(b"\n", start)
            if newline < 0:
                self._append(data, start, end)
                break
            if not self._buffer and not self._discarding and newline - start <= self.max_line_bytes:
                # Fast path: a whole line inside this chunk, no copy into the buffer.
                line = data[start:newline]
                start = newline + 1
                if line.endswith(b"\r"):
                    line = line[:-1]
                if line and not line.isspace():
                    out.append(line)
                continue
            self._append(data, start, newline)
            start = newline + 1
            if self._discarding:
                out.append(self._oversized())
                continue
            line = bytes(self._buffer)
            self._buffer.clear()
            if line.endswith(b"\r"):
                line = line[:-1]
            if line and not line.isspace():
                out.append(line)
        return out

    def _append(self, data: bytes, start: int, stop: int) -> None:
        count = stop - start
        if count <= 0:
            return
        if self._discarding:
            self._discarded += count
            if len(self._head) < HEAD_BYTES:
                self._head += data[start : min(stop, start + HEAD_BYTES - len(self._head))]
            return
        if len(self._buffer) + count > self.max_line_bytes:
            # Too long: drop what we hold and count the rest as it streams past.
            self._head = bytes(self._buffer[:HEAD_BYTES])
            if len(self._head) < HEAD_BYTES:
                self._head += data[start : min(stop, start + HEAD_BYTES - len(self._head))]
            self._discarded = len(self._buffer) + count
            self._buffer = bytearray()
            self._discarding = True
            return
        self._buffer += data[start:stop]

    def finish(self) -> list[bytes | OversizedLine]:
        """End of stream: a final unterminated line is still delivered."""
        out: list[bytes | OversizedLine] = []
        if self._discarding:
            out.append(self._oversized())
        elif self._buffer and not self._buffer.isspace():
            line = bytes(self._buffer)
            out.append(line[:-1] if line.endswith(b"\r") else line)
        self._buffer = bytearray()
        return out

    def _oversized(self) -> OversizedLine:
        line = OversizedLine(self._discarded, self._head)
        self._discarding = False
        self._discarded = 0
        self._head = b""
        return line
