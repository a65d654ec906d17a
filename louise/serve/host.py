"""The session host's server: front ends connect (a Unix socket of this user only, or a
pair of descriptors), write the attach hello (or start with ACP: the default agent), and
are served by the `AgentLink` of their agent, one per agent command. Writes to a front end
never wait: past its byte budget a front end that stopped reading is detached. With no
front end and nothing working for `idle_exit_seconds`, the host ends."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio.abc

from louise.acp.framing import LineDecoder, OversizedLine
from louise.acp.json_lines import encode_line
from louise.config.model import Config
from louise.config.problems import UnknownAgentError
from louise.serve.agent_link import AgentLink, AgentStartError
from louise.serve.hello import MAX_HELLO_BYTES, AgentCommand, FrontEnd, HelloError, parse_hello
from louise.serve.host_answers import HostAnswers
from louise.serve.limits import HostLimits
from louise.serve.permissions import auto_answer_for
from louise.serve.replay import DEFAULT_MAX_BYTES as DEFAULT_HISTORY_BYTES
from louise.storage.limits_cache import LimitsCache

log = logging.getLogger("louise.serve")
DEFAULT_FRONT_END_BUDGET = 8 * 1024 * 1024
FRONT_END_MAX_LINE = 32 * 1024 * 1024
HELLO_SECONDS = 30.0
READ_CHUNK = 256 * 1024
MAX_FRONT_ENDS = 256


@dataclass(frozen=True)
class HostSettings:
    idle_exit_seconds: float = 600.0
    front_end_budget: int = DEFAULT_FRONT_END_BUDGET
    max_permission_wait: float = 24 * 3600.0


class Connection:
    """A front end's outgoing side: written without waiting; past `budget` bytes unread
    it is cut off (so it can never stall the agent or the other front ends)."""

    def __init__(self, front_end: int, transport: asyncio.WriteTransport, budget: int,
                 on_close: Callable[[], None]) -> None:
        self.front_end = front_end
        self._transport = transport
        self._budget = budget
        self._on_close = on_close
        self.closed = False
        self.cut_off = False

    def send(self, data: bytes) -> None:
        if self.closed:
            return
        self._transport.write(data)
        if self._transport.get_write_buffer_size() > self._budget:
            log.warning("front end %d stopped reading (%d bytes waiting): detached",
                        self.front_end, self._transport.get_write_buffer_size())
            self.cut_off = True
            self.close(abort=True)

    def close(self, abort: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        if abort:
            self._transport.abort()
        else:
            self._transport.close()
        self._on_close()


class _SocketOptions(Protocol):
    def getsockopt(self, level: int, option: int, buflen: int, /) -> bytes: ...


def peer_uid(sock: _SocketOptions) -> int | None:
    """The uid of the process at the other end of a Unix socket (a socket, or asyncio's
    wrapper of one); None where the platform cannot say (the socket's private directory
    is then the only check). Raises `OSError` when it cannot be read."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    size = struct.calcsize("3i")
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, size))
    return int(uid)


