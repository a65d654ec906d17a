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

# Lua's key of a placeholder chat (lua/louise/chat/starting.lua M.PREFIX).
PLACEHOLDER_PREFIX = "starting:"


class Chats:
    def __init__(self, screen: Screen, renderer: ChatRenderer,
                 registry: SessionRegistry) -> None:
        self._screen = screen
        self._renderer = renderer
        self._registry = registry
        self._current: dict[str, str] = {}  # agent -> last focused session key
        self._last_key: str | None = None
        self._placeholders_used: set[int] = set()

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

    def open(self, session: Session, focus: bool = True, pending: int | None = None) -> None:
        """Show the chat of `session` (focused); `pending`: the placeholder Lua showed while
        its agent started, which becomes this chat."""
        self._current[session.agent] = session.session_id
        self._last_key = session.session_id
        if pending is not None:
            self._placeholders_used.add(pending)
        self._screen.outbox.open.put(
            OpenChat(session.session_id, session.agent, focus, pending))
        self._renderer.attach(session.session_id)
        self._screen.mark()

    def settle_placeholder(self, pending: int | None) -> None:
        """A command that had Lua show a placeholder is over: one no session took is
        dropped like a closed chat (a picker, a chat already open, an error)."""
        if pending is None:
            return
        if pending in self._placeholders_used:
            self._placeholders_used.discard(pending)
            return
        self._screen.outbox.chat_closed(f"{PLACEHOLDER_PREFIX}{pending}")
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
