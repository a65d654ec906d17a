"""The `[checkpoints]` section of the configuration: whether louise records the
workspace's files around each turn (to review and undo it), and the limits of what it
copies and keeps (see `louise/checkpoints/`; checked by `schema/checkpoints.py`)."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointsConfig:
    """`enabled`: a checkpoint before and after every turn. Files over `max_file_bytes`
    (and binary files) are noted, not copied. A workspace with more than
    `max_workspace_files` files or `max_workspace_bytes` bytes to copy is not snapshotted
    whole: only the files tool calls name and louise writes are tracked there. Each
    workspace keeps its newest `keep_turns` turns, fewer when its store grows past
    `max_store_bytes`."""

    enabled: bool = True
    max_file_bytes: int = 2 * MIB
    max_workspace_files: int = 100_000
    max_workspace_bytes: int = 1024 * MIB
    keep_turns: int = 100
    max_store_bytes: int = 2048 * MIB
