"""What particular agents need of louise beyond the protocol, known by the name they give
in `initialize` (`agentInfo.name`). Pure.

History after `session/load`: the protocol has an agent replay a loaded session's history
before it answers. gemini-cli answers first and streams the history after it (its own
context message included), ending with its `available_commands_update`; louise keeps
taking that as the replay until then (within HISTORY_WAIT seconds), so it is neither shown
as new nor mistaken for the next turn's reply.

A missing file: louise answers `fs/read_text_file` of a missing file with the protocol's
"Resource not found" error (-32002), which qwen-code, for one, reads as a missing file.
gemini-cli reads a file before writing it and takes a missing one only from an `Error`
whose text says so ("Resource not found", "ENOENT", …); the ACP SDK it is built on hands
it a JSON-RPC error as a plain object, whose text is "[object Object]", so every write of
a new file failed ("Error checking existing file"). It gets what an editor that opens a
missing path as a new, empty buffer gives (Zed): an empty file, which it then writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Agents that take a missing file only as an empty one (by `agentInfo.name`).
MISSING_FILE_AS_EMPTY = frozenset({"gemini-cli"})
# Agents that stream a loaded session's history after answering `session/load`, and the
# update that ends it.
HISTORY_AFTER_LOAD = {"gemini-cli": "available_commands_update"}
HISTORY_WAIT = 10.0  # seconds, at most, for the end of that history


def agent_name(agent_info: Mapping[str, Any] | None) -> str:
    name = agent_info.get("name") if agent_info else None
    return name if isinstance(name, str) else ""


def reads_missing_file_as_empty(agent_info: Mapping[str, Any] | None) -> bool:
    """Whether `fs/read_text_file` of a missing file is answered as an empty file."""
    return agent_name(agent_info) in MISSING_FILE_AS_EMPTY


def history_after_load(agent_info: Mapping[str, Any] | None) -> str | None:
    """The update that ends a loaded session's history when the agent streams it after
    answering `session/load` (None: it replays before answering, as it should)."""
    return HISTORY_AFTER_LOAD.get(agent_name(agent_info))
