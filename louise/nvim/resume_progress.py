""":LouiseResume's word while several Agents list their sessions: one line, said again as
each Agent's listing ends and every second meanwhile ("… listing sessions: claude done,
codex starting 4s"), so a person waiting on an agent that starts slowly sees which one.
The line is pure (`ListingProgress.line`); `ListingProgress.tick` says it on a screen."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import anyio

from louise.nvim.screen import Screen
from louise.registry.agent_sessions import AgentListing

TICK_SECONDS = 1.0
# Each progress line replaces the one before it (a notification plugin updates one
# notice: `vim.notify`'s `id`).
NOTICE_ID = "louise-resume-progress"


class ListingProgress:
    def __init__(self, agents: Sequence[str], starting: Sequence[str],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._agents = list(agents)
        self._starting = set(starting)
        self._clock = clock
        self._since = clock()
        self._ended: dict[str, str] = {}  # agent -> "done" or "failed"

    @property
    def over(self) -> bool:
        return len(self._ended) == len(self._agents)

    def listed(self, listing: AgentListing) -> None:
        self._ended[listing.agent] = "failed" if listing.error else "done"

    def line(self) -> str:
        """`louise: … listing sessions: claude done, codex starting 4s`."""
        took = f"{max(0, int(self._clock() - self._since))}s"
        parts = []
        for agent in self._agents:
            ended = self._ended.get(agent)
            if ended is not None:
                parts.append(f"{agent} {ended}")
            else:
                parts.append(f"{agent} {'starting' if agent in self._starting else 'listing'}"
                             f" {took}")
        return f"louise: … listing sessions: {', '.join(parts)}"

    def say(self, screen: Screen) -> None:
        screen.notify(self.line(), "info", NOTICE_ID)

    async def tick(self, screen: Screen) -> None:
        """Say the line every second until every listing ended (cancelled by the caller
        then too)."""
        while not self.over:
            await anyio.sleep(TICK_SECONDS)
            if not self.over:
                self.say(screen)
