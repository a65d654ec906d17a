"""Modules a start imports for nothing, loaded when something first uses them instead.

A stand-in (`ModuleOnFirstUse`) sits in `sys.modules` while the modules that import it are
imported, then is taken out: any later `import NAME` anywhere gets the real module, and
the modules imported with the stand-in keep it; the first attribute they ask of it
imports the real module and puts it in the stand-in's place in every module that holds it.
Only the bare `import NAME` binding is deferred: `from NAME import x` asks at once, which
loads the real module then (correct, merely not deferred).

`ssl`: `asyncio` (`base_events`, `selector_events`, `sslproto`) and anyio's asyncio backend
(its sockets and TLS streams) import it for TLS. louise's processes talk over pipes and
Unix sockets, never TLS, and `ssl` (ssl.py's enums, OpenSSL's `_ssl`) is ~7 ms of CPU and
~3.4 MiB of the engine's start (~25 ms and ~6 MiB in a bare process, which also pays for
what the engine imports anyway): `import_asyncio_without_ssl`. What they ask of `ssl` without
using TLS is answered without loading it (`SslOnFirstUse`):
- while they are imported: `SSLWantReadError` and `SSLSyscallError` (sslproto's
  `SSLAgainErrors`, caught only inside a TLS transport) and `SSLContext` (anyio's TLS
  streams, an annotation): classes that stand in for the real ones until it loads, which
  happens before any TLS object exists (making one needs the real module);
- `SSLSocket`, in asyncio's `_check_ssl_socket` (every `loop.sock_*` call): nothing is an
  instance of it while ssl.py has never run; once the real module is loaded (by anyone),
  the real class answers.
Anything else (`create_default_context`, `MemoryBIO`, `SSLContext` after the imports, …)
loads the real module first, so TLS through asyncio and anyio works as it always did.

`secrets`: pydantic imports it for one comparison (`Secret.__eq__`); with it come `hmac`,
`hashlib` and OpenSSL's libcrypto (`_hashlib`): ~4 MiB of RSS and ~5 ms
(`import_without("pydantic.types", "secrets")`).

pydantic's plugin loader: pydantic looks for plugins (entry points of the `pydantic`
group) when it builds its first validator, importing `importlib.metadata` (with email,
zipfile, csv, tempfile, …: ~20 ms, ~2.4 MiB, ~40 modules) to find none. `defer_pydantic_
plugins` answers "no plugins" when no distribution on `sys.path` declares one (their
`entry_points.txt`, read directly: what importlib.metadata would read); when one does, or
when it cannot tell (a zip on `sys.path`, another finder of distributions), pydantic's
own loader answers, as before.
"""

from __future__ import annotations

import sys
from types import ModuleType

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import Any

# Answered without loading ssl while nothing has loaded it (see the module's docstring).
ANSWERED_WHILE_IMPORTING = frozenset({"SSLWantReadError", "SSLSyscallError", "SSLContext"})
ANSWERED_UNTIL_LOADED = frozenset({"SSLSocket"})


