"""The entries: `run_host`, the session host listening on a Unix socket until it is idle
(`louise serve`), and `serve_stdio_connection`, a host serving exactly one front end on a
pair of descriptors (for tests, and for a host that lives as long as its one pipe)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
import stat
import struct
from pathlib import Path

import anyio

from louise.config.model import Config
from louise.serve.host import Host, HostSettings, peer_uid
from louise.serve.paths import short_address
from louise.storage import durable

log = logging.getLogger("louise.serve")
# A socket path of any length is bound and reached through its directory held open
# (`paths.short_address`: `/proc/self/fd/N/NAME`), where the name must fit in sun_path
# (108 bytes on Linux with its NUL), beside the name it is made under (`.NAME.PID`).
MAX_SOCKET_NAME = 64


class HostError(Exception):
    """Why the host could not start, in one line for a person."""


def _check_directory(directory: Path) -> None:
    durable.ensure_private_dir(directory)
    info = directory.stat()
    if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise HostError(f"{directory} is not a private directory of this user; "
                        "the host will not listen there")


def _clear_stale(socket_path: Path) -> None:
    """A socket left by a host that died is removed; a live one is not taken over."""
    if not os.path.lexists(socket_path):
        return
    if not stat.S_ISSOCK(os.lstat(socket_path).st_mode):
        raise HostError(f"{socket_path} exists and is not a socket; remove it first")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with short_address(socket_path) as address:
            probe.connect(address)
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise HostError(f"cannot tell whether a host listens on {socket_path}: "
                            f"{exc.strerror}") from None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(socket_path)
        return
    finally:
        probe.close()
    raise HostError(f"a session host already listens on {socket_path}")


def run_host(socket_path: str | os.PathLike[str], *, idle_exit_seconds: float,
             config: Config, settings: HostSettings | None = None) -> int:
    """Serve front ends on `socket_path` until idle for `idle_exit_seconds` (or SIGTERM,
    SIGINT); 0 then. Raises `HostError` when it cannot listen."""
    path = Path(socket_path)
    if len(os.fsencode(path.name)) > MAX_SOCKET_NAME:
        raise HostError(f"the socket's name is too long for a Unix socket: {path.name} "
                        f"(at most {MAX_SOCKET_NAME} bytes)")
    chosen = settings or HostSettings()
    chosen = HostSettings(idle_exit_seconds, chosen.front_end_budget,
                          chosen.max_permission_wait)
    _check_directory(path.parent)
    _clear_stale(path)
    try:
        return anyio.run(_serve_socket, path, config, chosen)
    except BaseExceptionGroup as group:  # the task group's: its HostError, as it is
        raise _first_host_error(group) or group from None


def _first_host_error(group: BaseExceptionGroup[BaseException]) -> HostError | None:
    for error in group.exceptions:
        if isinstance(error, HostError):
            return error
        if isinstance(error, BaseExceptionGroup):
            found = _first_host_error(error)
            if found is not None:
                return found
    return None


async def _serve_socket(path: Path, config: Config, settings: HostSettings) -> int:
    async with anyio.create_task_group() as group:
        host = Host(config, group, settings)

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                uid = peer_uid(writer.get_extra_info("socket"))
            except (OSError, AttributeError, struct.error) as exc:
                log.warning("refused a connection whose user cannot be told (%s)", exc)
                writer.transport.abort()
                return
            if uid is not None and uid != os.geteuid():
                log.warning("refused a connection from uid %d (not this user)", uid)
                writer.transport.abort()
                return
            transport = writer.transport
            assert isinstance(transport, asyncio.WriteTransport)
            await host.serve_connection(reader, transport)

        # Bound and listening under a name of its own, then renamed into place: a front
        # end that sees the socket can connect to it.
        making = path.with_name(f".{path.name}.{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(making)
        old_umask = os.umask(0o177)  # the socket is created 0600
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with short_address(making) as address:  # a path of any length
                listening.bind(address)
            os.chmod(making, 0o600)
            server = await asyncio.start_unix_server(accept, sock=listening)
            os.rename(making, path)
        except OSError as exc:
            listening.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(making)
            raise HostError(f"cannot listen on {path}: {exc.strerror or exc}") from None
        finally:
            os.umask(old_umask)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, host.done.set)
        log.info("session host listening on %s (pid %d)", path, os.getpid())
        group.start_soon(host.watch_idle)
        try:
            await host.done.wait()
        finally:
            server.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            await host.stop()
            group.cancel_scope.cancel()
    return 0


def serve_stdio_connection(read_fd: int, write_fd: int, *, config: Config,
                           settings: HostSettings | None = None) -> int:
    """A host for the one front end on `read_fd`/`write_fd`: served until that pipe
    ends and then, with nothing working, for `idle_exit_seconds` more at most."""
    return anyio.run(_serve_pipe, read_fd, write_fd, config, settings or HostSettings())


async def _serve_pipe(read_fd: int, write_fd: int, config: Config,
                      settings: HostSettings) -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(read_fd, "rb", buffering=0, closefd=False))
    transport, _ = await loop.connect_write_pipe(
        asyncio.BaseProtocol, os.fdopen(write_fd, "wb", buffering=0, closefd=False))
    async with anyio.create_task_group() as group:
        host = Host(config, group, settings)
        try:
            await host.serve_connection(reader, transport)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(settings.idle_exit_seconds):
                    while host.working():
                        await asyncio.sleep(0.1)
        finally:
            await host.stop()
            group.cancel_scope.cancel()
    return 0
