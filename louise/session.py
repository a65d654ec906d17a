"""One ACP session's model: transcript, tool calls, plan, commands, modes, config options,
info, usage, and its status machine. Pure: it takes parsed updates and returns typed
events; it performs no I/O and knows nothing of processes or editors.

Everything an agent sends is bounded here: message text, transcript entries, tool calls
and kept-raw unknown updates all have caps (see `SessionBounds`).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from louise.acp.schema import ParsedUpdate

Status = Literal[
    "starting", "ready", "prompting", "waiting_permission", "cancelling", "error", "closed"
]
Role = Literal["user", "agent", "thought"]
STATUSES: tuple[Status, ...] = (
    "starting", "ready", "prompting", "waiting_permission", "cancelling", "error", "closed"
)
UNFINISHED_TOOL_STATUSES = frozenset({None, "pending", "in_progress"})
_CHUNK_ROLES: dict[str, Role] = {
    "user_message_chunk": "user",
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
}


@dataclass(frozen=True, slots=True)
class SessionBounds:
    max_message_chars: int = 8 * 1024 * 1024
    max_entries: int = 10_000
    max_tool_calls: int = 2_000
    max_unknown_updates: int = 100


# ----------------------------------------------------------------------------- records


@dataclass(slots=True)
class Message:
    """A user, agent or thought message assembled from chunks."""

    role: Role
    message_id: str | None
    parts: list[str] = field(default_factory=list)
    chars: int = 0
    blocks: list[dict[str, Any]] = field(default_factory=list)  # non-text content, raw
    truncated: bool = False
    replayed: bool = False

    @property
    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]  # join lazily, once
        return self.parts[0] if self.parts else ""


@dataclass(slots=True)
class ToolCall:
    tool_call_id: str
    title: str = ""
    kind: str = "other"
    status: str | None = "pending"
    content: list[dict[str, Any]] = field(default_factory=list)
    locations: list[dict[str, Any]] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    cancelled: bool = False  # set locally when the person cancelled the turn

    @property
    def display_status(self) -> str:
        if self.cancelled and self.status != "completed":
            return "cancelled"
        return self.status or "pending"

    @property
    def finished(self) -> bool:
        return self.cancelled or self.status in ("completed", "failed")


@dataclass(frozen=True, slots=True)
class ToolCallRef:
    """A transcript entry pointing at a tool call (the record itself mutates)."""

    tool_call_id: str


@dataclass(frozen=True, slots=True)
class Notice:
    """A line the client adds to the transcript: turn end, error, cancel."""

    kind: str  # "stop", "error", "cancelled", "info"
    text: str


Entry = Message | ToolCallRef | Notice


# ----------------------------------------------------------------------------- events


@dataclass(slots=True)
class Event:
    """Base of every session event. Events are values: never mutate one. (Not frozen:
    a frozen dataclass costs ~1 us more to build, and one is built per streamed chunk.)"""

    session_id: str


@dataclass(slots=True)
class StatusChanged(Event):
    old: Status
    new: Status
    error: str | None = None


@dataclass(slots=True)
class MessageStarted(Event):
    index: int  # entry index in the transcript
    role: Role
    message_id: str | None


@dataclass(slots=True)
class MessageChunk(Event):
    index: int
    role: Role
    text: str  # the appended text ("" for a non-text block)
    block: dict[str, Any] | None = None


@dataclass(slots=True)
class ToolCallChanged(Event):
    tool_call_id: str
    created: bool
    changed: frozenset[str]  # names of fields that changed


@dataclass(slots=True)
class PlanChanged(Event):
    entries: tuple[dict[str, Any], ...]


@dataclass(slots=True)
class CommandsChanged(Event):
    commands: tuple[dict[str, Any], ...]


@dataclass(slots=True)
class ModeChanged(Event):
    current_mode_id: str | None


@dataclass(slots=True)
class ConfigOptionsChanged(Event):
    options: tuple[dict[str, Any], ...]


@dataclass(slots=True)
class InfoChanged(Event):
    info: Mapping[str, Any]


@dataclass(slots=True)
class UsageChanged(Event):
    used: int | None
    size: int | None
    cost: Mapping[str, Any] | None


@dataclass(slots=True)
class UnknownUpdate(Event):
    kind: str
    raw: Mapping[str, Any]
    error: str | None


@dataclass(slots=True)
class NoticeAdded(Event):
    index: int
    notice: Notice


@dataclass(slots=True)
class TurnEnded(Event):
    stop_reason: str  # end_turn, max_tokens, max_turn_requests, refusal, cancelled, error
    error: str | None = None


@dataclass(slots=True)
class PermissionPending(Event):
    request_id: int
    tool_call_id: str | None
    pending: int  # how many permissions this session now waits on


@dataclass(slots=True)
class PermissionSettled(Event):
    request_id: int
    outcome: str  # "selected:<optionId>" or "cancelled"
    pending: int


# ----------------------------------------------------------------------------- helpers


def _text_of(content: Any) -> tuple[str, dict[str, Any] | None]:
    if isinstance(content, dict):
        if content.get("type") == "text" and isinstance(content.get("text"), str):
            return content["text"], None
        return "", content
    return "", {"type": "unknown", "value": content}


def _clean_list(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


# ----------------------------------------------------------------------------- model


class Session:
    """The state of one session, driven by `apply` and the turn/status methods."""

    def __init__(self, session_id: str, agent: str, cwd: str,
                 bounds: SessionBounds | None = None, acp_id: str | None = None) -> None:
        # `session_id` identifies the session in events and APIs; `acp_id` is the agent's
        # own id on the wire (the registry makes ids unique across Agents: "agent:acp_id").
        self.session_id = session_id
        self.acp_id = acp_id or session_id
        self.agent = agent
        self.name: str | None = None  # the person's name for it (`:LouiseRename`)
        self.cwd = cwd
        self.bounds = bounds or SessionBounds()
        self.status: Status = "starting"
        self.error: str | None = None
        self.entries: deque[Entry] = deque()
        self.entries_dropped = 0  # entries evicted from memory (oldest first)
        self.tool_calls: OrderedDict[str, ToolCall] = OrderedDict()
        self.plan: list[dict[str, Any]] = []
        self.commands: list[dict[str, Any]] = []
        self.modes: list[dict[str, Any]] = []
        self.current_mode_id: str | None = None
        self.config_options: list[dict[str, Any]] = []
        self.info: dict[str, Any] = {}
        self.usage_used: int | None = None
        self.usage_size: int | None = None
        self.cost: dict[str, Any] | None = None
        self.unknown_updates: deque[tuple[str, dict[str, Any]]] = deque(
            maxlen=self.bounds.max_unknown_updates)
        self.last_stop_reason: str | None = None
        self.replaying = False
        self.turn = 0
        # Insertion-ordered (a dict, not a set) so cancel/fail events come in creation order,
        # the same in every process (set order of str varies with hash randomisation).
        self._turn_tool_calls: dict[str, None] = {}
        self._message_index: dict[tuple[Role, str], Message] = {}
        self._pending_permissions: set[int] = set()
        self._cancel_requested = False

    # ------------------------------------------------------------ transcript access

    def entry_index(self, entry: Entry) -> int:
        """Absolute index of an entry (stable even after old entries are evicted)."""
        for offset, candidate in enumerate(reversed(self.entries)):
            if candidate is entry:
                return self.entries_dropped + len(self.entries) - 1 - offset
        raise ValueError("entry not in transcript")

    def _push(self, entry: Entry) -> int:
        self.entries.append(entry)
        if len(self.entries) > self.bounds.max_entries:
            old = self.entries.popleft()
            self.entries_dropped += 1
            if isinstance(old, Message) and old.message_id is not None:
                self._message_index.pop((old.role, old.message_id), None)
        return self.entries_dropped + len(self.entries) - 1

    def messages(self) -> list[Message]:
        return [entry for entry in self.entries if isinstance(entry, Message)]

    # ------------------------------------------------------------ setup

    def apply_setup(self, modes: Mapping[str, Any] | None,
                    config_options: list[dict[str, Any]] | None) -> list[Event]:
        """Modes and config options from a session/new, load or resume reply."""
        events: list[Event] = []
        if modes is not None:
            self.modes = _clean_list(modes.get("availableModes"))
            current = modes.get("currentModeId")
            self.current_mode_id = current if isinstance(current, str) else None
            events.append(ModeChanged(self.session_id, self.current_mode_id))
        if config_options is not None:
            self.config_options = list(config_options)
            events.append(ConfigOptionsChanged(self.session_id, tuple(self.config_options)))
        return events

    # ------------------------------------------------------------ updates

    def apply(self, update: ParsedUpdate) -> list[Event]:
        """Apply one `session/update`; unknown or invalid variants are kept raw."""
        raw = update.raw
        kind = update.kind
        role = _CHUNK_ROLES.get(kind)
        if role is not None and "content" in raw:
            return self._chunk(role, raw)
        if kind == "tool_call" and isinstance(raw.get("toolCallId"), str):
            return self._tool_call(raw, create=True)
        if kind == "tool_call_update" and isinstance(raw.get("toolCallId"), str):
            return self._tool_call(raw, create=False)
        if kind == "plan" and isinstance(raw.get("entries"), list):
            self.plan = _clean_list(raw["entries"])
            return [PlanChanged(self.session_id, tuple(self.plan))]
        if kind == "available_commands_update" and isinstance(raw.get("availableCommands"), list):
            self.commands = _clean_list(raw["availableCommands"])
            return [CommandsChanged(self.session_id, tuple(self.commands))]
        if kind == "current_mode_update" and isinstance(raw.get("currentModeId"), str):
            self.current_mode_id = raw["currentModeId"]
            return [ModeChanged(self.session_id, self.current_mode_id)]
        if kind == "config_option_update" and isinstance(raw.get("configOptions"), list):
            self.config_options = _clean_list(raw["configOptions"])
            return [ConfigOptionsChanged(self.session_id, tuple(self.config_options))]
        if kind == "session_info_update":
            for key, value in raw.items():
                if key == "sessionUpdate":
                    continue
                if value is None:
                    self.info.pop(key, None)  # explicit null clears
                else:
                    self.info[key] = value
            return [InfoChanged(self.session_id, dict(self.info))]
        if kind == "usage_update":
            used, size, cost = raw.get("used"), raw.get("size"), raw.get("cost")
            self.usage_used = used if isinstance(used, int) else self.usage_used
            self.usage_size = size if isinstance(size, int) else self.usage_size
            if isinstance(cost, dict):
                self.cost = cost
            return [UsageChanged(self.session_id, self.usage_used, self.usage_size, self.cost)]
        self.unknown_updates.append((kind, raw))
        return [UnknownUpdate(self.session_id, kind, raw, update.error)]

    def _chunk(self, role: Role, raw: Mapping[str, Any]) -> list[Event]:
        events: list[Event] = []
        message_id = raw.get("messageId")
        if not isinstance(message_id, str):
            message_id = None
        message: Message | None = None
        if message_id is not None:
            message = self._message_index.get((role, message_id))
        else:
            last = self.entries[-1] if self.entries else None
            if isinstance(last, Message) and last.role == role and last.message_id is None:
                message = last
        if message is None:
            message = Message(role, message_id, replayed=self.replaying)
            index = self._push(message)
            if message_id is not None:
                self._message_index[(role, message_id)] = message
            events.append(MessageStarted(self.session_id, index, role, message_id))
        elif self.entries[-1] is message:
            index = self.entries_dropped + len(self.entries) - 1
        else:
            index = self.entry_index(message)
        text, block = _text_of(raw.get("content"))
        if block is not None:
            if len(message.blocks) < 1000:
                message.blocks.append(block)
            events.append(MessageChunk(self.session_id, index, role, "", block))
            return events
        room = self.bounds.max_message_chars - message.chars
        if len(text) > room:
            text = text[: max(room, 0)]
            message.truncated = True
        if text:
            message.parts.append(text)
            message.chars += len(text)
            events.append(MessageChunk(self.session_id, index, role, text))
        return events

    def _tool_call(self, raw: Mapping[str, Any], *, create: bool) -> list[Event]:
        tool_call_id: str = raw["toolCallId"]
        record = self.tool_calls.get(tool_call_id)
        created = record is None
        events: list[Event] = []
        if record is None or create:
            # `tool_call` creates or replaces; an update for an unknown id creates too.
            cancelled = record.cancelled if record is not None else False
            record = ToolCall(tool_call_id, cancelled=cancelled)
            self.tool_calls[tool_call_id] = record
            self.tool_calls.move_to_end(tool_call_id)
            if created:
                self._push(ToolCallRef(tool_call_id))
                self._turn_tool_calls[tool_call_id] = None
                while len(self.tool_calls) > self.bounds.max_tool_calls:
                    evicted, _ = self.tool_calls.popitem(last=False)
                    self._turn_tool_calls.pop(evicted, None)  # keep this bounded too
        changed: set[str] = set()
        # Only fields present change; `content` and `locations` replace. In v1 an
        # explicit null means unchanged (the schema salvages malformed fields to null).
        if isinstance(raw.get("title"), str):
            record.title = raw["title"]
            changed.add("title")
        if isinstance(raw.get("kind"), str):
            record.kind = raw["kind"]
            changed.add("kind")
        elif create:
            record.kind = "other"
        if isinstance(raw.get("status"), str):
            record.status = raw["status"]
            changed.add("status")
        if isinstance(raw.get("content"), list):
            record.content = _clean_list(raw["content"])
            changed.add("content")
        if isinstance(raw.get("locations"), list):
            record.locations = _clean_list(raw["locations"])
            changed.add("locations")
        if raw.get("rawInput") is not None:
            record.raw_input = raw["rawInput"]
            changed.add("raw_input")
        if raw.get("rawOutput") is not None:
            record.raw_output = raw["rawOutput"]
            changed.add("raw_output")
        events.append(ToolCallChanged(self.session_id, tool_call_id, created, frozenset(changed)))
        return events

    # ------------------------------------------------------------ status machine

    def _set_status(self, new: Status, error: str | None = None) -> list[Event]:
        old = self.status
        if old == new and error == self.error:
            return []
        self.status = new
        self.error = error if new == "error" else None
        return [StatusChanged(self.session_id, old, new, self.error)]

    def mark_ready(self) -> list[Event]:
        self.replaying = False
        return self._set_status("ready")

    def mark_starting(self) -> list[Event]:
        return self._set_status("starting")

    def begin_replay(self) -> None:
        self.replaying = True

    def add_notice(self, kind: str, text: str) -> list[Event]:
        notice = Notice(kind, text)
        return [NoticeAdded(self.session_id, self._push(notice), notice)]

    def begin_turn(self, prompt: list[dict[str, Any]]) -> list[Event]:
        """The person's prompt goes into the transcript and the turn starts."""
        if self.status != "ready":
            raise RuntimeError(f"cannot prompt a session that is {self.status}")
        self.turn += 1
        self._turn_tool_calls = {}
        self._cancel_requested = False
        self.last_stop_reason = None
        events: list[Event] = []
        message = Message("user", None)
        index = self._push(message)
        events.append(MessageStarted(self.session_id, index, "user", None))
        for block in prompt:
            text, other = _text_of(block)
            if other is not None:
                message.blocks.append(other)
            elif text:
                message.parts.append(text)
                message.chars += len(text)
            events.append(MessageChunk(self.session_id, index, "user", text, other))
        events.extend(self._set_status("prompting"))
        return events

    def request_cancel(self) -> list[Event]:
        """Person cancelled: unfinished tool calls of this turn show cancelled at once."""
        if self.status not in ("prompting", "waiting_permission"):
            return []
        self._cancel_requested = True
        events: list[Event] = []
        for tool_call_id in self._turn_tool_calls:
            record = self.tool_calls.get(tool_call_id)
            if record is not None and record.status in UNFINISHED_TOOL_STATUSES:
                record.cancelled = True
                events.append(ToolCallChanged(self.session_id, tool_call_id, False,
                                              frozenset({"status"})))
        events.extend(self._set_status("cancelling"))
        return events

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_requested

    def end_turn(self, stop_reason: str | None, error: str | None = None, *,
                 connection_lost: bool = False) -> list[Event]:
        """The prompt's reply (or its error) arrived. An error after a cancel is a cancel.

        With `connection_lost` the agent is gone: the session ends in `error`."""
        if connection_lost:
            lost = [*self.add_notice("error", error or "the agent went away"),
                      TurnEnded(self.session_id, "error", error)]
            self._cancel_requested = False
            return lost + self.fail(error or "the agent went away")
        if self._cancel_requested and error is not None:
            stop_reason, error = "cancelled", None
        reason = stop_reason or ("error" if error else "end_turn")
        self.last_stop_reason = reason
        self._pending_permissions.clear()
        events: list[Event] = []
        if reason == "cancelled":
            for tool_call_id in self._turn_tool_calls:
                record = self.tool_calls.get(tool_call_id)
                if record is not None and record.status in UNFINISHED_TOOL_STATUSES \
                        and not record.cancelled:
                    record.cancelled = True
                    events.append(ToolCallChanged(self.session_id, tool_call_id, False,
                                                  frozenset({"status"})))
        notice = _STOP_NOTICES.get(reason)
        if error is not None:
            events.extend(self.add_notice("error", error))
        elif notice is not None:
            events.extend(self.add_notice(notice[0], notice[1]))
        events.append(TurnEnded(self.session_id, reason, error))
        self._cancel_requested = False
        if self.status not in ("error", "closed"):
            events.extend(self._set_status("ready"))
        return events

    def permission_pending(self, request_id: int, tool_call_id: str | None) -> list[Event]:
        self._pending_permissions.add(request_id)
        events: list[Event] = [PermissionPending(self.session_id, request_id, tool_call_id,
                                                 len(self._pending_permissions))]
        if self.status == "prompting":
            events.extend(self._set_status("waiting_permission"))
        return events

    def permission_settled(self, request_id: int, outcome: str) -> list[Event]:
        self._pending_permissions.discard(request_id)
        events: list[Event] = [PermissionSettled(self.session_id, request_id, outcome,
                                                 len(self._pending_permissions))]
        if self.status == "waiting_permission" and not self._pending_permissions:
            events.extend(self._set_status("prompting"))
        return events

    def fail(self, error: str) -> list[Event]:
        """The connection died (or setup failed): everything in flight ends as an error."""
        events: list[Event] = []
        if self.status in ("prompting", "waiting_permission", "cancelling"):
            self._pending_permissions.clear()
            for tool_call_id in self._turn_tool_calls:
                record = self.tool_calls.get(tool_call_id)
                if record is not None and record.status in UNFINISHED_TOOL_STATUSES:
                    record.status = "failed"
                    events.append(ToolCallChanged(self.session_id, tool_call_id, False,
                                                  frozenset({"status"})))
        events.extend(self._set_status("error", error))
        return events

    def close(self) -> list[Event]:
        self._pending_permissions.clear()
        return self._set_status("closed")


_STOP_NOTICES: dict[str, tuple[str, str]] = {
    "cancelled": ("cancelled", "cancelled"),
    "refusal": ("stop", "the agent refused; this prompt and what followed are not in its context"),
    "max_tokens": ("stop", "stopped: the model reached its token limit"),
    "max_turn_requests": ("stop", "stopped: the turn reached its request limit"),
}
