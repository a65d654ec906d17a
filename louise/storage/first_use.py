"""`asyncio` imported without `ssl`: the real `ssl` loads when something first uses it.

`asyncio` (`base_events`, `selector_events`, `sslproto`) and anyio's asyncio backend (its
sockets and TLS streams) import `ssl` for TLS. louise's processes talk over pipes and Unix
sockets, never TLS, and `ssl` is ~25 ms of CPU and ~6 MiB at every start (ssl.py's enums,
OpenSSL's set-up): a sixth of the Neovim engine's imports. `import_asyncio_without_ssl`
imports them with a stand-in for `ssl` in `sys.modules`, then takes the stand-in out: any
later `import ssl` anywhere gets the real module, and the modules imported with the
stand-in keep it; it loads the real module when they first use it and puts it (and its
classes) in its place in every module that holds it.

What they ask of `ssl` without using TLS is answered without loading it:
- while they are imported: `SSLWantReadError` and `SSLSyscallError` (sslproto's
  `SSLAgainErrors`, caught only inside a TLS transport) and `SSLContext` (anyio's TLS
  streams, an annotation): classes that stand in for the real ones until it loads, which
  happens before any TLS object exists (making one needs the real module);
- `SSLSocket`, in asyncio's `_check_ssl_socket` (every `loop.sock_*` call): nothing is an
  instance of it while ssl.py has never run; once the real module is loaded (by anyone),
  the real class answers;
- `__path__`: `ssl` is no package (`from ssl import X` asks).
Anything else (`create_default_context`, `MemoryBIO`, `SSLContext` after the imports, …)
loads the real module first, so TLS through asyncio and anyio works as it always did.
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


def import_asyncio_without_ssl() -> None:
    """Import `asyncio` and anyio's asyncio backend with `ssl` loaded on first use (see the
    module's docstring). Call it first thing, before anything imports `asyncio` and before
    the process starts a thread; does nothing when `asyncio` or `ssl` is already imported."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    stand_in = SslOnFirstUse()
    sys.modules["ssl"] = stand_in
    stand_in.__dict__["_importing"] = True
    try:
        import asyncio  # noqa: F401 (imported now, with the stand-in)

        import anyio._backends._asyncio  # noqa: F401 (what anyio.run imports first)
    finally:
        stand_in.__dict__["_importing"] = False
        if sys.modules.get("ssl") is stand_in:
            del sys.modules["ssl"]


class SslOnFirstUse(ModuleType):
    """`ssl` as the modules imported with it see it until they use it."""

    def __init__(self) -> None:
        super().__init__("ssl", "ssl, loaded on first use (louise.storage.first_use)")
        # One class per name, so that the real module's can replace each where it is held.
        self.__dict__["_unloaded"] = {}
        self.__dict__["_importing"] = False

    def __repr__(self) -> str:  # ModuleType's reads __file__: it would load the module
        return "<module 'ssl' (loaded on first use)>"

    def __getattr__(self, name: str) -> Any:
        if name == "__path__":
            raise AttributeError(name)
        loaded = sys.modules.get("ssl")
        if loaded is None or loaded is self:
            if name in ANSWERED_UNTIL_LOADED or (
                    name in ANSWERED_WHILE_IMPORTING and self.__dict__["_importing"]):
                return self._unloaded_class(name)
        return getattr(self.load(), name)

    def _unloaded_class(self, name: str) -> type:
        made: dict[str, type] = self.__dict__["_unloaded"]
        cls = made.get(name)
        if cls is None:
            base: type = Exception if name.endswith("Error") else object
            cls = made[name] = type(name, (base,), {
                "__module__": __name__,
                "__doc__": f"ssl.{name} while the ssl module is not loaded: nothing is one"})
        return cls

    def load(self) -> ModuleType:
        """The real `ssl`, imported now if it is not yet, and put in place of this stand-in
        (and of the classes it answered for) in every module that holds them."""
        if sys.modules.get("ssl") is self:
            del sys.modules["ssl"]
        import ssl

        made: dict[str, type] = self.__dict__["_unloaded"]
        stand_ins = set(map(id, made.values()))

        def real(value: object) -> object:
            if value is self:
                return ssl
            if isinstance(value, type) and id(value) in stand_ins:
                return getattr(ssl, value.__name__)
            if type(value) is tuple and any(id(item) in stand_ins for item in value):
                return tuple(real(item) for item in value)
            return value

        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None) if isinstance(module, ModuleType) \
                else None
            if module is self or not isinstance(namespace, dict) \
                    or not any(value is self for value in list(namespace.values())):
                continue
            for key, value in list(namespace.items()):
                replaced = real(value)
                if replaced is not value:
                    namespace[key] = replaced
        return ssl
