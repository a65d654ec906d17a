"""Registry events (besides the session events of `louise.session`) and the emitter that
hands every event to subscribers, in order."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from louise import limits as lim
from louise.permissions.broker import PermissionRequest
from louise.session import Event, StatusChanged

log = logging.getLogger("louise.registry")


@dataclass(slots=True)
class SessionAdded(Event):
    """A session was opened or loaded."""

    agent: str
    cwd: str


@dataclass(slots=True)
class SessionRemoved(Event):
    """A session was closed."""

    agent: str


@dataclass(slots=True)
class PromptQueueChanged(Event):
    """The session's queued prompts, in order: `{id, text, context}` each (text bounded)."""

    items: tuple[dict[str, Any], ...]


@dataclass(slots=True)
class SessionParked(Event):
    """A turn refused for quota waits for the reset (`until`, Unix seconds; `known`:
    the agent's own reset time, else louise's next try), its prompt and the queue kept."""

    until: float
    known: bool
    reason: str


@dataclass(slots=True)
class SessionUnparked(Event):
    """The park ended: `resend` (at the reset), `cancelled` or `unparked` (undone)."""

    outcome: str


@dataclass(frozen=True, slots=True)
class LimitsChanged:
    """An Agent's account limits changed."""

    agent: str
    state: lim.LimitsState


@dataclass(frozen=True, slots=True)
class PermissionQueueChanged:
    """The permission requests waiting for the person, in order."""

    pending: tuple[PermissionRequest, ...]


@dataclass(frozen=True, slots=True)
class AgentStatus:
    """A line about an Agent's process: started, exited (with reason), auth required."""

    agent: str
    state: Literal["starting", "running", "exited", "failed"]
    message: str = ""

    def headline(self) -> str:
        """One line for a person: "claude exited: claude-agent-acp (exit status 1)", the
        state said once (the reason often begins with it: "the agent exited: …")."""
        first = self.message.strip().split("\n", 1)[0][:200]
        for said in (f"the agent {self.state}: ", f"the agent {self.state}",
                     f"{self.state}: "):
            if first.startswith(said):
                first = first[len(said):].strip()
                break
        return f"{self.agent} {self.state}: {first}" if first else f"{self.agent} {self.state}"


@dataclass(frozen=True, slots=True)
class SignInWaiting:
    """A sign-in to the Agent is under way (`waiting`: the person is asked, or its command
    runs), or over: its chats say so instead of `ready`."""

    agent: str
    waiting: bool


RegistryEvent = Event | LimitsChanged | PermissionQueueChanged | AgentStatus | SignInWaiting
Listener = Callable[[RegistryEvent], None]
StatusHook = Callable[[StatusChanged], None]


class Emitter:
    """Subscribers get every event in order, on the engine loop; a failing subscriber is
    logged and skipped. Status changes also reach the registry's own hooks (limits)."""

    def __init__(self) -> None:
        # Each listener with the event types it takes (None: every event), in order.
        self._subscribed: tuple[tuple[Listener, tuple[type, ...] | None], ...] = ()
        # The listeners an event type reaches, in order (made on its first emit): a
        # streamed chunk's event calls only those that take it.
        self._reached: dict[type, tuple[Listener, ...]] = {}
        self._status_hooks: tuple[StatusHook, ...] = ()

    def subscribe(self, listener: Listener,
                  types: tuple[type, ...] | None = None) -> Callable[[], None]:
        """`listener` gets every event, or with `types` only events of those types."""
        self._subscribed = (*self._subscribed, (listener, types))
        self._reached = {}

        def unsubscribe() -> None:
            self._subscribed = tuple(x for x in self._subscribed if x[0] is not listener)
            self._reached = {}

        return unsubscribe

    def _listeners_of(self, kind: type) -> tuple[Listener, ...]:
        reached = tuple(listener for listener, types in self._subscribed
                        if types is None or issubclass(kind, types))
        self._reached[kind] = reached
        return reached

    def on_status(self, hook: StatusHook) -> None:
        self._status_hooks = (*self._status_hooks, hook)

    def emit(self, event: RegistryEvent) -> None:
        kind = type(event)
        listeners = self._reached.get(kind)
        if listeners is None:
            listeners = self._listeners_of(kind)
        for listener in listeners:  # a tuple: (un)subscribing replaces it
            try:
                listener(event)
            except Exception:
                log.exception("registry listener failed on %s", type(event).__name__)

    def emit_all(self, events: Sequence[RegistryEvent]) -> None:
        for event in events:
            self.emit(event)
            if isinstance(event, StatusChanged):
                for hook in self._status_hooks:
                    hook(event)
