"""Agent terminals on their way to Neovim's terminal buffers (the outbox's `term` key).

Each terminal's output goes through its own `TerminalFilter` (nothing but colours, cursor
movement and plain text reaches the emulator), waits in a bounded backlog, and is fed in
slices shared by all terminals: TERMINAL_SLICE_BYTES and TERMINAL_SLICE_LINES per frame,
at most MAX_TERMINALS_PER_FRAME terminals per frame (the others wait for the next one,
in order). Nothing is dropped up to the terminal's limit; a marker says what went past.

Neovim keeps ~150 KB per terminal buffer and ~2 KB per line of its scrollback, so a chat
keeps only its MAX_CHAT_TERMINALS newest terminals and at most MAX_CHAT_TERMINAL_LINES
lines of their output: past either, its oldest terminals are released (their buffers
deleted; `on_release` lets the tool line say so). A chat's terminals go with the chat
(`forget_chat`; Lua deletes their buffers when it closes the chat).

On the wire, per terminal id: `{key, command?, data?, exit?, scrollback?}` (`scrollback`
with the first entry), or `{key, release = true}`. Pure: no pynvim, no anyio.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from louise.nvim.terminal_filter import TerminalFilter

# Terminal output per frame, all terminals together. Neovim's terminal costs per line (a
# full scrollback drops a buffer line for each new one: ~5 us a line here, 0.95 s for a
# 1 MiB frame of short lines, bench/terminal_feed.py), so a slice is bounded in lines as
# well as in bytes: a few ms of Neovim per frame, ~80,000 lines/s at the steady pace.
TERMINAL_SLICE_BYTES = 32 * 1024
TERMINAL_SLICE_LINES = 1000
DEFAULT_TERMINAL_BACKLOG_BYTES = 1024 * 1024  # the default terminal output limit
MAX_BACKLOG_BYTES = 64 * 1024 * 1024  # output waiting for the screen, all terminals
MAX_TERMINALS_PER_FRAME = 256
# What Neovim keeps of a chat's terminals (measured: ~150 KB per terminal buffer, ~20 MB
# for one holding a full 10,000-line scrollback of 80 columns).
MAX_CHAT_TERMINALS = 64
MAX_CHAT_TERMINAL_LINES = 20_000
TERMINAL_SCROLLBACK_LINES = 10_000  # each terminal buffer's 'scrollback'
TERMINAL_COLUMNS = 80  # a longer line takes more than one line of the screen
MAX_RELEASED_IDS = 4096  # remembered so late output cannot bring a released one back


def _new_filter() -> TerminalFilter:
    """The filter's module (its patterns) is imported with an agent's first terminal."""
    from louise.nvim.terminal_filter import TerminalFilter

    return TerminalFilter()


@dataclass(slots=True)
class TerminalFeed:
    """One agent terminal's output on its way to Neovim: its command line first, then its
    output in slices, its exit status last. At most `limit` bytes wait; what arrives past
    that is counted, not kept, and a marker saying so follows the bytes that were kept
    (later output is kept again once the backlog is on screen)."""

    key: str  # the chat's
    limit: int = DEFAULT_TERMINAL_BACKLOG_BYTES
    pending: bytearray = field(default_factory=bytearray)
    command: str | None = None
    exit: dict[str, Any] | None = None
    dropped: int = 0
    cut_by_backlog: bool = False  # cut by MAX_BACKLOG_BYTES rather than by `limit`
    filter: TerminalFilter = field(default_factory=_new_filter)
    shown: bool = False  # Neovim has its buffer
    lines: int = 0  # lines of the screen its output takes in Neovim, up to the scrollback

    @property
    def has_news(self) -> bool:
        return bool(self.pending or self.command is not None or self.exit is not None
                    or self.dropped)

    def append(self, data: bytes, room: int | None = None) -> bytes:
        """Queue `data` (already filtered) within `limit` and `room`; returns what was
        kept."""
        if self.dropped:  # the marker has not been shown yet: keep the order truthful
            self.dropped += len(data)
            return b""
        own = self.limit - len(self.pending)
        space = own if room is None else min(own, room)
        if len(data) <= space:
            self.pending += data
            return data
        cut = _char_boundary(data, max(space, 0))
        self.pending += data[:cut]
        self.dropped = len(data) - cut
        self.cut_by_backlog = space < own
        return data[:cut]

    def take(self, budget: int,
             lines: int = TERMINAL_SLICE_LINES) -> tuple[dict[str, Any], int, int]:
        """This frame's part: the command, at most `budget` bytes and `lines` lines of
        output (cut after a newline, or at least on a character boundary), the marker and
        the exit status once everything before them went out. Returns it and the output
        bytes and lines it used."""
        out: dict[str, Any] = {"key": self.key}
        if self.command is not None:
            out["command"], self.command = self.command, None
        size = min(budget, len(self.pending))
        newlines = 0
        at = self.pending.find(b"\n", 0, size)
        while at >= 0 and newlines < lines:
            newlines += 1
            if newlines == lines:
                size = at + 1
                break
            at = self.pending.find(b"\n", at + 1, size)
        if size < len(self.pending) and newlines < lines:
            newline = self.pending.rfind(b"\n", 0, size)
            size = newline + 1 if newline >= size // 2 else _char_boundary(self.pending, size)
        data = bytes(self.pending[:size])
        del self.pending[:size]
        if not self.pending and self.dropped:
            why = ("the output of all terminals waiting for the screen is bounded"
                   if self.cut_by_backlog
                   else f"more than {self.limit:,} bytes waited for the screen")
            data += (f"\r\n[louise: {self.dropped:,} more bytes of output not shown here: "
                     f"{why}]\r\n").encode()
            self.dropped = 0
        if data:
            out["data"] = data
        if not self.pending and self.exit is not None:
            out["exit"], self.exit = self.exit, None
        return out, size, newlines


def _char_boundary(data: bytes | bytearray, at: int) -> int:
    """`at`, moved back to the start of a UTF-8 character (never splits one)."""
    at = min(at, len(data))
    back = at
    while back > 0 and at - back < 3 and (data[back] if back < len(data) else 0) & 0xC0 == 0x80:
        back -= 1
    return back


def screen_lines(data: bytes) -> int:
    """The lines of Neovim's terminal `data` may take: its newlines, and one more per
    TERMINAL_COLUMNS bytes (a long line wraps)."""
    return data.count(b"\n") + len(data) // TERMINAL_COLUMNS


class Bell:
    """Rung by every outbox slot's change that may leave it with work: while it is silent,
    the outbox has nothing pending without asking each slot (`Outbox.pending`, once a frame
    while a chat streams, ~19 slots). Here, not in outbox.py: the outbox imports this."""

    __slots__ = ("rung",)

    def __init__(self) -> None:
        self.rung = True


class TerminalFeeds:
    """The agent terminals Neovim shows, by terminal id; see the module docstring."""

    def __init__(self, key: str, per_frame: int = MAX_TERMINALS_PER_FRAME,
                 slice_bytes: int = TERMINAL_SLICE_BYTES,
                 slice_lines: int = TERMINAL_SLICE_LINES,
                 max_chat_terminals: int = MAX_CHAT_TERMINALS,
                 max_chat_lines: int = MAX_CHAT_TERMINAL_LINES,
                 max_backlog: int = MAX_BACKLOG_BYTES) -> None:
        self.key = key
        self.per_frame = per_frame
        self.slice_bytes = slice_bytes
        self.slice_lines = slice_lines
        self.max_chat_terminals = max_chat_terminals
        self.max_chat_lines = max_chat_lines
        self.max_backlog = max_backlog
        self.feeds: dict[str, TerminalFeed] = {}  # every terminal kept, by id
        self.chats: dict[str, dict[str, None]] = {}  # chat key -> its terminals, oldest first
        self.chat_lines: dict[str, int] = {}
        self.backlog = 0  # bytes waiting in every feed
        self._news: dict[str, None] = {}  # terminals with something for Neovim, in order
        self._releases: dict[str, str] = {}  # shown terminals to release: id -> chat key
        self._released: dict[str, None] = {}  # bounded, oldest first
        # The engine's: a chat's terminal output limit, and who hears of a release.
        self.limit_for: Callable[[str], int] = lambda key: DEFAULT_TERMINAL_BACKLOG_BYTES
        self.on_release: Callable[[str, str], None] | None = None
        self.bell = Bell()  # rung whenever news or a release waits (the outbox's)

    @property
    def pending(self) -> bool:
        return bool(self._news or self._releases)

    # ------------------------------------------------------------------ events

    def created(self, key: str, terminal_id: str, command: str) -> None:
        feed = self._entry(key, terminal_id)
        if feed is not None:
            feed.command = command
            self._news[terminal_id] = None
            self.bell.rung = True

    def output(self, key: str, terminal_id: str, text: str) -> None:
        feed = self._entry(key, terminal_id)
        if feed is None:
            return
        data = feed.filter.feed(text).encode("utf-8", "replace")
        if not data:
            return
        before = len(feed.pending)
        kept = feed.append(data, max(self.max_backlog - self.backlog, 0))
        self.backlog += len(feed.pending) - before
        self._news[terminal_id] = None
        self.bell.rung = True
        if kept:
            self._count_lines(feed, terminal_id, screen_lines(kept))

    def exited(self, key: str, terminal_id: str, status: dict[str, Any]) -> None:
        feed = self._entry(key, terminal_id)
        if feed is not None:
            feed.exit = status
            self._news[terminal_id] = None
            self.bell.rung = True

    def forget_chat(self, key: str) -> None:
        """The chat closed: its terminals are gone (Lua deletes their buffers itself)."""
        for terminal_id in self.chats.pop(key, {}):
            self._drop(terminal_id)
        self.chat_lines.pop(key, None)

    # ------------------------------------------------------------------ bounds

    def _entry(self, key: str, terminal_id: str) -> TerminalFeed | None:
        """The feed of a terminal, new ones created; None for a released one."""
        feed = self.feeds.get(terminal_id)
        if feed is not None or terminal_id in self._released:
            return feed
        feed = self.feeds[terminal_id] = TerminalFeed(key, self.limit_for(key))
        chat = self.chats.setdefault(key, {})
        chat[terminal_id] = None
        while len(chat) > self.max_chat_terminals:
            self._release(next(iter(chat)))
        return feed

    def _count_lines(self, feed: TerminalFeed, terminal_id: str, lines: int) -> None:
        grown = min(feed.lines + lines, TERMINAL_SCROLLBACK_LINES) - feed.lines
        if grown <= 0:
            return
        feed.lines += grown
        total = self.chat_lines[feed.key] = self.chat_lines.get(feed.key, 0) + grown
        chat = self.chats[feed.key]
        while total > self.max_chat_lines and len(chat) > 1:
            oldest = next(iter(chat))
            if oldest == terminal_id:  # the one being fed stays, however long it is
                break
            self._release(oldest)
            total = self.chat_lines[feed.key]

    def _release(self, terminal_id: str) -> None:
        """Neovim lets go of the terminal (its buffer is deleted) and louise forgets it."""
        feed = self._drop(terminal_id)
        if feed is None:
            return
        chat = self.chats.get(feed.key)
        if chat is not None:
            chat.pop(terminal_id, None)
        if feed.shown:
            self._releases[terminal_id] = feed.key
            self.bell.rung = True
        if self.on_release is not None:
            self.on_release(feed.key, terminal_id)

    def _drop(self, terminal_id: str) -> TerminalFeed | None:
        feed = self.feeds.pop(terminal_id, None)
        self._news.pop(terminal_id, None)
        if feed is not None:
            self.backlog -= len(feed.pending)
            if feed.key in self.chat_lines:
                self.chat_lines[feed.key] -= feed.lines
        self._released[terminal_id] = None
        while len(self._released) > MAX_RELEASED_IDS:
            del self._released[next(iter(self._released))]
        return feed

    # ------------------------------------------------------------------ frames

    def take(self) -> dict[str, Any]:
        budget, lines = self.slice_bytes, self.slice_lines
        out: dict[str, Any] = {}
        for terminal_id in list(self._releases):
            if len(out) >= self.per_frame:
                return out  # the rest waits for the next frame, in order
            out[terminal_id] = {"key": self._releases.pop(terminal_id), "release": True}
        for terminal_id in list(self._news):
            if len(out) >= self.per_frame:
                break
            feed = self.feeds[terminal_id]
            if (budget <= 0 or lines <= 0) and feed.pending and feed.command is None:
                continue  # its output's turn comes next frame
            before = len(feed.pending)
            wire, used, used_lines = feed.take(max(budget, 0) if lines > 0 else 0, lines)
            self.backlog -= before - len(feed.pending)
            budget -= used
            lines -= used_lines
            if len(wire) > 1:
                if not feed.shown:
                    wire["scrollback"] = TERMINAL_SCROLLBACK_LINES
                    feed.shown = True
                out[terminal_id] = wire
            if not feed.has_news:
                del self._news[terminal_id]
        return out
