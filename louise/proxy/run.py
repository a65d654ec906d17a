"""The ACP proxy's driver: the agent subprocess, two line pumps, and shutdown.

The agent runs without a shell, with the proxy's own stderr (so whatever the client does
with the proxy's stderr it does with the agent's). Lines are bounded: one longer than
`max_line_bytes` is dropped, with a warning on stderr, and answered (see
`ProxyCore.dropped_from_client`). A line the core fails on (a bug: it must not) is
forwarded as it came, with a warning: the proxy keeps running. When the client closes
the proxy's input, the agent's input is closed and the agent gets `grace_seconds` to exit
before it is terminated, then killed; when the agent's output ends, the proxy ends with
its exit status. An agent that exits while a child of its still holds its stdout open
ends the proxy too: its output is read until it is quiet, then its process group is
stopped.

Wire speed: each direction is one thread of blocking reads and writes, no event loop. A
read takes whatever the pipe holds; its complete lines go through the core together
(`ProxyCore.passes_from_*` lets most reads through without decoding a line) and leave in
one write. A write waits for its reader, so a slow reader slows its writer instead of
filling memory, and holds only its own direction. A read's whole lines skip the line
decoder when they are plain (`_plain`: what the decoder would give back joined is the
read itself); only a line split across reads, and anything unusual, is decoded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from louise.acp.framing import DEFAULT_MAX_LINE_BYTES, LineDecoder, OversizedLine
from louise.proxy.core import ProxyCore, Routed
from louise.proxy.fd_io import READ_CHUNK, read_some, write_all

log = logging.getLogger("louise.proxy")

# What `bytes.isspace` counts as space: a line starting with one may be blank to the decoder.
_SPACE = frozenset(b" \t\n\r\x0b\x0c")
_SPACE_AFTER_NEWLINE = re.compile(rb"\n[\n \t\x0b\x0c]")  # `re`: it scans for the newline
_QUIET_SECONDS = 0.05  # after the agent exits: its output is read once this long quiet


def _plain(lines: bytes) -> bool:
    """True when `lines` (whole lines, the last ending in b"\n") are exactly what a
    `LineDecoder` would give back for them, joined by newlines: no `\r` to strip, no line
    blank or starting with a space (so none is all spaces, which it would skip)."""
    if lines[0] in _SPACE or lines.find(b"\r") >= 0:
        return False
    # One line (a message a read, the common case) is plain already.
    return (lines.find(b"\n") == len(lines) - 1
            or _SPACE_AFTER_NEWLINE.search(lines) is None)


class _Writer:
    """Batches of whole lines to one descriptor; both pumps may write to the same side,
    never interleaved. Once its reader is gone (or the proxy ends), writes are dropped."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.broken = False

    def write(self, data: bytes) -> None:
        if not data:
            return
        with self.lock:
            if self.broken:
                return
            if not write_all(self.fd, data):
                self.broken = True

    def finish(self, timeout: float) -> bool:
        """No more writes, once the one under way (if any) is done within `timeout`;
        False when it is not (a reader that does not read)."""
        if not self.lock.acquire(timeout=timeout):
            return False
        self.broken = True
        self.lock.release()
        return True


@dataclass(frozen=True, slots=True)
class _Side:
    """One side's lines through the core: `passes` for a read the core lets through as
    it is, `route` for a line, `dropped` for one over the limit, `forward` for a line
    passed on untouched."""

    name: str
    passes: Callable[[bytes], bool]
    route: Callable[[bytes, float], Routed]
    dropped: Callable[[int, bytes, int], Routed]
    forward: Callable[[bytes], Routed]


def _routed(side: _Side, item: bytes | OversizedLine, max_line_bytes: int,
            now: float) -> Routed:
    try:
        if isinstance(item, OversizedLine):
            return side.dropped(item.size, item.head, max_line_bytes)
        return side.route(item, now)
    except Exception as exc:  # the core must not fail; if it does, the line still goes
        log.warning("%s: internal error on a line (%s: %.200s); passed it on unread",
                    side.name, type(exc).__name__, exc)
        return Routed() if isinstance(item, OversizedLine) else side.forward(item)