class Host:
    def __init__(self, config: Config, group: anyio.abc.TaskGroup,
                 settings: HostSettings = HostSettings(),
                 clock: Callable[[], float] = time.time,
                 limits_cache: LimitsCache | None = None) -> None:
        self.config = config
        self.settings = settings
        self._group = group
        self._clock = clock
        self._links: dict[tuple[Any, ...], AgentLink] = {}
        self._starting: dict[tuple[Any, ...], asyncio.Future[AgentLink]] = {}
        self._front_end_ids = itertools.count(1)
        self._connections: dict[int, Connection] = {}
        self.done = asyncio.Event()
        # The agents' account limits, written to this machine's limits cache.
        self.limits = HostLimits(limits_cache)
        group.start_soon(self.limits.run)

    # -- state -------------------------------------------------------------------------

    @property
    def front_end_count(self) -> int:
        return len(self._connections)

    def working(self) -> bool:
        return bool(self._starting) or any(link.working() for link in self._links.values())

    async def watch_idle(self, tick: float = 0.5) -> None:
        """Ends the host (`done`) once idle for `idle_exit_seconds`; expires questions."""
        idle_since: float | None = None
        while not self.done.is_set():
            now = time.monotonic()
            for link in list(self._links.values()):
                link.tick(self._clock())
            if self._connections or self.working():
                idle_since = None
            elif idle_since is None:
                idle_since = now
            elif now - idle_since >= self.settings.idle_exit_seconds:
                log.info("idle for %.0f s with no front end: ending",
                         self.settings.idle_exit_seconds)
                self.done.set()
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.done.wait(), tick)

    async def stop(self) -> None:
        for connection in list(self._connections.values()):
            connection.close()
        for link in list(self._links.values()):
            await link.stop()
        self._links.clear()
        await self.limits.aclose()

    # -- a connection ------------------------------------------------------------------

    async def serve_connection(self, reader: asyncio.StreamReader,
                               transport: asyncio.WriteTransport) -> None:
        """One front end, from its first line to its end."""
        if len(self._connections) >= MAX_FRONT_ENDS:
            log.warning("%d front ends already attached: refused one", MAX_FRONT_ENDS)
            transport.close()
            return
        front_end = next(self._front_end_ids)
        decoder = LineDecoder(FRONT_END_MAX_LINE)
        pending: list[bytes | OversizedLine] = []
        try:
            await asyncio.wait_for(self._read_lines(reader, decoder, pending, 1),
                                   HELLO_SECONDS)
            first = pending.pop(0) if pending else None
            if not isinstance(first, bytes):
                transport.close()
                return
            hello = parse_hello(first) if len(first) <= MAX_HELLO_BYTES else None
            if hello is None:
                pending.insert(0, first)  # plain ACP: this line is its first message
            else:  # its first ACP message (initialize, as a rule), for a new agent's start
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._read_lines(reader, decoder, pending, 1),
                                           HELLO_SECONDS)
        except (TimeoutError, ConnectionError):
            transport.close()
            return
        except HelloError as exc:
            log.warning("refused a front end: %s", exc)
            transport.close()
            return
        info = hello.front_end if hello is not None else FrontEnd()
        name = hello.agent if hello is not None else self.config.default_agent
        link: AgentLink | None = None
        connection = Connection(front_end, transport, self.settings.front_end_budget,
                                lambda: self._closed(front_end, link))
        self._connections[front_end] = connection
        try:
            try:
                link = await self._link(name, hello.agent_command if hello else None,
                                        _offered_capabilities(pending))
            except (AgentStartError, UnknownAgentError) as exc:
                await self._refuse(reader, decoder, pending, connection, str(exc))
                return
            if connection.closed:
                return
            link.add(front_end, connection, info)
            log.info("front end %d attached (%s, pid %s) to %s", front_end, info.name,
                     info.pid, name)
            for item in pending:
                await link.from_front_end(front_end, item)
            while not connection.closed:
                data = await reader.read(READ_CHUNK)
                for item in decoder.feed(data) if data else decoder.finish():
                    await link.from_front_end(front_end, item)
                if not data:
                    break
        except ConnectionError:
            pass
        finally:
            connection.close()

    def _closed(self, front_end: int, link: AgentLink | None) -> None:
        self._connections.pop(front_end, None)
        if link is not None:
            link.remove(front_end)
        log.info("front end %d detached", front_end)

    @staticmethod
    async def _read_lines(reader: asyncio.StreamReader, decoder: LineDecoder,
                          pending: list[bytes | OversizedLine], at_least: int) -> None:
        """Read until `pending` holds `at_least` lines or the input ends."""
        while len(pending) < at_least:
            data = await reader.read(READ_CHUNK)
            pending.extend(decoder.feed(data) if data else decoder.finish())
            if not data:
                return

    async def _refuse(self, reader: asyncio.StreamReader, decoder: LineDecoder,
                      pending: list[bytes | OversizedLine], connection: Connection,
                      reason: str) -> None:
        """Every request of a front end whose agent cannot be had gets the one reason."""
        log.warning("%s", reason)
        items = list(pending)
        while not connection.closed:
            for item in items:
                message = _json(item)
                if message is not None and "id" in message and "method" in message:
                    connection.send(encode_line({"jsonrpc": "2.0", "id": message["id"],
                                                 "error": {"code": -32000, "message": reason}}))
            data = await reader.read(READ_CHUNK)
            if not data:
                return
            items = decoder.feed(data)

    async def _link(self, name: str, given: AgentCommand | None,
                    offered: dict[str, Any]) -> AgentLink:
        command = given if given is not None else self._configured(name)
        key = command.key()
        link = self._links.get(key)
        if link is not None and not link.gone:
            return link
        starting = self._starting.get(key)
        if starting is not None:
            return await asyncio.shield(starting)
        future: asyncio.Future[AgentLink] = asyncio.get_running_loop().create_future()
        self._starting[key] = future
        try:
            link = self._new_link(name, command, offered)
            await link.start()
            self._links[key] = link
            future.set_result(link)
            return link
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: nobody else may be waiting
            raise
        finally:
            del self._starting[key]

    def _configured(self, name: str) -> AgentCommand:
        agent = self.config.agent(name)
        return AgentCommand(agent.command, tuple(agent.args), dict(agent.env), agent.cwd)

    def _new_link(self, name: str, command: AgentCommand,
                  offered: dict[str, Any]) -> AgentLink:
        """The agent initialized with what the first front end offers (elicitation, the
        limits extension, …), but files and terminals: those are the host's."""
        known = name in self.config.agents
        fs = self.config.fs_for(name) if known else self.config.fs
        terminal = self.config.terminal_for(name) if known else self.config.terminal
        answers = HostAnswers(self._group, fs, terminal)
        capabilities = {**offered, "fs": {"readTextFile": fs.read, "writeTextFile": fs.write},
                        "terminal": terminal.enabled}
        return AgentLink(name, command, group=self._group, answers=answers,
                         auto_answer=auto_answer_for(self.config.permissions),
                         client_capabilities=capabilities, on_gone=self._gone,
                         max_permission_wait=self.settings.max_permission_wait,
                         # A replay is sent at once: it must fit a front end's budget.
                         history_bytes=min(DEFAULT_HISTORY_BYTES,
                                           self.settings.front_end_budget // 2),
                         clock=self._clock, limits=self.limits.for_agent(name, self._clock))

    def _gone(self, link: AgentLink) -> None:
        for key, known in list(self._links.items()):
            if known is link:
                del self._links[key]


def _offered_capabilities(pending: list[bytes | OversizedLine]) -> dict[str, Any]:
    """The clientCapabilities of a front end's first message when it is `initialize`."""
    message = _json(pending[0]) if pending else None
    params = message.get("params") if message and message.get("method") == "initialize" \
        else None
    offered = params.get("clientCapabilities") if isinstance(params, dict) else None
    return dict(offered) if isinstance(offered, dict) else {}


def _json(item: bytes | OversizedLine) -> dict[str, Any] | None:
    if isinstance(item, OversizedLine):
        return None
    try:
        message = json.loads(item)
    except (ValueError, UnicodeDecodeError):
        return None
    return message if isinstance(message, dict) else None
