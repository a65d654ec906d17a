"""What is wrong with a configuration, said so a person can fix it: `ConfigProblem` (field
path, message, hint), `ConfigError` (every problem at once), a TOML error as a problem, and
field paths. Without pydantic: its errors are translated in `schema/errors.py`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")
_TOML_POSITION_RE = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")
_TOML_END_RE = re.compile(r"^(?P<msg>.*?)\s*\(at end of document\)$")


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One thing wrong with a configuration.

    `path` is a dotted field path (`agents.claude.args[1]`), empty for the document itself;
    `line`/`column` are set for TOML syntax errors only.
    """

    path: str
    message: str
    hint: str
    line: int | None = None
    column: int | None = None

    def render(self, source: str) -> str:
        where = source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.path:
            where += f": {self.path}"
        text = f"{where}: {self.message}"
        if self.hint:
            text += f"; hint: {self.hint}"
        return text


class ConfigError(Exception):
    """An invalid configuration; `problems` holds every problem found, never just the first."""

    def __init__(self, problems: list[ConfigProblem], source: str) -> None:
        self.problems = list(problems)
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        lines = [f"invalid louise configuration ({count} {noun}):"]
        lines.extend(problem.render(self.source) for problem in self.problems)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._render()


class UnknownAgentError(LookupError):
    """`Config.agent(name)` for a name that is not configured."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        text = f"unknown Agent {name!r}; known Agents: {', '.join(known)}"
        import difflib  # on a mistake only: not with the engine's start

        close = difflib.get_close_matches(name, known, n=1)
        if close:
            text += f" (did you mean {close[0]!r}?)"
        super().__init__(text)

    def __str__(self) -> str:
        return str(self.args[0])


def toml_problem(text: str, document: str) -> ConfigProblem:
    hint = "fix the TOML syntax at that position (strings need quotes, tables [name])"
    match = _TOML_POSITION_RE.match(text)
    if match:
        line, column = int(match["line"]), int(match["col"])
        return ConfigProblem("", f"invalid TOML: {match['msg']}", hint, line, column)
    match = _TOML_END_RE.match(text)
    if match:
        lines = document.split("\n")
        return ConfigProblem(
            "", f"invalid TOML: {match['msg']}", hint, len(lines), len(lines[-1]) + 1
        )
    return ConfigProblem("", f"invalid TOML: {text}", hint)


def format_path(loc: tuple[str | int, ...]) -> str:
    """`('agents', 'claude', 'args', 1)` → `agents.claude.args[1]` (odd keys are quoted)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        key = part if _BARE_KEY_RE.fullmatch(part) else json.dumps(part)
        out += f".{key}" if out else key
    return out
