"""louise loaded the classic way, through Neovim's Python remote-plugin host
(`:UpdateRemotePlugins`, `setup{host = 'rplugin'}`). The default is the detached process
that the Lua side starts itself (see louise/nvim/app.py); both run the same engine.
"""

from __future__ import annotations

from typing import Any

import pynvim


@pynvim.plugin
class LouiseRplugin:
    def __init__(self, nvim: Any) -> None:
        self.nvim = nvim
        self.engine: Any = None

    @pynvim.function("LouiseRpluginStart", sync=False)
    def start(self, args: list[Any]) -> None:
        if self.engine is None:
            from louise.nvim.app import start_engine

            self.engine = start_engine(self.nvim)

    @pynvim.rpc_export("louise", sync=False)
    def on_command(self, command: str, args: Any = None) -> None:
        if self.engine is not None:
            self.engine.submit(str(command), args if isinstance(args, dict) else {})

    @pynvim.rpc_export("louise_stop", sync=True)
    def on_stop(self, budget_ms: Any = None) -> None:
        """VimLeavePre (lua/louise/engine.lua): stop within the exit budget, then answer."""
        if self.engine is not None:
            import time

            from louise.nvim.app import stop_budget

            self.engine.stop(time.monotonic() + stop_budget([budget_ms]))

    @pynvim.shutdown_hook
    def stop(self) -> None:
        if self.engine is not None:
            self.engine.stop()
