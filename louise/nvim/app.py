"""louise's Python process inside Neovim: started by the Lua side with
`jobstart({python, '-m', 'louise.nvim'}, {rpc = true})`.

The channel to Neovim (the job's stdio, `stdio.py`: msgpack-RPC without pynvim) is read
on its own thread, which only forwards: Lua sends notifications (`louise`, [command,
args]), the engine thread does the work and renders back. The main
thread waits for the first request to leave (`ExitRequests`: Lua's stop on VimLeavePre,
SIGTERM, or Neovim's channel closing), stops the engine by that request's deadline (the
engine's teardown owns the budget, `SessionRegistry.aclose`) and exits, long before
Neovim's SIGKILL 2 s after its SIGTERM.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import select
import signal
import sys
import threading
import time
from typing import Any

from louise.nvim import early_agent
from louise.nvim.bridge import Fallback, PynvimCalls, UiBridge
from louise.nvim.engine import Engine
from louise.nvim.host import EXIT_BUDGET_SECONDS, MAX_EXIT_BUDGET_SECONDS
from louise.nvim.stdio import RequestError, StdioNeovim
from louise.storage import code_cache, module_places

log = logging.getLogger("louise.nvim")

STOP_NOTIFICATION = "louise_stop"  # from lua/louise/engine.lua on VimLeavePre


def _setup_logging() -> None:
    level = os.environ.get("LOUISE_LOG", "WARNING").upper()
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level, logging.WARNING),
                        format="louise: %(levelname)s %(name)s: %(message)s")


# What the engine's start asks of Neovim, in one round trip: setup{}'s options for the
# engine and Neovim's server socket (for the engine's own channel, bridge.py).
START_LUA = "return { require('louise').engine_opts(), vim.v.servername }"
READY_LUA = "require('louise.engine').on_ready(...)"


def server_address(address: Any) -> str | None:
    """Neovim's server socket (`v:servername`), for the engine's own channel; None when it
    has none that is a local socket (the engine then calls through the process's)."""
    if isinstance(address, str) and address.startswith("/") and os.name == "posix":
        return address
    return None


def engine_for(answer: Any, fallback: Fallback) -> Engine:
    """The engine for START_LUA's answer, started."""
    opts, address = [*answer, None, None][:2] if isinstance(answer, list) \
        else (None, None)
    engine = Engine(UiBridge(fallback, server_address(address)),
                    opts if isinstance(opts, dict) else {})
    engine.start()
    return engine


def start_engine(nvim: Any) -> Engine:
    """The remote-plugin host's start (rplugin/python3/louise_rplugin.py, through pynvim):
    start the engine for this Neovim and tell the Lua side it is ready (and on which
    channel: the classic host shares its channel with other plugins)."""
    engine = engine_for(nvim.exec_lua(START_LUA), PynvimCalls(nvim))
    nvim.exec_lua(READY_LUA, os.getpid(), nvim.channel_id, async_=True)
    return engine


class ExitRequests:
    """The first request to leave wins: Lua's `louise_stop` on VimLeavePre (with its
    budget), SIGTERM (Neovim's teardown, `jobstop()`), or the end of Neovim's channel (it
    crashed). Each gives the deadline, on `time.monotonic()`, by which the engine is down.

    The main thread waits on a pipe, not on a lock: a signal the kernel hands to another
    thread (any thread may get a process's SIGTERM) only marks Python's handler as due,
    and a main thread asleep on a lock would never run it. The pipe is also the signal
    wake-up descriptor, so such a signal wakes the main thread, which runs the handler."""

    def __init__(self) -> None:
        self._deadlines: queue.SimpleQueue[float] = queue.SimpleQueue()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)

    def wake_on_signals(self) -> None:
        """From the main thread, before installing the handlers."""
        signal.set_wakeup_fd(self._wake_write, warn_on_full_buffer=False)

    def request(self, budget: float = EXIT_BUDGET_SECONDS) -> None:
        """Safe in a signal handler (`SimpleQueue.put` is reentrant)."""
        self._deadlines.put(time.monotonic() + min(max(budget, 0.0), MAX_EXIT_BUDGET_SECONDS))
        with contextlib.suppress(OSError):  # full: the main thread has a wake-up waiting
            os.write(self._wake_write, b"\0")

    def wait(self) -> float:
        while True:
            try:
                return self._deadlines.get_nowait()
            except queue.Empty:
                pass
            select.select([self._wake_read], [], [])
            with contextlib.suppress(OSError):
                os.read(self._wake_read, 512)


def stop_budget(args: list[Any]) -> float:
    """The budget of a `louise_stop` notification: [milliseconds], else the default."""
    if args and isinstance(args[0], int | float) and not isinstance(args[0], bool):
        return min(max(float(args[0]) / 1000, 0.0), MAX_EXIT_BUDGET_SECONDS)
    return EXIT_BUDGET_SECONDS


def serve_neovim(engines: list[Engine], exits: ExitRequests) -> None:
    """The channel's thread: start the engine, forward Lua's commands until Neovim asks
    louise to stop or closes the channel. Not the main thread, which waits for the exit
    request (and runs the signal handlers)."""
    try:
        nvim = StdioNeovim()
        engines.append(engine_for(nvim.call_lua(START_LUA), nvim))
        # No channel id: Lua's is the job's own (jobstart's), this very channel.
        nvim.notify_lua(READY_LUA, os.getpid())

        def on_request(name: str, args: list[Any]) -> Any:
            if name == "ping":
                return "pong"
            raise RequestError(f"louise: unknown request {name!r}")

        def on_notification(name: str, args: list[Any]) -> None:
            if name == STOP_NOTIFICATION:
                exits.request(stop_budget(args))
            elif name == "louise" and args:
                command = str(args[0])
                payload = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
                engines[0].submit(command, payload)

        nvim.run_loop(on_request, on_notification)
    except (EOFError, OSError):
        pass  # Neovim closed the channel: normal on :qa, or it crashed
    except Exception as exc:  # one line, never a traceback (it would reach :LouiseLog)
        log.warning("the channel to Neovim ended: %s", exc)
    finally:
        exits.request()


def main() -> int:
    _setup_logging()
    exits = ExitRequests()
    exits.wake_on_signals()
    signal.signal(signal.SIGTERM, lambda signum, frame: exits.request())
    # Started by Neovim in its own session, louise gets no terminal's Ctrl-C; a stray
    # SIGINT changes nothing (a handler, not SIG_IGN, which agents would inherit).
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    engines: list[Engine] = []
    threading.Thread(target=serve_neovim, args=(engines, exits), name="louise-channel",
                     daemon=True).start()
    # The start's modules are imported: their dataclasses' compiled methods are kept for
    # the next start (when something new was compiled; code_cache.py), then dropped.
    code_cache.finish("engine")
    module_places.finish("engine")  # and where its modules were found (module_places.py)
    deadline = exits.wait()
    if engines:
        engines[0].stop(deadline)
    early_agent.stop_started()  # the engine never got as far as taking it
    # Daemon threads and agent children must not keep an orphan alive.
    os._exit(0)
