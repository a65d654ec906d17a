"""The engine Neovim starts makes louise's state directory private on start."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.integration.test_private_state import world_readable_state

pytestmark = pytest.mark.e2e


def test_starting_a_chat_makes_an_old_state_directory_private(nvim: Driver) -> None:
    state = Path(os.environ["LOUISE_STATE_DIR"])
    files = world_readable_state(state)
    nvim.nvim.command("LouiseChat")
    nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    modes = {str(p.relative_to(state)): oct(stat.S_IMODE(p.lstat().st_mode))
             for p in [*files, state / "transcripts", state / "demo-agent"]}
    assert modes == {name: oct(0o700 if name in ("transcripts", "demo-agent") else 0o600)
                     for name in modes}
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
