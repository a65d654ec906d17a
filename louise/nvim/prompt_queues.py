"""Each chat's visible prompt queue in Neovim (`chat/queue.lua`): the prompts waiting for
the running turn, and whether the agent takes steering; the shown queues are kept so a
full render sends them again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from louise.nvim.screen import Screen
from louise.registry.events import PromptQueueChanged
from louise.session import Session


class PromptQueues:
    def __init__(self, screen: Screen, lookup: Callable[[str], Session | None],
                 steering: Callable[[str], bool]) -> None:
        self._screen = screen
        self._lookup = lookup
        self._steering = steering  # whether an Agent takes steering
        self._shown: dict[str, dict[str, Any]] = {}  # non-empty queues, for a resync

    def changed(self, event: PromptQueueChanged) -> None:
        session = self._lookup(event.session_id)
        steer = session is not None and self._steering(session.agent)
        queue = {"items": list(event.items), "steer": steer}
        if event.items:
            self._shown[event.session_id] = queue
        else:
            self._shown.pop(event.session_id, None)
        self._screen.outbox.prompt_queue.put(event.session_id, queue)
        self._screen.mark()

    def resend(self) -> None:
        for key, queue in self._shown.items():
            self._screen.outbox.prompt_queue.put(key, queue)
