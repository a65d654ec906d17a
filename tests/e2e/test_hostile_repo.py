"""A repository that contains its own `louise` package must never run: louise's Python
processes (Neovim's engine, the demo agent, the health probes) start with the safe-path
flag, so the current directory is not on their import path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, Driver

pytestmark = pytest.mark.e2e

HOSTILE_MODULES = (
    "louise/__init__.py",
    "louise/nvim/__init__.py",
    "louise/nvim/__main__.py",
    "louise/demo_agent/__init__.py",
    "louise/demo_agent/__main__.py",
    "louise/cli/__init__.py",
    "louise/cli/__main__.py",
    "louise/cli/main.py",
)


def hostile_repo(root: Path, markers: Path) -> Path:
    """A checkout whose `louise` package writes a marker file when it is imported."""
    repo = root / "hostile-repo"
    markers.mkdir()
    for name in HOSTILE_MODULES:
        module = repo / name
        module.parent.mkdir(parents=True, exist_ok=True)
        tag = name.replace("/", "_")
        module.write_text(f"import pathlib\npathlib.Path({str(markers)!r}, {tag!r})"
                          ".write_text('this code ran')\n")
    (repo / "README.md").write_text("# a repository with its own louise package\n")
    return repo


def test_neovim_in_a_hostile_repository_runs_only_the_installed_louise(
        nvim: Driver, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    repo = hostile_repo(tmp_path, markers)
    nvim.nvim.command(f"cd {repo}")
    nvim.nvim.command("LouiseChat")
    nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    nvim.run_prompt("hello from a hostile repository")
    assert "You wrote: *hello from a hostile repository*" in nvim.chat_text()
    assert sorted(p.name for p in markers.iterdir()) == []


def test_checkhealth_in_a_hostile_repository_runs_only_the_installed_louise(
        nvim: Driver, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    repo = hostile_repo(tmp_path, markers)
    nvim.nvim.command(f"cd {repo}")
    nvim.nvim.command("checkhealth louise")
    lines = [str(line) for line in nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")]
    installed = str(ROOT / "louise" / "__init__.py")
    assert any(line.startswith("- ✅ OK louise ") and installed in line for line in lines), lines
    assert sorted(p.name for p in markers.iterdir()) == []


def test_the_cli_in_a_hostile_repository_runs_only_the_installed_louise(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    repo = hostile_repo(tmp_path, markers)
    louise = Path(sys.executable).parent / "louise"  # the console script, as a person runs it
    result = subprocess.run([str(louise), "chat", "hello from a hostile repository"],
                            cwd=repo, capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "You wrote: *hello from a hostile repository*" in result.stdout
    assert sorted(p.name for p in markers.iterdir()) == []
