"""What particular agents need of louise beyond the protocol, known by the name they give
in `initialize` (`agentInfo.name`). Pure.

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


def agent_name(agent_info: Mapping[str, Any] | None) -> str:
    name = agent_info.get("name") if agent_info else None
    return name if isinstance(name, str) else ""


def reads_missing_file_as_empty(agent_info: Mapping[str, Any] | None) -> bool:
    """Whether `fs/read_text_file` of a missing file is answered as an empty file."""
    return agent_name(agent_info) in MISSING_FILE_AS_EMPTY
