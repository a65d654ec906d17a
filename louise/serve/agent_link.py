"""One agent process at the host: started once, initialized once by the host, its lines
routed (`router.Router`) to the front ends attached to it, its `fs/*` and `terminal/*`
answered by the host (`host_answers.HostAnswers`) unless the router gives them to a
front end. Losing the agent fails every request at it and closes its front ends (they
say so and attach again: the agents that can load their sessions get them back)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any, Protocol

import anyio.abc

from louise import __version__
from louise.acp.framing import DEFAULT_MAX_LINE_BYTES, LineDecoder, OversizedLine
from louise.acp.json_lines import encode_line
from louise.serve.hello import AgentCommand, FrontEnd
from louise.serve.host_answers import HostAnswers
from louise.serve.limits import AgentLimits
from louise.serve.router import Router
from louise.serve.routing import AGENT, HOST, AutoAnswer, Out, is_host_method

log = logging.getLogger("louise.serve")
READ_CHUNK = 256 * 1024
INITIALIZE_SECONDS = 120.0
DEFAULT_PERMISSION_WAIT_SECONDS = 24 * 3600.0


class AgentStartError(Exception):
    """The agent could not be started or initialized (one line, for a person)."""


class FrontEndSink(Protocol):
    """Where a front end's messages go: written without waiting (bounded by the sink)."""

    def send(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class AgentLink:
    def __init__(self, name: str, command: AgentCommand, *, group: anyio.abc.TaskGroup,
                 answers: HostAnswers, auto_answer: AutoAnswer | None,
                 client_capabilities: dict[str, Any],
                 on_gone: Callable[[AgentLink], None],
                 max_permission_wait: float = DEFAULT_PERMISSION_WAIT_SECONDS,
                 history_bytes: int | None = None,
                 clock: Callable[[], float] = time.time,
                 limits: AgentLimits | None = None) -> None:
        self.name = name
        self.command = command
        self.router = Router(auto_answer=self._logged(auto_answer),
                             history_bytes=history_bytes)
        self._group = group
        self._answers = answers
        self._client_capabilities = client_capabilities
        self._on_gone = on_gone
        self._max_permission_wait = max_permission_wait
        self._clock = clock
        self._limits = limits  # the account's figures it sends, for this machine's cache
        self._sinks: dict[int, FrontEndSink] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._initialized: asyncio.Future[dict[str, Any]] | None = None
        self._host_answers_running = 0
        self._forgery_logged = False
        self.gone = False

    def _logged(self, auto_answer: AutoAnswer | None) -> AutoAnswer | None:
        """The automatic answer, saying in the log what it answered with nobody there."""
        if auto_answer is None:
            return None

        def answer(params: dict[str, Any], cwd: str | None,
                   known: dict[str, Any] | None) -> dict[str, Any] | None:
            outcome = auto_answer(params, cwd, known)
            if outcome is not None:
                log.info("%s: a permission request in session %s was answered by the "
                         "configured rules, nobody being attached: %s", self.name,
                         params.get("sessionId"), outcome.get("outcome"))
            return outcome

        return answer

    # -- life --------------------------------------------------------------------------

    async def start(self) -> None:
        command = self.command
        try:
            self._process = await asyncio.create_subprocess_exec(
                *command.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=None, env={**os.environ, **command.env}, cwd=command.cwd,
                start_new_session=True, limit=READ_CHUNK)
        except FileNotFoundError:
            raise AgentStartError(f"agent command not found: {command.command!r}") from None
        except PermissionError:
            raise AgentStartError(
                f"agent command is not executable: {command.command!r}") from None
        except OSError as exc:
            raise AgentStartError(f"could not start {command.command!r}: {exc}") from None
        self._initialized = asyncio.get_running_loop().create_future()
        self._group.start_soon(self._read_agent)
        _, request = self.router.host_request("initialize", {
            "protocolVersion": 1, "clientCapabilities": self._client_capabilities,
            "clientInfo": {"name": "louise-serve", "title": "louise serve",
                           "version": __version__}})
        self._dispatch([request])
        try:
            answer = await asyncio.wait_for(asyncio.shield(self._initialized),
                                            INITIALIZE_SECONDS)
        except TimeoutError:
            await self.stop()
            raise AgentStartError(f"{self.name} did not answer initialize within "
                                  f"{INITIALIZE_SECONDS:.0f} s") from None
        except AgentStartError:
            await self.stop()
            raise
        result = answer.get("result")
        if not isinstance(result, dict):
            await self.stop()
            raise AgentStartError(f"{self.name} refused to start: "
                                  f"{_error_words(answer.get('error'))}")
        self.router.initialize_result = result
        if self._limits is not None:
            self._limits.initialized(result)

    async def stop(self, grace: float = 2.0) -> None:
        """End of input for the agent, then SIGTERM and SIGKILL to its process group."""
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), grace)
                break
        await self._answers.close()

    def working(self) -> bool:
        return self._host_answers_running > 0 or self.router.working()

    @property
    def front_end_count(self) -> int:
        return len(self._sinks)

    def tick(self, now: float) -> None:
        self._dispatch(self.router.expire_permissions(now, self._max_permission_wait))

    # -- front ends --------------------------------------------------------------------

    def add(self, front_end: int, sink: FrontEndSink, info: FrontEnd) -> None:
        self._sinks[front_end] = sink
        self.router.attach(front_end, info)

    def remove(self, front_end: int) -> None:
        if self._sinks.pop(front_end, None) is not None:
            self._dispatch(self.router.detach(front_end))

    async def from_front_end(self, front_end: int, line: bytes | OversizedLine) -> None:
        """One line of a front end; returns once the agent took what it caused (so a
        front end that writes faster than the agent reads is slowed, not buffered)."""
        if isinstance(line, OversizedLine):
            log.warning("a front end sent a line of %d bytes; dropped", line.size)
            return
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            return
        if not isinstance(message, dict):
            return
        self._dispatch(self.router.from_front_end(front_end, message, self._clock()))
        process = self._process
        if process is not None and process.stdin is not None and not self.gone:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await process.stdin.drain()

    # -- the agent ---------------------------------------------------------------------

    async def _read_agent(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        decoder = LineDecoder(DEFAULT_MAX_LINE_BYTES)
        try:
            while True:
                data = await process.stdout.read(READ_CHUNK)
                for item in decoder.feed(data) if data else decoder.finish():
                    self._from_agent(item)
                if not data:
                    break
        except (ConnectionError, OSError) as exc:
            log.warning("%s: reading the agent failed: %s", self.name, exc)
        finally:
            self._lost()

    def _from_agent(self, item: bytes | OversizedLine) -> None:
        if isinstance(item, OversizedLine):
            log.warning("%s sent a line of %d bytes; dropped", self.name, item.size)
            return
        try:
            message = json.loads(item)
        except (ValueError, UnicodeDecodeError):
            log.warning("%s wrote a line that is not JSON; ignored", self.name)
            return
        if isinstance(message, dict):
            if is_host_method(message.get("method")) and not self._forgery_logged:
                self._forgery_logged = True  # once: an agent could send them unendingly
                log.warning("%s sent %.100r, a message only louise serve itself sends: "
                            "dropped, as are any more", self.name, message.get("method"))
            if self._limits is not None:
                self._limits.from_agent(item, message)
            # What goes on unchanged goes as the agent wrote it: no second encoding.
            self._dispatch(self.router.from_agent(message, self._clock()),
                           {id(message): bytes(item) + b"\n"})

    def _lost(self) -> None:
        if self.gone:
            return
        self.gone = True
        if self._initialized is not None and not self._initialized.done():
            self._initialized.set_exception(AgentStartError(
                f"{self.name} exited before it answered initialize"))
        log.info("%s: the agent's output ended", self.name)
        if self._limits is not None:
            self._limits.stopped()
        self._dispatch(self.router.agent_gone())
        for sink in list(self._sinks.values()):
            sink.close()
        self._sinks.clear()
        self._on_gone(self)

    # -- routing -----------------------------------------------------------------------

    def _dispatch(self, outs: list[Out], encoded: dict[int, bytes] | None = None) -> None:
        # One encoding per message, however many front ends get it.
        encoded = {} if encoded is None else encoded
        for out in outs:
            if out.to == HOST:
                self._host(out.message)
                continue
            data = encoded.get(id(out.message))
            if data is None:
                data = encoded[id(out.message)] = encode_line(out.message)
            if out.to == AGENT:
                if self._limits is not None:
                    self._limits.to_agent(out.message)
                self._to_agent(data)
            else:
                sink = self._sinks.get(out.to)
                if sink is not None:
                    sink.send(data)

    def _to_agent(self, data: bytes) -> None:
        process = self._process
        if process is None or process.stdin is None or self.gone:
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            process.stdin.write(data)

    def _host(self, message: dict[str, Any]) -> None:
        if "method" not in message:  # the answer to the host's own request
            if self._initialized is not None and not self._initialized.done():
                self._initialized.set_result(message)
            return
        self._host_answers_running += 1
        self._group.start_soon(self._answer, message)

    async def _answer(self, message: dict[str, Any]) -> None:
        try:
            params = message.get("params")
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            answer = await self._answers.answer(message, self.router.session_cwd(session_id))
            self._to_agent(encode_line(answer))
        finally:
            self._host_answers_running -= 1


def _error_words(error: Any) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])[:300]
    return "no reason given"