def import_asyncio_without_ssl(*, with_anyio: bool = True) -> None:
    """Import `asyncio` and (`with_anyio`) anyio's asyncio backend with `ssl` loaded on
    first use (see the module's docstring). Call it first thing, before anything imports
    `asyncio` and before the process starts a thread; does nothing when `asyncio` or `ssl`
    is already imported."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    stand_in = SslOnFirstUse("ssl")
    sys.modules["ssl"] = stand_in
    stand_in.__dict__["_importing"] = True
    try:
        import asyncio  # noqa: F401 (imported now, with the stand-in)

        if with_anyio:
            import anyio._backends._asyncio  # noqa: F401 (what anyio.run imports first)
    finally:
        stand_in.__dict__["_importing"] = False
        if sys.modules.get("ssl") is stand_in:
            del sys.modules["ssl"]


def import_without(module: str, *deferred: str) -> ModuleType:
    """Import `module` with each of `deferred` (not imported yet) loaded on first use;
    before the process starts a thread (another thread's import would get the stand-in)."""
    import importlib

    stand_ins = {name: ModuleOnFirstUse(name) for name in deferred if name not in sys.modules}
    sys.modules.update(stand_ins)
    try:
        return importlib.import_module(module)
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


def import_pydantic_without_extras() -> None:
    """pydantic imported with `secrets` loaded on first use and its plugin loader loaded only
    when a plugin may be installed (see the module's docstring): where pydantic is first
    imported (`config/schema/`, the ACP SDK's `acp.schema.BEFORE_SDK_IMPORT`), no longer
    at a start, which has nothing to validate when its configuration comes from the
    validated-configuration cache. Another thread that imports `secrets` during the
    import of `pydantic.types` gets the stand-in, which loads the real module on first
    use: correct, merely not deferred."""
    import_without("pydantic.types", "secrets")
    import pydantic.plugin  # noqa: F401 (defer_pydantic_plugins needs the package)

    defer_pydantic_plugins()


def pydantic_without_extras_on_first_use() -> None:
    """For a process that may validate ACP payloads: the SDK's first import imports
    pydantic as `import_pydantic_without_extras` does (the configuration's validator does
    it itself). Nothing is imported now: a start whose configuration comes from the
    validated-configuration cache imports no pydantic at all."""
    from louise.acp import schema

    if import_pydantic_without_extras not in schema.BEFORE_SDK_IMPORT:
        schema.BEFORE_SDK_IMPORT.append(import_pydantic_without_extras)


def defer_pydantic_plugins() -> None:
    """pydantic's plugin loader loaded only when a plugin may be installed (see the
    module's docstring). Once `pydantic.plugin` is imported, before the first validator is
    built (and before the process starts a thread)."""
    name = "pydantic.plugin._loader"
    package = sys.modules.get("pydantic.plugin")
    if name in sys.modules or package is None:
        return
    stand_in = PydanticPluginsOnFirstUse(name)
    sys.modules[name] = stand_in
    setattr(package, "_loader", stand_in)  # noqa: B010 (as an import binds a submodule)


def pydantic_plugins_declared() -> bool:
    """Whether a distribution on `sys.path` may declare a pydantic plugin: True when one
    does, or when this cannot be told without importlib.metadata."""
    from importlib.machinery import PathFinder

    if any(hasattr(finder, "find_distributions") and finder is not PathFinder
           for finder in sys.meta_path):
        return True  # distributions found elsewhere than in sys.path's directories
    import os

    for entry in sys.path:
        root = entry or "."
        if os.path.isfile(root):
            return True  # a zip: importlib.metadata reads distributions in it too
        try:
            children = os.listdir(root)
        except OSError:
            continue
        infos = [os.path.join(root, child) for child in children
                 if child.lower().endswith((".dist-info", ".egg-info"))]
        if root.lower().endswith(".egg"):
            infos += [os.path.join(root, child) for child in children
                      if child.lower() == "egg-info"]
        for info in infos:
            try:
                with open(os.path.join(info, "entry_points.txt"), encoding="utf-8") as file:
                    if any(line.strip() == "[pydantic]" for line in file):
                        return True
            except (OSError, ValueError):
                continue  # no entry points (or none importlib.metadata could read)
    return False


class ModuleOnFirstUse(ModuleType):
    """A module as the modules imported with it see it until they use it."""

    def __init__(self, name: str) -> None:
        super().__init__(name, f"{name}, loaded on first use (louise.storage.first_use)")

    def __repr__(self) -> str:  # ModuleType's reads __file__: it would load the module
        return f"<module {self.__name__!r} (loaded on first use)>"

    def __getattr__(self, name: str) -> Any:
        if name == "__path__":  # `from X import y` asks; the modules stood in are no packages
            raise AttributeError(name)
        return getattr(self.load(), name)

    def real(self, value: object, module: ModuleType) -> object:
        """What `value`, held by a module, is once the real `module` is loaded."""
        return module if value is self else value

    def load(self) -> ModuleType:
        """The real module, imported now if it is not yet, and put in place of this stand-in
        (and of what it answered for) in every module that holds it."""
        import importlib

        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        module = importlib.import_module(name)
        for holder in list(sys.modules.values()):
            namespace = getattr(holder, "__dict__", None) if isinstance(holder, ModuleType) \
                else None
            if holder is self or not isinstance(namespace, dict) \
                    or not any(value is self for value in list(namespace.values())):
                continue
            for key, value in list(namespace.items()):
                replaced = self.real(value, module)
                if replaced is not value:
                    namespace[key] = replaced
        return module


class SslOnFirstUse(ModuleOnFirstUse):
    """`ssl` until it is used, answering what asyncio and anyio ask without TLS (see the
    module's docstring)."""

    def __init__(self, name: str = "ssl") -> None:
        super().__init__(name)
        # One class per name, so that the real module's can replace each where it is held.
        self.__dict__["_unloaded"] = {}
        self.__dict__["_importing"] = False

    def __getattr__(self, name: str) -> Any:
        loaded = sys.modules.get(self.__name__)
        if loaded is None or loaded is self:
            if name in ANSWERED_UNTIL_LOADED or (
                    name in ANSWERED_WHILE_IMPORTING and self.__dict__["_importing"]):
                return self._unloaded_class(name)
        return super().__getattr__(name)

    def _unloaded_class(self, name: str) -> type:
        made: dict[str, type] = self.__dict__["_unloaded"]
        cls = made.get(name)
        if cls is None:
            base: type = Exception if name.endswith("Error") else object
            cls = made[name] = type(name, (base,), {
                "__module__": __name__,
                "__doc__": f"ssl.{name} while the ssl module is not loaded: nothing is one"})
        return cls

    def real(self, value: object, module: ModuleType) -> object:
        stand_ins = {id(cls) for cls in self.__dict__["_unloaded"].values()}
        if isinstance(value, type) and id(value) in stand_ins:
            return getattr(module, value.__name__)
        if type(value) is tuple and any(id(item) in stand_ins for item in value):
            return tuple(self.real(item, module) for item in value)
        return super().real(value, module)


class PydanticPluginsOnFirstUse(ModuleOnFirstUse):
    """pydantic's `pydantic.plugin._loader` until a plugin may be installed: its one
    function, `get_plugins`, answers none without importlib.metadata when no distribution
    declares one; otherwise (and for anything else asked of it) the real module answers."""

    def get_plugins(self) -> Any:
        declared = self.__dict__.get("_declared")
        if declared is None:
            declared = self.__dict__["_declared"] = pydantic_plugins_declared()
        if not declared:
            return ()
        return self.load().get_plugins()
