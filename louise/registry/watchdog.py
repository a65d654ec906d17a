"""The prompt-inactivity watchdog: a `session/prompt` whose agent shows no life for the
idle timeout is cancelled, then abandoned. Split out of `turns.py` (module size rule)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from louise.acp.connection import AgentConnection
from louise.acp.errors import RpcError
from louise.registry.records import LiveSession

log = logging.getLogger("louise.registry")


async def _until_idle(live: LiveSession, timeout: float) -> None:
    """Return once the agent has shown no life for `timeout` seconds, not counting time
    while a request of its waits on the person or on louise (`live.busy`)."""
    while True:
        quiet = time.monotonic() - live.last_activity
        if live.busy == 0 and quiet >= timeout:
            return
        await anyio.sleep(timeout if live.busy else max(timeout - quiet, 0.01))


async def watched_prompt(live: LiveSession, connection: AgentConnection,
                         blocks: list[dict[str, Any]], idle_timeout: float, *,
                         cancel: Callable[[str], Awaitable[None]], grace_seconds: float
                         ) -> tuple[dict[str, Any], bool]:
    """`session/prompt` under the inactivity watchdog: when the agent shows no life for
    `idle_timeout` seconds (nothing waits on the person or on louise meanwhile), the
    turn is cancelled (`session/cancel`), given the grace period to answer, then
    abandoned (`$/cancel_request`). Returns (the reply or {}, whether it went idle)."""
    if idle_timeout <= 0:
        return await connection.prompt(live.acp_id, blocks), False
    live.touch()
    result: dict[str, Any] = {}
    failure: BaseException | None = None
    idle = False
    replied = anyio.Event()

    async def watch(scope: anyio.CancelScope) -> None:
        nonlocal idle
        await _until_idle(live, idle_timeout)
        idle = True
        log.info("%s: no progress for %g s; cancelling the turn", live.agent, idle_timeout)
        await cancel(live.session_id)  # a no-op when the person already cancelled
        with anyio.move_on_after(grace_seconds):
            await replied.wait()
        scope.cancel()  # no reply: abandon the request

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch, tg.cancel_scope)
        try:
            result = await connection.prompt(live.acp_id, blocks)
        except Exception as exc:  # re-raised below, outside the task group
            failure = exc
        replied.set()
        if not idle:
            tg.cancel_scope.cancel()
        else:
            await anyio.sleep_forever()  # until the watcher is done
    if failure is not None and not (idle and isinstance(failure, RpcError)):
        raise failure
    return result, idle
