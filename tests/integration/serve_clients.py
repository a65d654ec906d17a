"""Helpers for the session host's tests: a real host process on a short socket path, and
raw ACP clients on its socket (NDJSON by hand, a reader thread per client). Waits are
bounds on a hang, never timing claims."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from louise.serve.hello import AgentCommand, FrontEnd, Hello, build_hello
from louise.serve.paths import short_address

WAIT = 60.0
Msg = dict[str, Any]

_HOST_SCRIPT = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
from louise.config.loading import load_config
from louise.serve.host import HostSettings
from louise.serve.run import run_host
settings = HostSettings(front_end_budget=int(sys.argv[3]))
sys.exit(run_host(sys.argv[1], idle_exit_seconds=float(sys.argv[2]), config=load_config(),
                  settings=settings))
"""


class HostProcess:
    def __init__(self, idle_exit: float = 300.0, budget: int = 8 * 1024 * 1024,
                 socket_path: Path | None = None) -> None:
        if socket_path is None:
            directory = Path(tempfile.mkdtemp(prefix="lsv-"))  # short: sun_path is small
            os.chmod(directory, 0o755)  # the host's own directory under it is private
            socket_path = directory / "host" / "host.sock"
        self.socket = socket_path
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-c", _HOST_SCRIPT, str(self.socket), str(idle_exit),
             str(budget)], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.stderr = bytearray()
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        # Its log says when it listens (a socket file may be a dead host's).
        wait_for(lambda: b"session host listening" in self.stderr
                 or self.proc.poll() is not None, "the host listening")
        assert self.proc.poll() is None, self.stderr.decode(errors="replace")

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line

    def close(self) -> None:
        status = self.proc.poll()
        if status is None:
            self.proc.terminate()
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._drainer.join(WAIT)
        print(f"the host's exit status before the test ended it: {status}; its log:\n"
              + self.stderr.decode(errors="replace")[-20000:])


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class Client:
    """A raw ACP client on the host's socket."""

    def __init__(self, socket_path: Path, name: str = "acp", hello: bool = True,
                 read: bool = True, agent: str = "demo",
                 command: AgentCommand | None = None, same_machine: bool = True) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with short_address(socket_path) as address:  # as front ends reach a deep path
            self.sock.connect(address)
        if hello:
            self.sock.sendall(build_hello(Hello(
                agent=agent, agent_command=command,
                front_end=FrontEnd(name, os.getpid(), same_machine))))  # type: ignore[arg-type]
        self.inbox: queue.Queue[Msg | None] = queue.Queue()
        self.seen: list[Msg] = []
        self._next = 0
        self.closed = False
        if read:
            self.start_reading()

    def start_reading(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        with contextlib.suppress(OSError):
            while True:
                data = self.sock.recv(65536)
                if not data:
                    break
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self.inbox.put(json.loads(line))
        self.inbox.put(None)

    def send(self, message: Msg) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def request(self, method: str, params: Msg) -> int:
        self._next += 1
        self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return self._next

    def wait(self, predicate: Callable[[Msg], bool], what: str) -> Msg:
        for message in self.seen:
            if predicate(message):
                return message
        deadline = time.monotonic() + WAIT
        while True:
            try:
                message = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"timed out waiting for {what}") from None
            if message is None:
                self.closed = True
                raise AssertionError(f"the host closed the connection before {what}")
            self.seen.append(message)
            if predicate(message):
                return message

    def answer(self, request_id: int) -> Msg:
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m,
                         f"the answer to request {request_id}")

    def call(self, method: str, params: Msg) -> Any:
        answer = self.answer(self.request(method, params))
        assert "result" in answer, answer
        return answer["result"]

    def wait_closed(self) -> None:
        deadline = time.monotonic() + WAIT
        while True:
            message = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            if message is None:
                self.closed = True
                return
            self.seen.append(message)

    def texts(self) -> str:
        return "".join(update_text(m) for m in self.seen)

    def close(self) -> None:
        """Gone, as a front end whose process exits: shut first, since closing the
        descriptor alone leaves the socket open while the reader thread is in recv."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


def update_text(message: Msg, kind: str = "agent_message_chunk") -> str:
    if message.get("method") != "session/update":
        return ""
    update = message["params"]["update"]
    if update.get("sessionUpdate") != kind:
        return ""
    content = update.get("content") or {}
    return str(content.get("text", "")) if content.get("type") == "text" else ""


def initialize(client: Client) -> Msg:
    result: Msg = client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    return result


def new_session(client: Client, cwd: Path) -> str:
    initialize(client)
    return str(client.call("session/new", {"cwd": str(cwd), "mcpServers": []})["sessionId"])


def load_session(client: Client, session_id: str, cwd: Path) -> Msg:
    initialize(client)
    result: Msg = client.call("session/load", {"sessionId": session_id, "cwd": str(cwd),
                                               "mcpServers": []})
    return result


def prompt(client: Client, session_id: str, text: str) -> int:
    return client.request("session/prompt", {
        "sessionId": session_id, "prompt": [{"type": "text", "text": text}]})


@contextlib.contextmanager
def running_host(**kwargs: Any) -> Iterator[HostProcess]:
    host = HostProcess(**kwargs)
    try:
        yield host
    finally:
        host.close()


def host_pids(socket_path: Path, *, with_stdio: bool = True) -> list[int]:
    """The `louise serve` processes serving `socket_path`, found by their command lines
    (`with_stdio=False`: not the `serve --stdio` pipes that reach one)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in words and str(socket_path).encode() in words \
                and (with_stdio or b"--stdio" not in words):
            found.append(int(entry.name))
    return found
