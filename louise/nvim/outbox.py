"""The frame outbox: UI work waiting for the next frame, typed by how it merges.

Between two frames many things can ask Neovim for something. Each kind of UI work says
what two requests of the same kind in one frame mean:

- `Queued`: every item counts, in order (notifications, chats to open or drop, fs
  conflicts and questions: losing one would leave an agent's request waiting forever).
  Bounded; `put` says whether the item was kept so the caller can fail closed.
- `Latest`: only the newest matters (a picker, a detail view, a count).
- `Keyed`: the newest per key (limits labels per agent).
- `Reloads`: a set of files whose buffers follow what an agent wrote (bounded: past it,
  every buffer).
- `TerminalFeeds` (terminals.py): agent terminals' output, filtered, fed to Neovim in
  bounded slices across frames (a terminal takes ~100 ms of Neovim per MiB): nothing
  dropped up to the terminal's output limit, a visible marker for what went past it; a
  chat keeps a bounded number of terminals in Neovim.
- `Current`: a state, not an event: what should be on screen now, or nothing (the
  permission request). A show and a settle of the same request in one frame cancel out;
  a settle of a request that is no longer the current one changes nothing.

Pure: no pynvim, no anyio. `Outbox.take()` is the batch part of one frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, Generic, Protocol, TypeVar

from louise.nvim.terminals import Bell, TerminalFeeds

T = TypeVar("T")

MAX_NOTIFY_PER_FRAME = 20
MAX_OPEN_PER_FRAME = 64
MAX_CLOSED_PER_FRAME = 256
MAX_PENDING_CONFLICTS = 32
MAX_QUESTIONS_PER_FRAME = 32
MAX_RELOADS_PER_FRAME = 256


class Slot(Protocol):
    """One kind of UI work: a key of the frame batch and its merge rule."""

    key: str
    bell: Bell

    @property
    def pending(self) -> bool: ...

    def take(self) -> Any:
        """The wire value of this frame (only called when `pending`), and reset."""


@dataclass(frozen=True, slots=True)
class VimNotice:
    """One line for the person (`vim.notify`); not the JSON-RPC notification."""

    message: str
    level: str = "info"
    replaces: str | None = None  # the id of a progress line this one updates

    def to_wire(self) -> list[str]:
        if self.replaces is not None:
            return [self.message, self.level, self.replaces]
        return [self.message, self.level]


@dataclass(frozen=True, slots=True)
class OpenChat:
    """A chat for Lua to open (or show again)."""

    key: str
    agent: str
    focus: bool = True
    # The placeholder Lua showed while the agent started (lua/louise/chat/starting.lua):
    # it becomes this chat.
    pending: int | None = None


@dataclass(frozen=True, slots=True)
class FsConflict:
    """An agent wants to write a file whose buffer has unsaved edits (`reason`
    "modified"), whose file changed on disk since the buffer read it ("changed"), or
    both ("modified_changed")."""

    id: int
    path: str
    agent: str
    reason: str = "modified"


def _wire(value: Any) -> Any:
    to_wire = getattr(value, "to_wire", None)
    if callable(to_wire):
        return to_wire()
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    return value


class Queued(Generic[T]):
    """Every item is delivered, in arrival order; at most `limit` per frame."""

    def __init__(self, key: str, limit: int) -> None:
        self.key = key
        self.limit = limit
        self.items: list[T] = []
        self.dropped = 0
        self.bell = Bell()

    @property
    def pending(self) -> bool:
        return bool(self.items)

    def put(self, item: T) -> bool:
        """Queue `item`; False when the frame is full (the caller decides what a lost
        item means: a dropped notice is fine, a dropped question must fail closed)."""
        if len(self.items) >= self.limit:
            self.dropped += 1
            return False
        self.items.append(item)
        self.bell.rung = True
        return True

    def take(self) -> list[Any]:
        items, self.items, self.dropped = self.items, [], 0
        return [_wire(item) for item in items]


class Latest(Generic[T]):
    """Only the newest value of a frame is delivered."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._value: T | None = None
        self._pending = False
        self.last: T | None = None  # the last value taken (for a full re-render)
        self.bell = Bell()

    @property
    def pending(self) -> bool:
        return self._pending

    def put(self, value: T) -> None:
        self._value, self._pending = value, True
        self.bell.rung = True

    def peek(self) -> T | None:
        """The value waiting for this frame, if any."""
        return self._value if self._pending else None

    def resend(self) -> None:
        """Deliver the last delivered value again (the UI lost it)."""
        if self.last is not None and not self._pending:
            self.put(self.last)

    def take(self) -> Any:
        value, self._value, self._pending = self._value, None, False
        self.last = value
        return _wire(value)


class Keyed(Generic[T]):
    """The newest value per key; `entry` lets a value grow in place within a frame."""

    def __init__(self, key: str, limit: int | None = None) -> None:
        self.key = key
        self.limit = limit
        self.values: dict[str, T] = {}
        self.bell = Bell()

    @property
    def pending(self) -> bool:
        return bool(self.values)

    def put(self, key: str, value: T) -> None:
        self.values[key] = value
        self.bell.rung = True

    def entry(self, key: str, factory: Callable[[], T]) -> T | None:
        """This frame's value for `key`, created by `factory` when new; None when the
        frame already holds `limit` keys."""
        value = self.values.get(key)
        if value is None:
            if self.limit is not None and len(self.values) >= self.limit:
                return None
            value = self.values[key] = factory()
            self.bell.rung = True
        return value

    def take(self) -> dict[str, Any]:
        values, self.values = self.values, {}
        return {key: _wire(value) for key, value in values.items()}


