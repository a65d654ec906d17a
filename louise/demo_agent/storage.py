"""Sessions on disk, so that session/list and session/load work across agent processes.

A client restarts a crashed agent and reattaches its sessions with `session/load`, and
a person reopens the editor tomorrow: both need the history to outlive the process.
One JSON file per session in one directory (default `<louise state dir>/demo-agent`,
`LOUISE_DEMO_STATE_DIR` to move it, `off` to keep everything in memory). Writes are
atomic (temp file, then rename); a new id is claimed with O_EXCL, so two demo agents
sharing the directory never hand out the same id. Ids from the client are checked
before they become file names.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("louise.demo_agent")

JsonObject = dict[str, Any]

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_NEW_ID = re.compile(r"demo-(\d{1,9})")
MAX_FILE_BYTES = 32 * 1024 * 1024  # a larger file is not ours: skip it
MAX_FILES = 10_000


def default_directory(env_value: str | None) -> Path | None:
    """Where sessions live: the env override, `off` for nowhere, else the state dir."""
    if env_value == "off":
        return None
    if env_value:
        return Path(env_value).expanduser()
    from louise.storage import paths  # platformdirs; only needed when persisting

    return paths.state_dir() / "demo-agent"


class SessionFiles:
    """A directory of `<session id>.json` files, or nothing at all (`directory=None`)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._next_memory_id = 0
        if directory is not None:
            try:
                # Private: the sessions hold the person's prompts.
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                log.warning("cannot use %s (%s); sessions stay in memory", directory, exc)
                self.directory = None

    def _path(self, session_id: str) -> Path | None:
        if self.directory is None or not _SAFE_ID.fullmatch(session_id):
            return None
        return self.directory / f"{session_id}.json"

    def ids(self) -> list[str]:
        if self.directory is None:
            return []
        try:
            names = sorted(p.name for p in self.directory.iterdir() if p.suffix == ".json")
        except OSError as exc:
            log.warning("cannot list %s: %s", self.directory, exc)
            return []
        return [name[: -len(".json")] for name in names[:MAX_FILES]]

    def claim(self) -> str:
        """A new session id `demo-N`: the lowest N above every id already used."""
        if self.directory is None:
            self._next_memory_id += 1
            return f"demo-{self._next_memory_id}"
        used = [int(m.group(1)) for i in self.ids() if (m := _NEW_ID.fullmatch(i))]
        number = max(used, default=0)
        for _ in range(1000):  # other processes may be claiming too
            number += 1
            path = self.directory / f"demo-{number}.json"
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                continue
            except OSError as exc:
                log.warning("cannot claim a session file (%s); keeping it in memory", exc)
                break
            return f"demo-{number}"
        self._next_memory_id += 1
        return f"demo-mem-{os.getpid()}-{self._next_memory_id}"

    def load(self, session_id: str) -> JsonObject | None:
        path = self._path(session_id)
        if path is None:
            return None
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                log.warning("skipping %s: too large", path)
                return None
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.debug("skipping %s: %s", path, exc)  # e.g. claimed but not written yet
            return None
        return data if isinstance(data, dict) else None

    def save(self, session_id: str, data: JsonObject) -> None:
        path = self._path(session_id)
        if path is None:
            return
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                         0o600)  # private, as every file under louise's state directory
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(data, ensure_ascii=False))
            os.replace(temporary, path)
        except OSError as exc:
            log.warning("cannot save session %s: %s", session_id, exc)
