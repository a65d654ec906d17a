"""`EngineHost`: the engine's loop in its own thread, and a stop that waits for teardown."""

from __future__ import annotations

import inspect
import threading

import anyio

from louise.nvim.host import STOP_TIMEOUT_SECONDS, EngineHost
from louise.registry import SessionRegistry
from louise.storage.limits_cache import DEFAULT_LOCK_TIMEOUT


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


def test_stop_does_not_cancel_the_teardown_of_main() -> None:
    """stop() cancels the commands running in the portal, not `main`: its teardown still
    needs the tasks it owns (the agents' readers, to read their answers to
    `session/close`). Cancelled, the teardown hung until Neovim's SIGKILL."""
    host = EngineHost()
    torn_down = threading.Event()

    async def main() -> None:
        reader_ticks = 0

        async def reader() -> None:
            nonlocal reader_ticks
            while True:
                await anyio.sleep(0.01)
                reader_ticks += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            host.ready()
            await host.stopped()
            seen = reader_ticks
            with anyio.fail_after(10):
                while reader_ticks < seen + 3:  # an answer read after the stop
                    await anyio.sleep(0.01)
            torn_down.set()
            tg.cancel_scope.cancel()

    assert host.start(main)
    host.stop(timeout=30)
    assert torn_down.is_set(), "main's teardown was cancelled by stop()"
