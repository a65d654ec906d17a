"""The import rules of ARCHITECTURE.md, checked on the source's imports, parsed with `ast`
(nothing is imported), including imports inside functions and under `TYPE_CHECKING`:
each layer imports only the layers below it, no package's modules import each other in
a circle, and no part of the Neovim engine imports the engine back."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "louise"
# `louise/__init__.py` only holds `__version__` and imports nothing (checked below), so
# reading it is not reaching up a layer.
ROOT_METADATA = "louise"

# The layer table of ARCHITECTURE.md: what each package of `louise/` may import of the
# others (a package, or one module of it), top to bottom.
BELOW_THE_CLI = ("serve", "proxy", "checkpoints", "registry", "permissions", "capabilities",
                 "config", "storage", "session", "limits", "acp")
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "nvim": BELOW_THE_CLI,
    "cli": BELOW_THE_CLI,
    "serve": ("proxy", "permissions", "capabilities", "config", "storage", "session",
              "limits", "acp"),
    "proxy": ("limits", "acp"),
    "checkpoints": ("registry.turn_hooks", "config", "storage"),
    "registry": ("permissions", "capabilities", "config", "storage", "session", "limits",
                 "acp"),
    "permissions": ("config", "storage"),
    "capabilities": ("acp",),
    "config": ("storage", "limits"),
    "storage": ("session", "limits", "acp"),
    "session": ("acp",),
    "limits": (),
    "acp": (),
    # Beside the layers: the bundled agent is standard library only, but for where its
    # sessions are kept and asyncio imported without ssl.
    "demo_agent": ("storage.paths", "storage.first_use"),
}
# The Neovim engine builds its parts; only the process that starts it imports it (and
# :checkhealth's, which checks that it loads).
ENGINE = "louise.nvim.engine"
ENGINE_IMPORTERS = ("louise.nvim.app", "louise.nvim.health")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def imports_of(source: str, module: str, is_package: bool = False,
               modules: Iterable[str] = ()) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in `source`. `from p import m` of a
    submodule `m` (one of `modules`) imports `p.m`."""
    known = set(modules)
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
            submodules = [f"{name}.{alias.name}" for alias in node.names
                          if f"{name}.{alias.name}" in known]
            if len(submodules) < len(node.names):
                yield node.lineno, name
            for submodule in submodules:
                yield node.lineno, submodule


def louise_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


MODULES = frozenset(louise_modules())


