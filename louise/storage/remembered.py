"""What louise remembers between sessions beside transcripts, in `remembered.json` under the
state directory: the person's name for each session (`:LouiseRename`; an agent keeps its
own title, not this name), and each Agent's last slash commands (its
`available_commands_update`: an agent that resumes a session may not send them again, and
`/` completion would offer nothing).

Bounded: at most `MAX_NAMES` names (the oldest forgotten), `MAX_AGENTS` Agents' commands
(the least recently updated forgotten), `MAX_COMMANDS` commands each, every string cut;
a file over `MAX_FILE_BYTES` or unreadable is taken as empty. Blocking: read once, then
written whole (atomically, under the file's lock, merged with what another louise process
wrote meanwhile); callers run `save` in a worker thread.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from louise.storage import durable, paths

log = logging.getLogger("louise.storage")

FILE_NAME = "remembered.json"
VERSION = 1
MAX_NAMES = 500
MAX_AGENTS = 32
MAX_COMMANDS = 200
MAX_TEXT = 160
MAX_NAME_CHARS = 200
MAX_FILE_BYTES = 2 * 1024 * 1024
LOCK_TIMEOUT = 5.0


def _key(agent: str, session_id: str) -> str:
    return f"{agent}:{session_id}"


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return value[:limit] if isinstance(value, str) else ""


def command_record(command: Mapping[str, Any]) -> dict[str, Any] | None:
    """A slash command as remembered: name, description, input hint (bounded)."""
    name = _text(command.get("name"))
    if not name:
        return None
    record: dict[str, Any] = {"name": name, "description": _text(command.get("description"))}
    raw_input = command.get("input")
    hint = raw_input.get("hint") if isinstance(raw_input, Mapping) else None
    if isinstance(hint, str) and hint:
        record["input"] = {"hint": _text(hint)}
    return record


class Remembered:
    """See the module docstring. Thread-safe: the engine reads, a worker thread saves."""

    def __init__(self, path: Path | None = None, clock: Any = time.time) -> None:
        self._path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._names: dict[str, dict[str, Any]] | None = None  # key -> {name, t}
        self._commands: dict[str, dict[str, Any]] = {}  # agent -> {commands, t}
        self._changed_names: dict[str, dict[str, Any] | None] = {}  # None: forgotten
        self._changed_commands: dict[str, dict[str, Any]] = {}

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else paths.state_dir() / FILE_NAME

    # ------------------------------------------------------------------ reading

    def _read(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """The file's names and commands, checked (anything malformed is left out)."""
        names: dict[str, dict[str, Any]] = {}
        commands: dict[str, dict[str, Any]] = {}
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
        except OSError:
            return names, commands
        if len(raw) > MAX_FILE_BYTES:
            log.warning("%s is over %d bytes: not read", self.path, MAX_FILE_BYTES)
            return names, commands
        try:
            document = json.loads(raw)
        except ValueError:
            return names, commands
        if not isinstance(document, dict) or document.get("version") != VERSION:
            return names, commands
        for key, entry in (document.get("names") or {}).items() if isinstance(
                document.get("names"), dict) else ():
            if isinstance(entry, dict) and isinstance(entry.get("name"), str) \
                    and isinstance(entry.get("t"), (int, float)):
                names[str(key)] = {"name": entry["name"][:MAX_NAME_CHARS], "t": entry["t"]}
        for agent, entry in (document.get("commands") or {}).items() if isinstance(
                document.get("commands"), dict) else ():
            if isinstance(entry, dict) and isinstance(entry.get("commands"), list) \
                    and isinstance(entry.get("t"), (int, float)):
                kept = [c for c in (command_record(item) for item in entry["commands"]
                                    [:MAX_COMMANDS] if isinstance(item, dict)) if c]
                commands[str(agent)] = {"commands": kept, "t": entry["t"]}
        return names, commands

    def _loaded(self) -> dict[str, dict[str, Any]]:
        if self._names is None:
            self._names, self._commands = self._read()
        return self._names

    # ------------------------------------------------------------------ what it answers

    def name(self, agent: str, session_id: str) -> str | None:
        """The person's name for an Agent's session, if they gave one."""
        with self._lock:
            entry = self._loaded().get(_key(agent, session_id))
        return entry["name"] if entry else None

    def commands(self, agent: str) -> list[dict[str, Any]]:
        """The Agent's slash commands as it last sent them (empty: never seen)."""
        with self._lock:
            self._loaded()
            entry = self._commands.get(agent)
        return [dict(c) for c in entry["commands"]] if entry else []

    # ------------------------------------------------------------------ remembering

    def remember_name(self, agent: str, session_id: str, name: str | None) -> bool:
        """Keep (or, with no name, forget) a session's name; True when it changed."""
        key = _key(agent, session_id)
        with self._lock:
            names = self._loaded()
            old = names.get(key)
            if (old["name"] if old else None) == name:
                return False
            entry = {"name": name[:MAX_NAME_CHARS], "t": self._clock()} if name else None
            if entry is None:
                names.pop(key, None)
            else:
                names[key] = entry
            self._changed_names[key] = entry
            return True

    def remember_commands(self, agent: str, commands: Sequence[Mapping[str, Any]]) -> bool:
        """Keep an Agent's slash commands; True when they differ from those kept."""
        kept = [c for c in (command_record(item) for item in commands[:MAX_COMMANDS]) if c]
        with self._lock:
            self._loaded()
            old = self._commands.get(agent)
            if old is not None and old["commands"] == kept:
                return False
            entry = {"commands": kept, "t": self._clock()}
            self._commands[agent] = entry
            self._changed_commands[agent] = entry
            return True

    def save(self) -> None:
        """Write what changed since the last save into the file as it is now."""
        with self._lock:
            changed_names, self._changed_names = self._changed_names, {}
            changed_commands, self._changed_commands = self._changed_commands, {}
        if not changed_names and not changed_commands:
            return
        try:
            durable.ensure_private_dir(self.path.parent)
            with durable.locked(self.path, timeout=LOCK_TIMEOUT):
                names, commands = self._read()
                for key, name in changed_names.items():
                    if name is None:
                        names.pop(key, None)
                    else:
                        names[key] = name
                commands.update(changed_commands)
                names = dict(sorted(names.items(), key=lambda kv: kv[1]["t"])[-MAX_NAMES:])
                commands = dict(sorted(commands.items(),
                                       key=lambda kv: kv[1]["t"])[-MAX_AGENTS:])
                durable.atomic_write_json(self.path, {"version": VERSION, "names": names,
                                                      "commands": commands})
        except (OSError, TimeoutError, ValueError) as exc:
            log.warning("could not write %s: %s", self.path, exc)
            return
        with self._lock:  # what is on disk now, and what changed meanwhile (bounded)
            for key, name in self._changed_names.items():
                if name is None:
                    names.pop(key, None)
                else:
                    names[key] = name
            self._names = names
            self._commands = commands | self._changed_commands
