"""What a command will really run, for the gate (`gate.py`): the same command in the words
a person approved and in the `terminal/create` an agent sends must mean the same thing to
the shell, with the same environment, in the same directory. Pure.

A command is either an argv run without a shell, or a line a shell interprets. A shell
line that holds nothing a shell would interpret (no expansion, redirection, separator,
glob, comment or escape: `PLAIN_CHARS`) is the argv `shlex` makes of it, so `npm test`,
`sh -c "npm test"` and `["npm", "test"]` are one command. Any other line is compared as
the line itself (only its ends' blanks trimmed): `echo '$(id)'` prints a literal, and
`sh -c "echo $(id)"` is not it.
"""

from __future__ import annotations

import os
import shlex
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The usual shells, and how their `-c` runs a line (login and interactive variants read
# the person's own profile files, not anything of the agent's; the env is compared).
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
SHELL_FLAGS = frozenset({"-c", "-lc", "-ic"})
# A shell named by path is the usual one only in a system directory (a `sh` the agent
# wrote into the workspace is not a shell to trust).
SYSTEM_BIN_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"})
# What every usual shell (sh, bash, zsh, dash, ksh, fish) reads as plain words: letters,
# digits, blanks, quotes and a few punctuation marks that no shell expands. `=` starting a
# word (zsh) or inside the first word (an assignment) is checked apart.
PLAIN_CHARS = frozenset(string.ascii_letters + string.digits + " -_./:,+=@'\"")
BLANKS = " \t\n"
MAX_UNWRAP = 4  # `sh -c "sh -c '…'"` unwrapped at most this deep


@dataclass(frozen=True, slots=True)
class CommandForm:
    """A command as it will run: `argv` without a shell, or `shell_line` through one."""

    argv: tuple[str, ...] = ()
    shell_line: str | None = None

    def __str__(self) -> str:
        return self.shell_line if self.shell_line is not None else shlex.join(self.argv)


Env = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class CommandKey:
    """A command, the environment entries set for it (sorted; None: unreadable) and the
    directory it runs in (None: unreadable)."""

    form: CommandForm
    env: Env | None
    cwd: str | None

    @property
    def complete(self) -> bool:
        return self.env is not None and self.cwd is not None


def _plain_char(char: str) -> bool:
    return char in PLAIN_CHARS or (ord(char) > 127 and char.isprintable()
                                   and not char.isspace())


def plain_words(line: str) -> tuple[str, ...] | None:
    """The words of a shell line that every usual shell reads exactly as `shlex.split`
    does, or None when the line holds anything a shell would interpret."""
    if not all(_plain_char(char) for char in line):
        return None
    try:
        words = shlex.split(line)
    except ValueError:  # an unclosed quote
        return None
    if not words or "=" in words[0] or any(word.startswith("=") for word in words):
        return None
    return tuple(words)


def is_shell(program: str) -> bool:
    if "/" not in program:
        return program in SHELLS
    return os.path.dirname(program) in SYSTEM_BIN_DIRS and os.path.basename(program) in SHELLS


def line_form(line: str, depth: int = 0) -> CommandForm | None:
    """What a shell line runs; None for a blank line."""
    stripped = line.strip(BLANKS)
    if not stripped:
        return None
    words = plain_words(stripped)
    if words is None:
        return CommandForm(shell_line=stripped)
    return argv_form(words, depth)


def argv_form(argv: Sequence[str], depth: int = 0) -> CommandForm | None:
    """What an argv runs: `sh -c LINE` (a usual shell) runs LINE; None for an empty argv."""
    if not argv:
        return None
    if depth < MAX_UNWRAP and len(argv) == 3 and is_shell(argv[0]) \
            and argv[1] in SHELL_FLAGS:
        return line_form(argv[2], depth + 1)
    return CommandForm(argv=tuple(argv))


def env_entries(raw: Any) -> Env | None:
    """An environment as ACP sends it (`[{name, value}]`; a `{name: value}` object is read
    too), later entries winning as the terminal host applies them; () for none, None when
    it cannot be read."""
    if raw is None:
        return ()
    pairs: list[tuple[Any, Any]]
    if isinstance(raw, list):
        pairs = [(item.get("name"), item.get("value")) if isinstance(item, Mapping)
                 else (None, None) for item in raw]
    elif isinstance(raw, Mapping):
        pairs = list(raw.items())
    else:
        return None
    env: dict[str, str] = {}
    for name, value in pairs:
        if not isinstance(name, str) or not name or "=" in name or not isinstance(value, str):
            return None
        env[name] = value
    return tuple(sorted(env.items()))


def run_directory(raw: Any, session_cwd: str) -> str | None:
    """The directory a command runs in: the session's when none is given, a relative one
    against it; None when it cannot be read. Only `.` and repeated slashes are dropped:
    `..` after a link is not where it looks, so it stays as written."""
    if raw is None:
        raw = session_cwd
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return None
    joined = raw if raw.startswith("/") else session_cwd.rstrip("/") + "/" + raw
    return "/" + "/".join(part for part in joined.split("/") if part not in ("", "."))


def requested_command(raw_input: Any, session_cwd: str) -> CommandKey | None:
    """The command a permission request's `rawInput` shows (`command` as a line, or as an
    argv, or with `args`), with its `env` and `cwd`; None when it shows none."""
    if not isinstance(raw_input, Mapping):
        return None
    command = raw_input.get("command")
    args = raw_input.get("args")
    form: CommandForm | None = None
    if isinstance(command, list) and all(isinstance(word, str) for word in command):
        form = argv_form(command)
    elif isinstance(command, str):
        if isinstance(args, list) and all(isinstance(arg, str) for arg in args):
            form = argv_form([command, *args])
        else:
            form = line_form(command)
    if form is None:
        return None
    return CommandKey(form, env_entries(raw_input.get("env")),
                      run_directory(raw_input.get("cwd"), session_cwd))


def terminal_command(argv: Sequence[str], env: Any, cwd: Any,
                     session_cwd: str) -> CommandKey | None:
    """The command a `terminal/create` will run."""
    form = argv_form(argv)
    if form is None:
        return None
    return CommandKey(form, env_entries(env), run_directory(cwd, session_cwd))
