"""Questions the CLI asks on the person's terminal (`/dev/tty`): which sign-in method,
whether to run a sign-in command (it then runs in this very terminal, argv, never through
a shell). Without a terminal nothing is asked and nothing runs (the callers refuse and
say why). Every agent string printed goes through the terminal sanitizer.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

import anyio

from louise.acp.auth import AuthMethod, TerminalInvocation
from louise.console import _read_line
from louise.terminal_text import safe

MAX_ATTEMPTS = 5


class Tty:
    """Say something on the terminal and read one answer (cancellable at once)."""

    def __init__(self, path: str = "/dev/tty") -> None:
        self.path = path

    def say(self, text: str) -> None:
        with open(self.path, "w", encoding="utf-8") as tty:
            tty.write(text)
            tty.flush()

    async def read(self) -> str | None:
        """One line; None at end of input."""
        tty = os.open(self.path, os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC)
        wake_read, wake_write = os.pipe()
        try:
            data = await anyio.to_thread.run_sync(_read_line, tty, wake_read,
                                                  abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            with contextlib.suppress(OSError):
                os.write(wake_write, b"x")
            raise
        finally:
            os.close(wake_write)
        return None if data is None else data.decode("utf-8", "replace").strip()

    async def confirm(self, question: str) -> bool:
        """y/N: only an explicit yes is a yes."""
        self.say(question + " [y/N] ")
        answer = await self.read()
        return answer is not None and answer.lower() in ("y", "yes")

    async def pick(self, count: int) -> int | None:
        """A number from 1 to `count` (0-based index), or None for q / end of input."""
        for _ in range(MAX_ATTEMPTS):
            answer = await self.read()
            if answer is None or answer.lower() in ("q", "n", "no", ""):
                return None
            if answer.isdigit() and 1 <= int(answer) <= count:
                return int(answer) - 1
            self.say(f"type a number from 1 to {count}, or q: ")
        return None


class TtySignIn:
    """The registry's `SignInPrompter` for `louise chat` and `louise login`."""

    terminal = True

    def __init__(self, tty: Tty | None = None) -> None:
        self.tty = tty or Tty()

    async def choose(self, agent: str, methods: Sequence[AuthMethod],
                     reason: str) -> AuthMethod | None:
        lines = []
        if reason:
            lines.append(f"louise: {safe(reason.splitlines()[0])}")
        lines.append(f"Sign in to {safe(agent)}:")
        for number, method in enumerate(methods, 1):
            how = " (runs in this terminal)" if method.kind == "terminal" else ""
            about = f" — {safe(method.description)}" if method.description else ""
            lines.append(f"  {number}. {safe(method.name)}{how}{about}")
        self.tty.say("\n".join(lines) + "\nchoose (q: not now): ")
        index = await self.tty.pick(len(methods))
        return None if index is None else methods[index]

    async def run_terminal(self, agent: str, method: AuthMethod,
                           invocation: TerminalInvocation) -> int | None:
        self.tty.say(f"To sign in to {safe(agent)} ({safe(method.name)}), louise runs:\n"
                     f"  {safe(invocation.display())}\n")
        if not await self.tty.confirm("Run it?"):
            return None
        try:
            process = await anyio.open_process(
                list(invocation.argv), stdin=None, stdout=None, stderr=None,
                env={**os.environ, **invocation.env}, cwd=invocation.cwd)
        except OSError as exc:
            print(f"louise: could not start it: {safe(exc.strerror or str(exc))}",
                  file=sys.stderr, flush=True)
            return None
        async with process:
            return await process.wait()
