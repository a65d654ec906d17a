"""Shared pieces of the CLI verbs: loading config with a readable failure."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from louise.config import Config


def load_config_or_exit() -> Config | None:
    """The config, or None after printing every problem (callers exit 2)."""
    from louise.config import ConfigError, load_config

    try:
        return load_config()
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return None
