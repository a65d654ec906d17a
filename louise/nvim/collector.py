"""The cyclic garbage collector in louise's Neovim process, set in one place.

Off while the engine's modules load: importing makes hundreds of thousands of objects and
little garbage (the passes were ~15 % of the import time). Once the engine is configured,
what was imported and configured lives as long as the process: it is frozen out of the
collector's way and the collector runs again. Each full collection walked all of it
(pydantic's schemas first): a third of louise's CPU in a 10,000-chunk burst
(bench/stream.py). No collection before the freeze: it took 20-35 ms of the first chat's
start, for the little garbage the imports leave.
"""

from __future__ import annotations

import gc


def paused_for_imports() -> None:
    """`python -m louise.nvim`, before anything else is imported."""
    gc.disable()


def engine_configured() -> None:
    """The engine's configuration and registry are made: the rest of the process's life."""
    gc.freeze()
    gc.enable()
