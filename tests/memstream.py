"""An in-memory byte pipe for driving the JSON-RPC peer without processes."""

from __future__ import annotations

import json
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream


class PipeReader(ByteReceiveStream):
    def __init__(self, stream: MemoryObjectReceiveStream[bytes]) -> None:
        self._stream = stream

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return await self._stream.receive()
        except anyio.EndOfStream:
            raise
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        await self._stream.aclose()


class PipeWriter(ByteSendStream):
    def __init__(self, stream: MemoryObjectSendStream[bytes]) -> None:
        self._stream = stream

    async def send(self, item: bytes) -> None:
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()


def pipe(buffer: int = 1024) -> tuple[PipeWriter, PipeReader]:
    send, receive = anyio.create_memory_object_stream[bytes](buffer)
    return PipeWriter(send), PipeReader(receive)


class LineCollector:
    """Reads what the peer wrote, one JSON message at a time."""

    def __init__(self, reader: PipeReader) -> None:
        self._reader = reader
        self._buffer = b""

    async def next(self, timeout: float = 10.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            while b"\n" not in self._buffer:
                self._buffer += await self._reader.receive()
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"
