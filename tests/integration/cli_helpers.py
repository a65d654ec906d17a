"""Running the `louise` CLI as a person does: in a pipe, under a pseudo-terminal, with
Ctrl-C; against the fake agents in tests/fakes."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

FAKES = Path(__file__).resolve().parent.parent / "fakes"
LOUISE = [sys.executable, "-P", "-m", "louise.cli"]
# What no line printed to a terminal may contain: ESC, BEL, the C1 CSI, a bare CR.
TERMINAL_CONTROLS = ("\x1b", "\x07", "\x9b")


def fake_config(path: Path, **env: str) -> Path:
    """A config.toml whose default Agent is `fake` (tests/fakes/cli_agent.py); the demo
    agent stays available as `demo`."""
    env_line = ", ".join(f'{key} = "{value}"' for key, value in env.items())
    path.write_text(
        "[agents.fake]\n"
        f"command = {sys.executable!r}\n"
        f"args = ['-P', {str(FAKES / 'cli_agent.py')!r}]\n"
        + (f"env = {{ {env_line} }}\n" if env else "")
    )
    return path


def environment(config: Path | None = None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    if config is not None:
        env["LOUISE_CONFIG"] = str(config)
    env.update(extra)
    return env


def louise(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`louise ARGS` with no terminal (stdin from /dev/null, output to pipes)."""
    return subprocess.run([*LOUISE, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=cwd, stdin=subprocess.DEVNULL)


class Running:
    """`louise ARGS` in pipes, read while it runs, for signals sent mid-turn."""

    def __init__(self, *args: str, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.process = subprocess.Popen([*LOUISE, *args], env=env, cwd=cwd,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._readers = [threading.Thread(target=self._drain, args=(stream, into), daemon=True)
                         for stream, into in ((self.process.stdout, self.stdout),
                                              (self.process.stderr, self.stderr))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _drain(stream: object, into: bytearray) -> None:
        while chunk := stream.read1(4096):  # type: ignore[attr-defined]
            into.extend(chunk)

    def wait_for(self, needle: str, *, stderr: bool = False, timeout: float = 60) -> None:
        buffer = self.stderr if stderr else self.stdout
        deadline = time.monotonic() + timeout
        while needle.encode() not in buffer:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"no {needle!r} in {bytes(buffer)!r}; "
                                     f"stderr {bytes(self.stderr)!r}")
            time.sleep(0.02)

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        try:
            code = self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        for reader in self._readers:
            reader.join(timeout=10)
        return code, self.stdout.decode("utf-8", "replace"), self.stderr.decode("utf-8", "replace")


class Terminal:
    """`louise ARGS` with a pseudo-terminal as its controlling terminal (and stdio)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child
            try:
                if cwd is not None:
                    os.chdir(cwd)
                os.execve(LOUISE[0], [*LOUISE, *args], env if env is not None else os.environ)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.output = b""
        self.status: int | None = None

    def _read(self, timeout: float) -> bool:
        """Read what is there; False once the terminal is closed."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 4096)
        except OSError:
            return False
        self.output += data
        return bool(data)

    def expect(self, needle: str, count: int = 1, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.output.count(needle.encode()) < count:
            if time.monotonic() > deadline or not self._read(0.2):
                raise AssertionError(f"no {needle!r} (x{count}) in {self.text!r}")

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait(self, timeout: float = 60) -> int | None:
        """The exit status; None (after killing it) when it did not exit in time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            open_ = self._read(0.2)
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                while self._read(0.05):
                    pass
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            if not open_:
                time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", "replace")
