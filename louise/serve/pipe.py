"""A byte pump between this process's stdio and the session host (its socket, or the
stdio of a `--via` command): what `louise attach` and `louise serve --stdio` are.

Both directions at once, one thread each, blocking reads and writes of at most
`READ_CHUNK` bytes (`louise/proxy/fd_io.py`): a side that stops reading stops its writer
(the host then detaches this front end at its own byte budget) and nothing piles up here.
The front end closing its output is a half-close towards the host (the host sees the end
of this front end and detaches it), after which the host's last bytes are still passed on
for `linger` seconds; the host closing first is reported as `Ended.HOST`, so the caller
can say so."""

from __future__ import annotations

import contextlib
import enum
import os
import socket
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass

from louise.proxy.fd_io import read_some, write_all

LINGER_SECONDS = 5.0


class Ended(enum.Enum):
    FRONT_END = "front_end"  # the front end closed its side (or stopped existing): normal
    HOST = "host"  # the host closed its side first: it stopped or crashed


@dataclass(frozen=True, slots=True)
class Channel:
    """One side of the pump: where to read, where to write, how to say "no more" to it."""

    read_fd: int
    write_fd: int
    close_write: Callable[[], None]


class _Ends:
    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.front_end_done = False
        self.host_done = False

    def set(self, name: str) -> None:
        with self.changed:
            setattr(self, name, True)
            self.changed.notify_all()


def _copy(source: int, target: Channel, on_end: Callable[[bool], None]) -> None:
    """`source` into `target` until the source ends or the target stops taking bytes;
    then the target hears "no more" and `on_end(source_ended)` runs."""
    source_ended = False
    try:
        while True:
            data = read_some(source)
            if not data:
                source_ended = True
                return
            if not write_all(target.write_fd, data):
                return
    finally:
        # Which side ended is recorded before the other side hears of it: its answer (the
        # host closing in turn) must not be taken for the host leaving first.
        on_end(source_ended)
        with contextlib.suppress(OSError):
            target.close_write()


def pump(front_end: Channel, host: Channel, *, first: bytes = b"",
         linger: float = LINGER_SECONDS) -> Ended:
    """Pass bytes both ways until one side is done (see the module's docstring); `first`
    is written to the host before anything else (the attach hello)."""
    if first and not write_all(host.write_fd, first):
        front_end.close_write()
        return Ended.HOST
    ends = _Ends()

    def up_ended(front_end_closed: bool) -> None:
        ends.set("front_end_done" if front_end_closed else "host_done")

    def down_ended(host_closed: bool) -> None:
        ends.set("host_done" if host_closed else "front_end_done")
        if not host_closed:  # the front end stopped reading for good: it is gone
            with contextlib.suppress(OSError):
                host.close_write()

    for name, source, target, on_end in (("up", front_end.read_fd, host, up_ended),
                                         ("down", host.read_fd, front_end, down_ended)):
        threading.Thread(target=_copy, args=(source, target, on_end),
                         name=f"louise-pipe-{name}", daemon=True).start()
    with ends.changed:
        ends.changed.wait_for(lambda: ends.front_end_done or ends.host_done)
        if ends.host_done and not ends.front_end_done:
            return Ended.HOST
        # The front end is done: the host's last words for `linger` seconds at most.
        ends.changed.wait_for(lambda: ends.host_done, linger)
    return Ended.FRONT_END


def stdio_channel() -> Channel:
    """This process's stdin and stdout (the front end's side)."""
    out_fd = 1

    def close_stdout() -> None:
        # The front end reads an end of file; fd 1 then points nowhere harmful.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, out_fd)
        os.close(null)

    return Channel(read_fd=0, write_fd=out_fd, close_write=close_stdout)


def socket_channel(sock: socket.socket) -> Channel:
    """A connected socket: reads and writes on it, a half-close (`SHUT_WR`) at the end."""

    def half_close() -> None:
        sock.shutdown(socket.SHUT_WR)

    return Channel(read_fd=sock.fileno(), write_fd=sock.fileno(), close_write=half_close)


def process_channel(process: subprocess.Popen[bytes]) -> Channel:
    """A command started with pipes for stdin and stdout: its stdin closed at the end."""
    assert process.stdin is not None and process.stdout is not None
    stdin = process.stdin
    return Channel(read_fd=process.stdout.fileno(), write_fd=stdin.fileno(),
                   close_write=stdin.close)