class Reloads:
    """Files agents changed, whose buffers follow them (`fs.reload`): the paths of one
    frame, each with the agent that changed it; past `limit` paths, every buffer is
    checked instead (`True` on the wire), so none is left behind."""

    def __init__(self, key: str, limit: int) -> None:
        self.key = key
        self.limit = limit
        self.paths: dict[str, str] = {}
        self.everything = False
        self.bell = Bell()

    @property
    def pending(self) -> bool:
        return self.everything or bool(self.paths)

    def put(self, path: str, agent: str) -> None:
        if self.everything or path in self.paths:
            return
        self.bell.rung = True
        if len(self.paths) >= self.limit:
            self.everything, self.paths = True, {}
            return
        self.paths[path] = agent

    def put_everything(self) -> None:
        self.everything, self.paths = True, {}
        self.bell.rung = True

    def take(self) -> dict[str, str] | bool:
        value: dict[str, str] | bool = True if self.everything else self.paths
        self.paths, self.everything = {}, False
        return value


class Current(Generic[T]):
    """A state: the value that should be on screen now, identified by an id, or nothing.

    Sent only when it changed during the frame; on the wire the value, or `False` for
    "nothing" (msgpack's nil would read as "no news" on the Lua side)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.ident: int | None = None
        self.value: T | None = None
        self._shown: int | None = None  # what the UI holds after the last frame
        self._dirty = False
        self.bell = Bell()

    @property
    def pending(self) -> bool:
        # A show and a settle within one frame of something never shown: nothing to do.
        return self._dirty and not (self.ident is None and self._shown is None)

    def show(self, ident: int, value: T) -> None:
        self.ident, self.value, self._dirty = ident, value, True
        self.bell.rung = True

    def settle(self, ident: int) -> None:
        """`ident` is over; only the current one is taken off the screen."""
        if self.ident == ident:
            self.ident, self.value, self._dirty = None, None, True
            self.bell.rung = True

    def resend(self) -> None:
        """The UI lost its state: send the current one again (or nothing, again)."""
        self._shown = -1
        self._dirty = True
        self.bell.rung = True

    def take(self) -> Any:
        self._dirty = False
        self._shown = self.ident
        return _wire(self.value) if self.value is not None else False


class Outbox:
    """Every kind of UI work the engine sends to Neovim, each with its merge rule.
    The key of each slot is the key of the frame batch its Lua handler reads."""

    def __init__(self) -> None:
        self.notify: Queued[VimNotice] = Queued("notify", MAX_NOTIFY_PER_FRAME)
        self.open: Queued[OpenChat] = Queued("open", MAX_OPEN_PER_FRAME)
        self.closed: Queued[str] = Queued("closed", MAX_CLOSED_PER_FRAME)
        self.fs_conflicts: Queued[FsConflict] = Queued("fs_conflict", MAX_PENDING_CONFLICTS)
        # Questions (sign-in, elicitation): every one is shown; a full frame declines.
        self.ask: Queued[dict[str, Any]] = Queued("ask", MAX_QUESTIONS_PER_FRAME)
        self.limits: Keyed[list[str]] = Keyed("limits")
        self.prompt_queue: Keyed[dict[str, Any]] = Keyed("prompt_queue")  # per session
        # Per agent: whether a sign-in to it is under way (its chats say so, not `ready`).
        self.signin: Keyed[bool] = Keyed("signin")
        self.terminals = TerminalFeeds("term")
        self.reloads = Reloads("reload", MAX_RELOADS_PER_FRAME)
        # How many permission requests wait (the float's "1 of 3").
        self.permission_count: Latest[int] = Latest("permission_count")
        self.permission: Current[dict[str, Any]] = Current("permission")
        # One picker on screen at a time: a later one replaces an earlier one.
        self.picker: Latest[dict[str, Any]] = Latest("picker")
        self.limits_detail: Latest[dict[str, Any]] = Latest("limits_detail")
        self.show_text: Latest[dict[str, Any]] = Latest("show_text")
        self.review: Latest[dict[str, Any]] = Latest("review")  # :LouiseReview's view
        self.undo: Latest[dict[str, Any]] = Latest("undo")  # an undo to confirm, or done
        self.permissions_list: Latest[list[dict[str, Any]]] = Latest("permissions_list")
        self.pong: Latest[int] = Latest("pong")

        self._slots: tuple[Slot, ...] = (
            self.notify, self.open, self.closed, self.fs_conflicts, self.ask, self.limits,
            self.prompt_queue, self.signin, self.terminals, self.reloads, self.permission_count,
            self.permission, self.picker,
            self.limits_detail, self.show_text, self.review, self.undo,
            self.permissions_list, self.pong)
        self._bell = Bell()
        for slot in self._slots:  # one bell for them all
            slot.bell = self._bell

    def chat_closed(self, key: str) -> None:
        """Lua drops the chat and its terminals; louise forgets its terminals too."""
        self.closed.put(key)
        self.terminals.forget_chat(key)

    def slots(self) -> Iterator[Slot]:
        return iter(self._slots)

    @property
    def pending(self) -> bool:
        if not self._bell.rung:  # nothing changed since every slot was found empty
            return False
        for slot in self._slots:  # (a loop: asked every frame, no generator)
            if slot.pending:
                return True
        self._bell.rung = False
        return False

    def take(self) -> dict[str, Any]:
        """This frame's UI work, keyed as the Lua applier reads it; the outbox is empty
        afterwards. Notices dropped for lack of room are counted in one last one."""
        dropped = self.notify.dropped
        if dropped:
            self.notify.items.append(VimNotice(
                f"louise: {dropped} more message(s) were dropped (Neovim was busy)", "warn"))
        return {slot.key: slot.take() for slot in self.slots() if slot.pending}
