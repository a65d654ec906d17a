"""The repository is the project's own: nothing in it points into the workplace's shared
real-agents kit by path (the kit's README is named in words), and the kit's mock model is
not carried along (the suite's model API is tests/real_agents/model_api/)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("louise", "lua", "plugin", "rplugin", "scripts", "tests", "bench", "doc")
KIT_PATH = "shared/real-agents/"
SUFFIXES = {".py", ".lua", ".vim", ".md", ".txt", ".toml", ".sh", ".json", ".ndjson"}


def project_files() -> Iterator[Path]:
    yield from (p for p in ROOT.iterdir() if p.is_file() and p.suffix in SUFFIXES)
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts:
                yield path


def test_no_file_points_into_the_shared_kit() -> None:
    this = Path(__file__).resolve()
    pointing = [str(path.relative_to(ROOT)) for path in project_files() if path != this
                and KIT_PATH in path.read_text(encoding="utf-8", errors="replace")]
    assert pointing == []


def test_the_kits_mock_model_is_not_vendored() -> None:
    assert not (ROOT / "tests" / "real_agents" / "mock_model.py").exists()
    assert "mock_model" not in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