class _Pump:
    """One direction: reads `source` until its end, routes, writes. `ahead` is where the
    side's lines go (the other side), `back` the side itself (the proxy's answers)."""

    def __init__(self, source: int, side: _Side, ahead: _Writer, back: _Writer,
                 core_lock: threading.Lock, max_line_bytes: int,
                 clock: Callable[[], float]) -> None:
        self.source = source
        self.side = side
        self.ahead = ahead
        self.back = back
        self.core_lock = core_lock
        self.max_line_bytes = max_line_bytes
        self.clock = clock
        self.received = 0  # bytes read so far

    def run(self) -> None:
        decoder = LineDecoder(self.max_line_bytes)
        split = False  # the decoder holds the start of a line: the last read ended in it
        source, max_line_bytes, passes = self.source, self.max_line_bytes, self.side.passes
        core_lock, ahead = self.core_lock, self.ahead
        while True:
            try:
                data = os.read(source, READ_CHUNK)
            except OSError:
                data = read_some(source)
            self.received += len(data)
            # Most reads: whole plain lines the core lets through, straight on (the same
            # as `_route` does with them, in fewer steps: this is per message when paced).
            if (not split and data and data[-1] == 10 and len(data) <= max_line_bytes
                    and _plain(data)):
                with core_lock:
                    through = passes(data)
                if through:
                    ahead.write(data)
                else:
                    self._route([], data)
                continue
            if not data:
                items = decoder.finish()
                if items:
                    self._route(items, b"")
                return
            items = []
            if split:  # the decoder finishes the line it holds, at this read's first newline
                first = data.find(b"\n") + 1
                if not first:
                    decoder.feed(data)  # no line ends here: nothing comes back
                    continue
                items = decoder.feed(data[:first])
                data = data[first:]
            end = data.rfind(b"\n") + 1
            tail = data[end:]  # the start of a line, kept for the next read
            data = data[:end]
            if data and not (len(data) <= self.max_line_bytes and _plain(data)):
                items += decoder.feed(data)  # ends in a newline: the decoder is left empty
                data = b""
            split = bool(tail)
            if split:
                decoder.feed(tail)  # no newline in it: nothing comes back
            if items or data:
                self._route(items, data)

    def _route(self, items: list[bytes | OversizedLine], plain: bytes) -> None:
        """`items` from the decoder, then `plain` lines (see `_plain`), in that order."""
        whole: bytes | None = plain
        if items:
            lines = [item for item in items if isinstance(item, bytes)]
            whole = (b"\n".join(lines) + b"\n" + plain) if len(lines) == len(items) else None
        with self.core_lock:
            if whole is not None and self.side.passes(whole):
                ahead, back = whole, b""
            else:
                if plain:
                    items = [*items, *plain[:-1].split(b"\n")]
                ahead, back = self._each(items, self.clock())
        self.ahead.write(ahead)
        self.back.write(back)

    def _each(self, items: list[bytes | OversizedLine], now: float) -> tuple[bytes, bytes]:
        ahead: list[bytes] = []
        back: list[bytes] = []
        side = self.side
        for item in items:
            if isinstance(item, bytes) and side.passes(item):
                ahead.append(item)
                continue
            routed = _routed(side, item, self.max_line_bytes, now)
            to_ahead, to_back = ((routed.to_agent, routed.to_client) if side.name == "client"
                                 else (routed.to_client, routed.to_agent))
            ahead.extend(to_ahead)
            back.extend(to_back)
        return (b"".join(line + b"\n" for line in ahead),
                b"".join(line + b"\n" for line in back))


