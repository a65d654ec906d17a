"""The validator of `[checkpoints]` (louise holds it as `louise/config/checkpoints.py`'s
dataclass, which says what each setting does)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StrictInt

from louise.config.checkpoints import MIB
from louise.config.schema.fields import ConfigModel

Count = Annotated[StrictInt, Field(gt=0)]


class CheckpointsConfig(ConfigModel):
    """`enabled`: a checkpoint before and after every turn. Files over `max_file_bytes`
    (and binary files) are noted, not copied. A workspace with more than
    `max_workspace_files` files or `max_workspace_bytes` bytes to copy is not snapshotted
    whole: only the files tool calls name and louise writes are tracked there. Each
    workspace keeps its newest `keep_turns` turns, fewer when its store grows past
    `max_store_bytes`."""

    enabled: StrictBool = True
    max_file_bytes: Count = 2 * MIB
    max_workspace_files: Count = 100_000
    max_workspace_bytes: Count = 1024 * MIB
    keep_turns: Count = 100
    max_store_bytes: Count = 2048 * MIB
