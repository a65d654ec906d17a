"""What `python -m louise.nvim` does before the engine runs: the engine's modules imported
with the collector paused, the dataclasses' compiled methods from the code cache, and
what the start does not use left out (louise/storage/first_use.py). One function, so that
a test imports exactly what the process imports."""

from __future__ import annotations

from types import ModuleType


def load_engine() -> ModuleType:
    """The engine's modules imported as its process imports them: `louise.nvim.app`. Call
    it first thing in the process, before anything else is imported or a thread starts."""
    from louise.storage import module_places

    module_places.install("engine")  # where the start's modules are: no search for them
    from louise.nvim import early_agent

    # The first chat's agent, when Lua named it: its start overlaps the imports below.
    early_agent.start_from_environment()
    from louise.nvim import collector

    collector.paused_for_imports()  # before the engine's modules load (collector.py says why)
    from louise.storage import code_cache

    code_cache.install("engine")  # before the ~200 dataclasses of the engine's modules
    from louise.storage import first_use

    first_use.import_asyncio_without_ssl()  # before pynvim imports asyncio: no TLS, ever
    # pydantic, when first used, without secrets (hashlib's OpenSSL) and, unless a plugin
    # is installed, the plugin loader; not now: a cached configuration needs no pydantic
    first_use.pydantic_without_extras_on_first_use()
    import louise.nvim.app

    return louise.nvim.app