class _Ends:
    """What the main thread waits for: the agent's output ended, the agent exited, the
    client closed the proxy's input."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.output_ended = False
        self.exited = False
        self.client_gone = False

    def set(self, name: str) -> None:
        with self.changed:
            setattr(self, name, True)
            self.changed.notify_all()

    def wait(self, predicate: Callable[[], bool], timeout: float | None = None) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, timeout)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _stop(process: subprocess.Popen[bytes], to_agent: _Writer, ends: _Ends,
          grace_seconds: float) -> None:
    """The agent's end of input, then `grace_seconds` for it to exit, then SIGTERM, then
    SIGKILL (its process group)."""
    if to_agent.finish(grace_seconds) and process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None and not ends.exited:
            _signal_group(process.pid, sig)
        if ends.wait(lambda: ends.exited, grace_seconds):
            return


def _thread(target: Callable[[], object], name: str, done: Callable[[], None]) -> None:
    def body() -> None:
        try:
            target()
        finally:
            done()

    # A daemon: one blocked reading the client, whose input may never end, must not keep
    # the proxy alive once its agent is gone.
    threading.Thread(target=body, name=f"louise-proxy-{name}", daemon=True).start()


def run_proxy(
    argv: Sequence[str],
    client_in: int,
    client_out: int,
    *,
    env: Mapping[str, str] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    grace_seconds: float = 2.0,
    clock: Callable[[], float] = time.time,
    core: ProxyCore | None = None,
) -> int:
    """Run one agent behind the proxy, between the client's descriptors `client_in` and
    `client_out`, until it exits; return its exit status. For a process that ends after
    it: a thread may still be blocked reading `client_in`.

    Raises `OSError` with a readable message when the agent cannot be started."""
    proxy = core or ProxyCore()
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # the proxy's own stderr
            env={**os.environ, **(env or {})},
            start_new_session=True,  # its own process group: stop the whole tree
            bufsize=0,
        )
    except FileNotFoundError:
        raise OSError(f"agent command not found: {argv[0]!r}") from None
    except PermissionError:
        raise OSError(f"agent command is not executable: {argv[0]!r}") from None
    assert process.stdin is not None and process.stdout is not None
    to_agent = _Writer(process.stdin.fileno())
    to_client = _Writer(client_out)
    core_lock = threading.Lock()
    client = _Side("client", proxy.passes_from_client, proxy.from_client,
                   proxy.dropped_from_client, lambda line: Routed(to_agent=[line]))
    agent = _Side("agent", proxy.passes_from_agent, proxy.from_agent,
                  proxy.dropped_from_agent, lambda line: Routed(to_client=[line]))
    from_agent = _Pump(process.stdout.fileno(), agent, to_client, to_agent, core_lock,
                       max_line_bytes, clock)
    from_client = _Pump(client_in, client, to_agent, to_client, core_lock, max_line_bytes,
                        clock)
    ends = _Ends()
    _thread(process.wait, "exit", lambda: ends.set("exited"))
    _thread(from_agent.run, "agent", lambda: ends.set("output_ended"))
    _thread(from_client.run, "client", lambda: ends.set("client_gone"))
    try:
        _serve(process, to_agent, from_agent, ends, grace_seconds)
    finally:
        _stop(process, to_agent, ends, grace_seconds)
        # Nothing half written to the client when the process ends.
        to_client.finish(grace_seconds)
    status = process.returncode
    return 1 if status is None else status


def _serve(process: subprocess.Popen[bytes], to_agent: _Writer, from_agent: _Pump,
           ends: _Ends, grace_seconds: float) -> None:
    """Until the agent's output ends, or it exits and its output goes quiet."""
    ends.wait(lambda: ends.output_ended or ends.exited or ends.client_gone)
    if not (ends.output_ended or ends.exited):
        # The client is gone: the agent gets its end-of-input, then a grace period.
        _stop(process, to_agent, ends, grace_seconds)
        ends.wait(lambda: ends.output_ended or ends.exited)
    if ends.output_ended:
        return
    # A child of the agent may hold its stdout open, so the end of its output may never
    # come: forward what it writes until quiet, then stop its group.
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        seen = from_agent.received
        if ends.wait(lambda: ends.output_ended, _QUIET_SECONDS):
            return
        if from_agent.received == seen:
            break
    _signal_group(process.pid, signal.SIGKILL)
