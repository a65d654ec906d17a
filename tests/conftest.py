"""Shared fixtures: the anyio backend, and isolated louise state/config directories."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Timing belongs in bench/: on a loaded CI machine one generated example may take longer
# than hypothesis's default 200 ms deadline, which would fail a correct property.
settings.register_profile("louise", deadline=None)
settings.load_profile("louise")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def isolated_louise_dirs(tmp_path_factory: pytest.TempPathFactory,
                         monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No test may read or write the real user's louise state or config."""
    root = tmp_path_factory.mktemp("louise-home")
    monkeypatch.setenv("LOUISE_STATE_DIR", str(root / "state"))
    monkeypatch.setenv("LOUISE_CONFIG", str(root / "config.toml"))
    yield root
