"""`asyncio` imported without `ssl`: the real `ssl` loads when something first uses it.

`asyncio` imports `ssl` (in `base_events`, `selector_events` and `sslproto`) for its TLS
transports. louise's processes talk over pipes and Unix sockets, never TLS, and `ssl` is
~25 ms of CPU and ~6 MiB at every start (ssl.py's enums, OpenSSL's set-up): a sixth of
the Neovim engine's imports. `import_asyncio_without_ssl` imports `asyncio` with a stand-in
for `ssl` in `sys.modules`, then takes the stand-in out again: any later `import ssl`
anywhere gets the real module, and `asyncio`'s modules keep the stand-in, which loads the
real module when they first use it and puts it in their place.

What asyncio asks of `ssl` before any TLS is used is answered without loading it:
- `SSLSocket`, in `_check_ssl_socket` (every `loop.sock_*` call, the Unix socket connects):
  nothing is an instance of it while ssl.py has never run. Once the real module is loaded
  (by anyone), the real class answers.
- `SSLWantReadError` and `SSLSyscallError`, read when `sslproto` is imported (its
  `SSLAgainErrors`, caught only inside a TLS transport, which the real module makes): the
  tuple is rebuilt from the real classes when the real module loads, before any transport.
Anything else asyncio asks for (`create_default_context`, `MemoryBIO`, `SSLContext`, …)
loads the real module first, so TLS through asyncio works as it always did.
"""

from __future__ import annotations

import sys
from types import ModuleType

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from typing import Any

# Answered without loading ssl while nothing has loaded it (see the module's docstring).
UNLOADED_ANSWERS = frozenset({"SSLSocket", "SSLWantReadError", "SSLSyscallError"})


def import_asyncio_without_ssl() -> None:
    """Import `asyncio` with `ssl` loaded on first use (see the module's docstring). Call
    it before anything imports `asyncio`; does nothing when `asyncio` or `ssl` is
    already imported."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    stand_in = SslOnFirstUse()
    sys.modules["ssl"] = stand_in
    try:
        import asyncio  # noqa: F401 (imported now, with the stand-in)
    finally:
        if sys.modules.get("ssl") is stand_in:
            del sys.modules["ssl"]


class SslOnFirstUse(ModuleType):
    """`ssl` as the modules imported with it see it until they use it."""

    def __init__(self) -> None:
        super().__init__("ssl", "ssl, loaded on first use (louise.storage.first_use)")
        # One class per name, so that the real module's can replace each where it is held.
        self.__dict__["_unloaded"] = {}

    def __repr__(self) -> str:  # ModuleType's reads __file__: it would load the module
        return "<module 'ssl' (loaded on first use)>"

    def __getattr__(self, name: str) -> Any:
        loaded = sys.modules.get("ssl")
        if name in UNLOADED_ANSWERS and (loaded is None or loaded is self):
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
