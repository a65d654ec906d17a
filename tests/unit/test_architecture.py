"""Layers point down (ARCHITECTURE.md): checked on the source's imports, parsed with `ast`
(nothing is imported), including imports inside functions."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "louise"
# `louise/__init__.py` only holds `__version__` and imports nothing (checked below), so
# reading it is not reaching up a layer.
ROOT_METADATA = "louise"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in `source`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            yield node.lineno, name


def louise_modules() -> Iterator[tuple[Path, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, module_name(path)


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def violations(path: Path, module: str, source: str) -> list[str]:
    """What this module imports that its layer must not."""
    found = []
    is_package = path.name == "__init__.py"
    for line, name in imports_of(source, module, is_package):
        where = f"{path.relative_to(ROOT)}:{line} imports {name}"
        if within(name, "pynvim") and not within(module, "louise.nvim"):
            found.append(f"{where} (pynvim only under louise/nvim/)")
        if not within(name, "louise"):
            continue
        if within(module, "louise.acp") and not within(name, "louise.acp") \
                and name != ROOT_METADATA:
            found.append(f"{where} (louise.acp imports only louise.acp)")
        if within(module, "louise.limits") and not within(name, "louise.limits"):
            found.append(f"{where} (louise.limits imports only louise.limits)")
        if within(module, "louise.session") and not (
                within(name, "louise.session") or within(name, "louise.acp")):
            found.append(f"{where} (the session model sits on louise.acp only)")
        if within(module, "louise.registry") and any(
                within(name, above) for above in ("louise.nvim", "louise.cli.commands",
                                                  "louise.cli.main", "louise.cli.console")):
            found.append(f"{where} (the registry is below the editor and the CLI)")
        if within(module, "louise.registry") and within(name, "louise.checkpoints"):
            found.append(f"{where} (the registry knows checkpoints only by its hooks)")
        if within(module, "louise.checkpoints") and any(
                within(name, above) for above in ("louise.nvim", "louise.cli.commands",
                                                  "louise.cli.main", "louise.cli.console")):
            found.append(f"{where} (checkpoints are below the editor and the CLI)")
    return found


def test_every_layer_imports_only_what_is_below_it() -> None:
    found = []
    for path, module in louise_modules():
        found.extend(violations(path, module, path.read_text(encoding="utf-8")))
    assert found == []


def test_the_root_package_imports_nothing() -> None:
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert list(imports_of(source, "louise", is_package=True)) == []


@pytest.mark.parametrize(("module", "source", "rule"), [
    ("louise.acp.peer", "from louise.session import Session", "louise.acp imports only"),
    ("louise.acp.peer", "def f():\n    import louise.registry", "louise.acp imports only"),
    ("louise.limits.state", "from louise import paths", "louise.limits imports only"),
    ("louise.limits.state", "from ..config import Config", "louise.limits imports only"),
    ("louise.registry.turns", "import pynvim", "pynvim only under"),
    ("louise.registry.turns", "from louise.nvim.engine import Engine", "below the editor"),
    ("louise.registry.turns", "from louise.checkpoints.store import WorkspaceStore",
     "only by its hooks"),
    ("louise.checkpoints.store", "from louise.nvim.review import ReviewUi",
     "checkpoints are below"),
    ("louise.session.model", "from louise.registry import SessionRegistry", "session model"),
])
def test_the_check_catches_an_import_from_above(module: str, source: str, rule: str) -> None:
    path = ROOT / Path(*module.split(".")).with_suffix(".py")
    found = violations(path, module, source)
    assert len(found) == 1 and rule in found[0]


def test_the_check_allows_what_is_below() -> None:
    for module, source in (("louise.acp.peer", "from louise.acp.errors import AcpError"),
                           ("louise.acp.peer", "from louise import __version__"),
                           ("louise.limits.state", "from .snapshot import Snapshot"),
                           ("louise.nvim.engine", "import pynvim")):
        path = ROOT / Path(*module.split(".")).with_suffix(".py")
        assert violations(path, module, source) == []
