"""The chats Neovim shows: opening one (and focusing it), which one is the last and which
is each Agent's current one (what :LouiseChat reopens), and a chat gone (closed or its
session deleted): its renderer state and its terminals forgotten, Lua told."""

from __future__ import annotations

from louise.nvim.outbox import OpenChat
from louise.nvim.render import ChatRenderer
from louise.nvim.screen import Screen
from louise.registry import SessionRegistry
from louise.registry.records import RegistryError
from louise.session import Session


class Chats:
    def __init__(self, screen: Screen, renderer: ChatRenderer,
                 registry: SessionRegistry) -> None:
        self._screen = screen
        self._renderer = renderer
        self._registry = registry
        self._current: dict[str, str] = {}  # agent -> last focused session key
        self._last_key: str | None = None

    def lookup(self, key: str) -> Session | None:
        try:
            return self._registry.session(key)
        except RegistryError:
            return None

    def last(self) -> Session | None:
        return self.lookup(self._last_key) if self._last_key is not None else None

    def current(self, agent: str) -> Session | None:
        key = self._current.get(agent)
        return self.lookup(key) if key is not None else None

    def open(self, session: Session, focus: bool = True) -> None:
        self._current[session.agent] = session.session_id
        self._last_key = session.session_id
        self._screen.outbox.open.put(OpenChat(session.session_id, session.agent, focus))
        self._renderer.attach(session.session_id)
        self._screen.mark()

    def show(self, key: str) -> None:
        """A chat window shows the session again (it is sent whole)."""
        if self.lookup(key) is not None:
            self._renderer.attach(key)
            self._screen.mark()

    def shown(self, key: str) -> bool:
        """Whether a window shows the chat (what it says, the person sees)."""
        return self._renderer.shown(key)

    def hide(self, key: str) -> None:
        self._renderer.detach(key)

    def forget(self, key: str) -> None:
        """A session is closing: "last" and "current" fall back to the newest other open
        one (so :LouiseChat reopens it instead of starting a new session)."""
        others = [s for s in self._registry.sessions()
                  if s.session_id != key and s.status != "closed"]
        if self._last_key == key:
            self._last_key = others[-1].session_id if others else None
        for agent, current in list(self._current.items()):
            if current == key:
                mine = [s for s in others if s.agent == agent]
                if mine:
                    self._current[agent] = mine[-1].session_id
                else:
                    del self._current[agent]

    def gone(self, key: str) -> None:
        """The chat is over: Lua drops its buffer and terminals, louise their state."""
        self._renderer.forget(key)
        self._screen.outbox.chat_closed(key)
        self._screen.mark()
