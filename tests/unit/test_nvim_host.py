"""`EngineHost`: the engine's loop in its own thread, and a stop that waits for teardown."""

from __future__ import annotations

import threading

import anyio

from louise.nvim.host import EngineHost


def test_stop_waits_for_a_teardown_longer_than_five_seconds() -> None:
    """Agents' grace, the transcript fsync and the cache lock can take more than the 5 s
    stop() used to wait; returning earlier let the process exit mid-write."""
    host = EngineHost()
    written = threading.Event()

    async def main() -> None:
        host.ready()
        await host.stopped()
        with anyio.CancelScope(shield=True):
            await anyio.sleep(6.0)  # a slow final write
            written.set()

    assert host.start(main)
    host.stop()
    assert written.is_set(), "stop() returned before the final write finished"


def test_stop_is_bounded_when_teardown_never_ends() -> None:
    host = EngineHost()
    release = threading.Event()

    async def main() -> None:
        host.ready()
        await host.stopped()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(release.wait)

    assert host.start(main)
    host.stop(timeout=0.5)  # returns although teardown is stuck
    release.set()
