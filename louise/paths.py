"""Where louise keeps its files: user config and state directories (platformdirs).

`LOUISE_CONFIG` points at a config file, `LOUISE_STATE_DIR` at a state directory;
both exist so that tests, a second Neovim and `louise inspect` can be isolated.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "louise"


def state_dir() -> Path:
    """The user state directory (not created here)."""
    override = os.environ.get("LOUISE_STATE_DIR")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_state_dir(APP_NAME))


def config_file() -> Path:
    """The config file path (it may not exist)."""
    override = os.environ.get("LOUISE_CONFIG")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"
