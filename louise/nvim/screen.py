"""The way every part of the engine reaches Neovim: UI work put into the outbox, and the
next frame marked to carry it (once per frame, however much is put). Pure."""

from __future__ import annotations

from collections.abc import Callable

from louise.nvim.outbox import Outbox, VimNotice


class Screen:
    def __init__(self, outbox: Outbox, mark: Callable[[], None]) -> None:
        self.outbox = outbox
        self.mark = mark

    def notify(self, message: str, level: str = "info", replaces: str | None = None) -> None:
        """One line for the person (`vim.notify`); bounded per frame by the outbox.
        `replaces`: an id the line shares with the one it updates (a progress line)."""
        self.outbox.notify.put(VimNotice(message, level, replaces))
        self.mark()
