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