def package_of(module: str) -> str | None:
    """The top-level package of `louise` a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "louise" else None


def violations(path: Path, module: str, source: str) -> list[str]:
    """What this module imports that its layer must not."""
    found = []
    is_package = path.name == "__init__.py"
    here = package_of(module)
    for line, name in imports_of(source, module, is_package, MODULES):
        where = f"{path.relative_to(ROOT)}:{line} imports {name}"
        if within(name, "pynvim") and not within(module, "louise.nvim"):
            found.append(f"{where} (pynvim only under louise/nvim/)")
        if within(name, "acp") and module != "louise.acp.schema":
            found.append(f"{where} (the ACP SDK only in louise/acp/schema.py)")
        if within(name, ENGINE) and within(module, "louise.nvim") and module != ENGINE \
                and module not in ENGINE_IMPORTERS:
            found.append(f"{where} (a part of the engine never imports the engine: it is "
                         "handed what it needs)")
        if not within(name, "louise") or name == ROOT_METADATA or here is None:
            continue
        there = package_of(name)
        if there is None or there == here:
            continue
        allowed = MAY_IMPORT.get(here)
        if allowed is None:
            found.append(f"{where} (louise/{here} is not in the layer table)")
        elif not any(within(name, f"louise.{below}") for below in allowed):
            found.append(f"{where} (louise.{here} may import only "
                         f"{', '.join(allowed) or 'itself'})")
    return found


def circles(modules: Mapping[str, str]) -> list[list[str]]:
    """The circles of imports among the modules of one package (each module's source by
    name): every set of modules that import each other, directly or round about."""
    names = set(modules)
    edges: dict[str, set[str]] = {}
    for module, source in modules.items():
        is_package = any(other.startswith(module + ".") for other in names)
        targets = set()
        for _, name in imports_of(source, module, is_package, names):
            while name and name not in names:  # `from p.m import f` imports p.m
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        edges[module] = targets
    return strongly_connected(edges)


def strongly_connected(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one node, each sorted (iterative: no recursion
    limit to meet)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def packages() -> dict[str, dict[str, str]]:
    """Each package of `louise` (its directory) and the sources of its own modules, its
    `__init__` included."""
    found: dict[str, dict[str, str]] = {}
    for module, path in louise_modules().items():
        directory = path.parent
        key = module_name(directory / "__init__.py")
        found.setdefault(key, {})[module] = path.read_text(encoding="utf-8")
    return found


def test_every_layer_imports_only_what_is_below_it() -> None:
    found = []
    for module, path in louise_modules().items():
        found.extend(violations(path, module, path.read_text(encoding="utf-8")))
    assert found == []


def test_no_package_imports_itself_in_a_circle() -> None:
    found = {package: circles(modules) for package, modules in packages().items()}
    assert {package: loops for package, loops in found.items() if loops} == {}


def test_every_package_is_in_the_layer_table() -> None:
    top = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert top == set(MAY_IMPORT)


def test_the_top_level_holds_only_packages() -> None:
    loose = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert loose == []


def test_the_root_package_imports_nothing() -> None:
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert list(imports_of(source, "louise", is_package=True)) == []


@pytest.mark.parametrize(("module", "source", "rule"), [
    ("louise.acp.peer", "from louise.session import Session", "louise.acp may import only"),
    ("louise.acp.peer", "def f():\n    import louise.registry", "louise.acp may import only"),
    ("louise.limits.state", "from louise.storage import paths", "louise.limits may import"),
    ("louise.limits.state", "from ..config import model", "louise.limits may import"),
    ("louise.registry.turns", "import pynvim", "pynvim only under"),
    ("louise.registry.turns", "import acp.schema", "the ACP SDK only"),
    ("louise.registry.turns", "from louise.nvim.engine import Engine",
     "louise.registry may import"),
    ("louise.registry.turns", "from louise.cli.console import ConsolePrinter",
     "louise.registry may import"),
    ("louise.registry.turns", "from louise.checkpoints.store import TurnStore",
     "louise.registry may import"),
    ("louise.checkpoints.store", "from louise.nvim.review import ReviewUi",
     "louise.checkpoints may import"),
    ("louise.checkpoints.store", "from louise.registry.turns import Turns",
     "louise.checkpoints may import"),
    ("louise.session.model", "from louise.registry import SessionRegistry",
     "louise.session may import"),
    ("louise.storage.transcript", "from louise.config.model import Config",
     "louise.storage may import"),
    ("louise.config.model", "from louise.permissions.rules import PermissionMemory",
     "louise.config may import"),
    ("louise.capabilities.fs", "from louise.registry import RegistryError",
     "louise.capabilities may import"),
    ("louise.nvim.health", "from louise.cli.commands.agents import resolve_command",
     "louise.nvim may import"),
    ("louise.cli.console", "from louise.nvim.render import ChatRenderer",
     "louise.cli may import"),
    ("louise.nvim.commands", "from louise.nvim.engine import Engine", "never imports the engine"),
    ("louise.nvim.review", "if TYPE_CHECKING:\n    from louise.nvim.engine import Engine",
     "never imports the engine"),
    ("louise.nvim.limits_ui", "def f():\n    from louise.nvim import engine",
     "never imports the engine"),
])
def test_the_check_catches_an_import_from_above(module: str, source: str, rule: str) -> None:
    path = ROOT / Path(*module.split(".")).with_suffix(".py")
    found = violations(path, module, source)
    assert len(found) == 1 and rule in found[0], found


def test_the_check_allows_what_is_below() -> None:
    for module, source in (("louise.acp.peer", "from louise.acp.errors import AcpError"),
                           ("louise.acp.peer", "from louise import __version__"),
                           ("louise.limits.state", "from .snapshot import Snapshot"),
                           ("louise.nvim.engine", "import pynvim"),
                           ("louise.nvim.app", "from louise.nvim.engine import Engine"),
                           ("louise.checkpoints.service",
                            "from louise.registry.turn_hooks import TurnInfo"),
                           ("louise.acp.schema", "import acp.schema")):
        path = ROOT / Path(*module.split(".")).with_suffix(".py")
        assert violations(path, module, source) == []


@pytest.mark.parametrize("modules", [
    {"louise.p.a": "from louise.p.b import x", "louise.p.b": "from louise.p.a import y"},
    {"louise.p.a": "from louise.p import b", "louise.p.b": "from louise.p.c import z",
     "louise.p.c": "if TYPE_CHECKING:\n    from louise.p.a import A"},
    {"louise.p.a": "def f():\n    from .b import x", "louise.p.b": "import louise.p.a"},
    # A module importing a name its package's `__init__` gathers from it.
    {"louise.p": "from louise.p.a import A", "louise.p.a": "from louise.p import B"},
])
def test_the_check_catches_a_circle_inside_a_package(modules: dict[str, str]) -> None:
    assert len(circles(modules)) == 1


@pytest.mark.parametrize("modules", [
    {"louise.p.a": "from louise.p.b import x", "louise.p.b": "from louise.q import y"},
    # `from p import m` loads p's `__init__` first, but imports the submodule m.
    {"louise.p": "def main():\n    from louise.p.a import main", "louise.p.a":
     "from louise.p import b", "louise.p.b": "X = 1"},
])
def test_the_check_allows_a_package_that_imports_one_way(modules: dict[str, str]) -> None:
    assert circles(modules) == []
