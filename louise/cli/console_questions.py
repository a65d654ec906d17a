"""Questions the CLI asks on the person's terminal (`/dev/tty`): which sign-in method,
whether to run a sign-in command (it then runs in this very terminal, argv, never through
a shell). Without a terminal nothing is asked and nothing runs (the callers refuse and
say why). Every agent string printed goes through the terminal sanitizer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from louise.acp.auth import AuthMethod, TerminalInvocation
from louise.acp.elicitation import ElicitationRequest, FormField
from louise.cli.console import TTY_USE, read_tty_line, say_on_tty
from louise.cli.terminal_text import safe

MAX_ATTEMPTS = 5


class Tty:
    """Say something on the terminal and read one answer (cancellable at once)."""

    def __init__(self, path: str = "/dev/tty") -> None:
        self.path = path

    def say(self, text: str) -> None:
        say_on_tty(self.path, text)

    async def read(self) -> str | None:
        """One line, stripped; None at end of input."""
        line = await read_tty_line(self.path)
        return None if line is None else line.strip()

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
        # What runs first, then the variables it adds; shortened where long (it says so,
        # and `v` shows it all).
        shown = invocation.shown()
        self.tty.say(f"To sign in to {safe(agent)} ({safe(method.name)}), louise runs:\n"
                     f"  {safe(shown.text)}\n")
        if not await self._confirm_run(shown.whole):
            return None
        try:
            process = await anyio.open_process(
                list(invocation.argv), stdin=None, stdout=None, stderr=None,
                env={**os.environ, **invocation.env}, cwd=invocation.cwd)
        except OSError as exc:
            print(f"louise: could not start it: {safe(exc.strerror or str(exc))}",
                  file=sys.stderr, flush=True)
            return None
        with TTY_USE.held():  # the sign-in command has the terminal
            async with process:
                return await process.wait()

    async def _confirm_run(self, whole: Sequence[str]) -> bool:
        """y/N; with `whole` (the command was shortened), `v` shows all of it first."""
        if not whole:
            return await self.tty.confirm("Run it?")
        for _ in range(MAX_ATTEMPTS):
            self.tty.say("Run it? [y/N, v: view the whole command] ")
            answer = (await self.tty.read() or "").lower()
            if answer in ("v", "view"):
                self.tty.say("".join(safe(line) + "\n" for line in whole))
                continue
            return answer in ("y", "yes")
        return False


def _shown(form_field: FormField, value: Any) -> str:
    if value is None or value == "" or value == []:
        return "—"
    if form_field.kind == "boolean":
        return "yes" if value else "no"
    if form_field.kind == "choice":
        return next((c.title for c in form_field.choices if c.value == value), str(value))
    if form_field.kind == "multi" and isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


class TtyElicitor:
    """The registry's `Elicitor` for `louise chat` on a terminal: each field asked in turn
    (a choice by number), then the answers shown to send, change, decline or cancel; a URL
    shown whole and opened only on `y`."""

    form = True
    url = True

    def __init__(self, tty: Tty | None = None) -> None:
        self.tty = tty or Tty()

    async def _field(self, form_field: FormField, current: Any) -> Any:
        title = safe(form_field.title) + (" (required)" if form_field.required else "")
        about = f" — {safe(form_field.description)}" if form_field.description else ""
        now = f" [{safe(_shown(form_field, current))}]" if current not in (None, "", []) \
            else ""
        if form_field.kind in ("choice", "multi"):
            lines = [f"{title}{about}"]
            lines += [f"  {n}. {safe(c.title)}" for n, c in enumerate(form_field.choices, 1)]
            many = " (numbers, comma-separated)" if form_field.kind == "multi" else ""
            self.tty.say("\n".join(lines) + f"\nchoose{many}{now}: ")
        elif form_field.kind == "boolean":
            self.tty.say(f"{title}{about} [y/n]{now}: ")
        else:
            self.tty.say(f"{title}{about}{now}: ")
        answer = await self.tty.read()
        if answer is None or answer == "":
            return current
        if form_field.kind == "boolean":
            return answer.lower() in ("y", "yes") if answer.lower() in ("y", "yes", "n", "no") \
                else answer
        if form_field.kind == "choice":
            index = int(answer) - 1 if answer.isdigit() else -1
            return form_field.choices[index].value \
                if 0 <= index < len(form_field.choices) else answer
        if form_field.kind == "multi":
            picked = []
            for word in answer.replace(" ", "").split(","):
                index = int(word) - 1 if word.isdigit() else -1
                picked.append(form_field.choices[index].value
                              if 0 <= index < len(form_field.choices) else word)
            return picked
        return answer

    async def ask_form(self, agent: str, request: ElicitationRequest,
                       answers: Mapping[str, Any], problems: list[str]
                       ) -> tuple[str, dict[str, Any] | None]:
        values: dict[str, Any] = {f.name: answers.get(f.name, f.default) for f in request.fields}
        self.tty.say(f"\n{safe(agent)} asks: {safe(request.message)}\n")
        if problems:
            self.tty.say("fix: " + safe("; ".join(problems)) + "\n")
        else:
            for form_field in request.fields:
                values[form_field.name] = await self._field(form_field,
                                                            values[form_field.name])
        for _ in range(MAX_ATTEMPTS * 4):
            summary = ", ".join(f"{safe(f.title)} = {safe(_shown(f, values[f.name]))}"
                                for f in request.fields)
            self.tty.say(f"{summary}\nsend it? [s]end, [e]dit, [d]ecline, [c]ancel: ")
            answer = (await self.tty.read() or "c").lower()
            if answer in ("s", "send", "y", "yes"):
                return "accept", {k: v for k, v in values.items() if v is not None}
            if answer in ("d", "decline"):
                return "decline", None
            if answer in ("c", "cancel", "q"):
                return "cancel", None
            if answer in ("e", "edit"):
                for form_field in request.fields:
                    values[form_field.name] = await self._field(form_field,
                                                                values[form_field.name])
        return "cancel", None

    async def ask_url(self, agent: str, request: ElicitationRequest) -> str:
        # Where it goes first (the host a browser opens, the warnings), then the agent's
        # message and the whole address.
        lines = [f"\n{safe(agent)} asks you to visit {safe(request.host or '')}"]
        lines += [f"  warning: {safe(w)}" for w in request.warnings]
        lines += [f"  {safe(request.message)}", f"  {safe(request.url or '')}"]
        self.tty.say("\n".join(lines) + "\n")
        if not await self.tty.confirm("Open it?"):
            return "decline"
        import webbrowser

        try:
            opened = await anyio.to_thread.run_sync(webbrowser.open, request.url or "")
        except Exception:  # no browser here: the person opens it themselves
            opened = False
        if not opened:
            self.tty.say("No browser opened it here: open the URL above yourself.\n")
        return "accept"

    def url_completed(self, agent: str, request: ElicitationRequest) -> None:
        print(f"louise: {safe(agent)}: the visit to {safe(request.host or '')} is finished",
              file=sys.stderr, flush=True)

    def url_refused(self, agent: str, reason: str) -> None:
        print(f"louise: did not offer to open a page {safe(agent)} asked you to visit: "
              f"{safe(reason)}", file=sys.stderr, flush=True)
