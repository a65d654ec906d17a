"""`EngineHost`: the engine's loop in its own thread, and a stop that waits for teardown."""

from __future__ import annotations

import inspect
import threading

import anyio

from louise.limits_cache import DEFAULT_LOCK_TIMEOUT
from louise.nvim.host import STOP_TIMEOUT_SECONDS, EngineHost
from louise.registry import SessionRegistry


def test_stop_waits_until_the_teardown_has_finished() -> None:
    """stop() returns only after `main` tore down: the teardown holds until the test has
    seen stop() waiting for it, so the order is the proof, not a duration."""
    host = EngineHost()
    tearing_down, release = threading.Event(), threading.Event()
    order: list[str] = []

    async def main() -> None:
        host.ready()
        await host.stopped()
        with anyio.CancelScope(shield=True):
            tearing_down.set()
            await anyio.to_thread.run_sync(release.wait)  # a slow final write
            order.append("written")

    def stop() -> None:
        host.stop()
        order.append("stop returned")

    assert host.start(main)
    stopper = threading.Thread(target=stop)
    stopper.start()
    assert tearing_down.wait(30)
    release.set()
    stopper.join(30)
    assert order == ["written", "stop returned"], "stop() returned before the final write"


def test_the_stop_budget_outlasts_every_part_of_the_teardown() -> None:
    """Agents' grace, the transcript fsync and the cross-process cache lock (up to its
    timeout) can take more than the 5 s stop() used to wait; returning earlier let the
    process exit mid-write."""
    grace = inspect.signature(SessionRegistry).parameters["grace_seconds"].default
    assert grace + DEFAULT_LOCK_TIMEOUT < STOP_TIMEOUT_SECONDS


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
