"""louise's Python process inside Neovim: started by the Lua side with
`jobstart({python, '-m', 'louise.nvim'}, {rpc = true})`.

pynvim's loop runs on the main thread and only forwards: Lua sends notifications
(`louise`, [command, args]), the engine thread does the work and renders back.
When Neovim goes away (channel closed), the process stops its agents and exits.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from typing import Any

import pynvim

from louise.nvim.bridge import UiBridge
from louise.nvim.engine import Engine

log = logging.getLogger("louise.nvim")


def _setup_logging() -> None:
    level = os.environ.get("LOUISE_LOG", "WARNING").upper()
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level, logging.WARNING),
                        format="louise: %(levelname)s %(name)s: %(message)s")


def server_address(nvim: Any) -> str | None:
    """Neovim's server socket, for the engine's own channel (bridge.py); None when it has
    none that is a local socket (the engine then calls through pynvim)."""
    try:
        address = nvim.vvars.get("servername")
    except Exception:  # an old Neovim, a broken channel: pynvim's path still works
        return None
    if isinstance(address, str) and address.startswith("/") and os.name == "posix":
        return address
    return None


def start_engine(nvim: Any) -> Engine:
    """Start the engine for this Neovim and tell the Lua side it is ready (and on which
    channel: the classic remote-plugin host shares its channel with other plugins)."""
    opts: Any = nvim.exec_lua("return require('louise').engine_opts()")
    engine = Engine(UiBridge(nvim, server_address(nvim)), opts if isinstance(opts, dict) else {})
    engine.start()
    nvim.exec_lua("require('louise.engine').on_ready(...)", os.getpid(), nvim.channel_id,
                  async_=True)
    return engine


def main() -> int:
    _setup_logging()
    nvim = pynvim.attach("stdio")
    engine = start_engine(nvim)
    # `python -m louise.nvim` loads with the collector off; on again now that the engine
    # runs (it freezes what start-up made once it is configured, engine.py).
    gc.enable()

    def on_request(name: str, args: list[Any]) -> Any:
        if name == "ping":
            return "pong"
        raise pynvim.ErrorResponse(f"louise: unknown request {name!r}")

    def on_notification(name: str, args: list[Any]) -> None:
        if name == "louise" and args:
            command = str(args[0])
            payload = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
            engine.submit(command, payload)

    try:
        nvim.run_loop(on_request, on_notification)
    except (EOFError, OSError):
        pass  # Neovim closed the channel: normal on :qa
    except Exception as exc:  # pynvim re-raises "Received signal …" on SIGTERM
        if "signal" not in str(exc).lower():
            raise
    finally:
        engine.stop()
    # Daemon threads and agent children must not keep an orphan alive.
    os._exit(0)
