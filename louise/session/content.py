"""What a session shows: its transcript entries, tool calls, plan, commands, modes, config
options, info and usage, built from `session/update`s within byte budgets. Pure.

`SessionContent` is the base of `louise.session.Session`, which adds the status machine.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping
from typing import Any

from louise.acp.schema import ParsedUpdate
from louise.session import unstable
from louise.session.budget import block_stub, cut_text, fit_items, json_size, text_bytes
from louise.session.events import (
    CommandsChanged,
    ConfigOptionsChanged,
    Event,
    InfoChanged,
    MessageChunk,
    MessageStarted,
    ModeChanged,
    ModelChanged,
    PlanChanged,
    TerminalReported,
    ToolCallChanged,
    UnknownUpdate,
    UsageChanged,
)
from louise.session.records import (
    AgentTerminal,
    Compaction,
    Entry,
    IdPlan,
    Message,
    Notice,
    Role,
    SessionBounds,
    ToolCall,
    ToolCallRef,
)

CHUNK_ROLES: dict[str, Role] = {
    "user_message_chunk": "user",
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
}
MAX_BLOCKS_PER_MESSAGE = 1000


def text_of(content: Any) -> tuple[str, dict[str, Any] | None]:
    if isinstance(content, dict):
        if content.get("type") == "text" and isinstance(content.get("text"), str):
            return content["text"], None
        return "", content
    return "", {"type": "unknown", "value": content}


def _model_value(options: list[dict[str, Any]]) -> Any:
    for option in options:
        if option.get("category") == "model":
            return option.get("currentValue")
    return None


def _terminal_meta(value: Any) -> dict[str, Any] | None:
    """One `_meta.terminal_*` object with a usable `terminal_id`, or None."""
    if not isinstance(value, dict):
        return None
    terminal_id = value.get("terminal_id")
    if not isinstance(terminal_id, str) or not terminal_id or len(terminal_id) > 256:
        return None
    return value


def _command_of(record: ToolCall) -> str:
    """What a terminal of this tool call runs, as the person reads it."""
    raw = record.raw_input
    command = raw.get("command") if isinstance(raw, dict) else None
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        command = " ".join(command)
    text = command if isinstance(command, str) and command else record.title
    return text[:4096]


def clean_list(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


class SessionContent:
    """The content of one session and its byte accounting (`size_bytes`)."""

    def __init__(self, session_id: str, bounds: SessionBounds | None = None) -> None:
        self.session_id = session_id
        self.bounds = bounds or SessionBounds()
        self.entries: deque[Entry] = deque()
        self.entries_dropped = 0  # entries evicted from memory (oldest first)
        self.tool_calls: OrderedDict[str, ToolCall] = OrderedDict()
        self.plan: list[dict[str, Any]] = []
        # Unstable updates (louise.session.unstable): plans by id, context compactions.
        self.id_plans: OrderedDict[str, IdPlan] = OrderedDict()
        self.compactions: OrderedDict[str, Compaction] = OrderedDict()
        self.commands: list[dict[str, Any]] = []
        self.modes: list[dict[str, Any]] = []
        self.current_mode_id: str | None = None
        self.config_options: list[dict[str, Any]] = []
        # What the agent takes in a prompt (`promptCapabilities`), for the editor.
        self.prompt_capabilities: dict[str, Any] = {}
        # The legacy model state (`models` in a setup reply, `session/set_model`).
        self.models: list[dict[str, Any]] = []
        self.current_model_id: str | None = None
        self.info: dict[str, Any] = {}
        self.info_dropped = 0  # info keys refused because the table was full
        self.usage_used: int | None = None
        self.usage_size: int | None = None
        self.cost: dict[str, Any] | None = None
        # The context figure predates a model change: shown "stale" until the next usage.
        self.context_stale = False
        self.unknown_updates: deque[tuple[str, dict[str, Any]]] = deque(
            maxlen=self.bounds.max_unknown_updates)
        self.replaying = False
        # Insertion-ordered (a dict, not a set) so cancel/fail events come in creation order,
        # the same in every process (set order of str varies with hash randomisation).
        self._turn_tool_calls: dict[str, None] = {}
        self._message_index: dict[tuple[Role, str], Message] = {}
        self._present_before_replay: set[tuple[Role, str]] = set()
        self._size = 0  # bytes of everything kept, see size_bytes
        self._sizes: dict[str, int] = {}  # bytes of plan, commands, … (replaced whole)
        self._info_sizes: dict[str, int] = {}
        self._unknown_sizes: deque[int] = deque()

    # ------------------------------------------------------------ accounting

    @property
    def size_bytes(self) -> int:
        """Bytes the session keeps (message text and blocks, tool calls, notices, plan,
        commands, modes, options, info, kept unknown updates), as accounted against
        `bounds.max_session_bytes`."""
        return self._size

    def _grow(self, delta: int) -> None:
        self._size += delta
        if self._size > self.bounds.max_session_bytes:
            self._evict_for_bytes()

    def _evict_for_bytes(self) -> None:
        """Oldest entries go until the session fits its budget (never the newest: it is
        being written to)."""
        while self._size > self.bounds.max_session_bytes and len(self.entries) > 1:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        old = self.entries.popleft()
        self.entries_dropped += 1
        if isinstance(old, Message):
            self._size -= old.size
            if old.message_id is not None:
                key = (old.role, old.message_id)
                if self._message_index.get(key) is old:
                    del self._message_index[key]
        elif isinstance(old, ToolCallRef):
            record = self.tool_calls.pop(old.tool_call_id, None)
            if record is not None:
                self._size -= record.size
                self._turn_tool_calls.pop(old.tool_call_id, None)
        elif isinstance(old, Notice):
            self._size -= text_bytes(old.text)
        else:
            compaction = self.compactions.pop(old.compaction_id, None)
            self._size -= compaction.size if compaction is not None else 0

    def _replace_size(self, name: str, size: int) -> None:
        self._grow(size - self._sizes.get(name, 0))
        self._sizes[name] = size

    def _bounded_list(self, name: str, value: Any) -> list[dict[str, Any]]:
        items = clean_list(value)
        kept, size, _left_out = fit_items(items, self.bounds.max_content_bytes,
                                          self.bounds.max_list_items)
        self._replace_size(name, size)
        return kept

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
            self._drop_oldest()
        if isinstance(entry, Notice):
            self._grow(text_bytes(entry.text))
        return self.entries_dropped + len(self.entries) - 1

    def messages(self) -> list[Message]:
        return [entry for entry in self.entries if isinstance(entry, Message)]

    # ------------------------------------------------------------ setup

    def apply_setup(self, modes: Mapping[str, Any] | None,
                    config_options: list[dict[str, Any]] | None,
                    models: Mapping[str, Any] | None = None) -> list[Event]:
        """Modes, config options and legacy models from a session/new, load or resume
        reply."""
        events: list[Event] = []
        if models is not None:
            self.models = [m for m in self._bounded_list("models", models.get("availableModels"))
                           if isinstance(m.get("modelId"), str)]
            current = models.get("currentModelId")
            self.current_model_id = current if isinstance(current, str) else None
            events.append(ModelChanged(self.session_id, self.current_model_id))
        if modes is not None:
            self.modes = self._bounded_list("modes", modes.get("availableModes"))
            current = modes.get("currentModeId")
            self.current_mode_id = current if isinstance(current, str) else None
            events.append(ModeChanged(self.session_id, self.current_mode_id))
        if config_options is not None:
            self.config_options = self._bounded_list("config_options", config_options)
            events.append(ConfigOptionsChanged(self.session_id, tuple(self.config_options)))
        return events

    def set_current_model(self, model_id: str) -> list[Event]:
        """The legacy model was changed (`session/set_model` succeeded)."""
        if self.usage_used is not None and model_id != self.current_model_id:
            self.context_stale = True
        self.current_model_id = model_id
        return [ModelChanged(self.session_id, model_id)]

    # ------------------------------------------------------------ updates

    def apply(self, update: ParsedUpdate) -> list[Event]:
        """Apply one `session/update`; unknown or invalid variants are kept raw."""
        raw = update.raw
        kind = update.kind
        role = CHUNK_ROLES.get(kind)
        if role is not None and "content" in raw:
            return self._chunk(role, raw)
        if kind == "tool_call" and isinstance(raw.get("toolCallId"), str):
            return self._tool_call(raw, create=True)
        if kind == "tool_call_update" and isinstance(raw.get("toolCallId"), str):
            return self._tool_call(raw, create=False)
        if kind == "plan" and isinstance(raw.get("entries"), list):
            self.plan = self._bounded_list("plan", raw["entries"])
            return [PlanChanged(self.session_id, tuple(self.plan))]
        if kind == "available_commands_update" and isinstance(raw.get("availableCommands"), list):
            self.commands = self._bounded_list("commands", raw["availableCommands"])
            return [CommandsChanged(self.session_id, tuple(self.commands))]
        if kind == "current_mode_update" and isinstance(raw.get("currentModeId"), str):
            self.current_mode_id = raw["currentModeId"]
            return [ModeChanged(self.session_id, self.current_mode_id)]
        if kind == "config_option_update" and isinstance(raw.get("configOptions"), list):
            model = _model_value(self.config_options)
            self.config_options = self._bounded_list("config_options", raw["configOptions"])
            if self.usage_used is not None and _model_value(self.config_options) != model:
                self.context_stale = True  # the figure was another model's context
            return [ConfigOptionsChanged(self.session_id, tuple(self.config_options))]
        if kind == "session_info_update":
            return self._info(raw)
        if kind == "usage_update":
            used, size, cost = raw.get("used"), raw.get("size"), raw.get("cost")
            self.usage_used = used if isinstance(used, int) else self.usage_used
            self.usage_size = size if isinstance(size, int) else self.usage_size
            if isinstance(cost, dict) and json_size(cost, 1024) <= 1024:
                self.cost = cost
            self.context_stale = False
            return [UsageChanged(self.session_id, self.usage_used, self.usage_size, self.cost)]
        if kind in unstable.KINDS:
            applied = unstable.apply(self, kind, raw)
            return self._unknown(kind, raw, applied) if isinstance(applied, str) else applied
        return self._unknown(kind, raw, update.error)

    def _info(self, raw: Mapping[str, Any]) -> list[Event]:
        """Partial merge, explicit null clears; O(keys in this update), bounded table."""
        bounds = self.bounds
        changed: dict[str, Any] = {}
        for key, value in raw.items():
            if key == "sessionUpdate":
                continue
            if value is None:
                if key in self.info:
                    del self.info[key]
                    self._grow(-self._info_sizes.pop(key, 0))
                    changed[key] = None
                continue
            if key not in self.info and len(self.info) >= bounds.max_info_keys:
                self.info_dropped += 1
                continue
            size = len(key) + json_size(value, bounds.max_info_value_bytes)
            if size > len(key) + bounds.max_info_value_bytes:
                value = cut_text(f"session info {key!r}", bounds.max_info_value_bytes)
                size = len(key) + len(value)
            self.info[key] = value
            self._grow(size - self._info_sizes.get(key, 0))
            self._info_sizes[key] = size
            changed[key] = value
        return [InfoChanged(self.session_id, changed)] if changed else []

    def _unknown(self, kind: str, raw: dict[str, Any], error: str | None) -> list[Event]:
        limit = self.bounds.max_raw_bytes
        size = json_size(raw, limit)
        if size > limit:
            raw = {"sessionUpdate": kind, "truncated": cut_text("update", limit)}
            size = json_size(raw, limit)
        if len(self.unknown_updates) == self.unknown_updates.maxlen and self._unknown_sizes:
            self._grow(-self._unknown_sizes.popleft())
        self.unknown_updates.append((kind, raw))
        self._unknown_sizes.append(size)
        self._grow(size)
        return [UnknownUpdate(self.session_id, kind, raw, error)]

    def _echoed(self, raw: Mapping[str, Any]) -> bool:
        """A user chunk that only echoes the running prompt (see `Session`)."""
        return False

    def _chunk(self, role: Role, raw: Mapping[str, Any]) -> list[Event]:
        if role == "user" and not self.replaying and self._echoed(raw):
            return []
        events: list[Event] = []
        message_id = raw.get("messageId")
        if not isinstance(message_id, str):
            message_id = None
        message: Message | None = None
        if message_id is not None:
            key = (role, message_id)
            if self.replaying and key in self._present_before_replay:
                # A replay re-sending a message this model already holds: not twice.
                return events
            message = self._message_index.get(key)
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
        text, block = text_of(raw.get("content"))
        if block is not None:
            kept_block = self._add_block(message, block)
            if kept_block is not None:
                events.append(MessageChunk(self.session_id, index, role, "", kept_block))
            return events
        if message.chars + len(text) <= self.bounds.max_message_chars and text:
            # The streaming hot path: _add_text inlined.
            message.parts.append(text)
            message.chars += len(text)
            size = len(text) if text.isascii() else text_bytes(text)
            message.size += size
            self._size += size
            if self._size > self.bounds.max_session_bytes:
                self._evict_for_bytes()
            events.append(MessageChunk(self.session_id, index, role, text))
            return events
        kept = self._add_text(message, text)
        if kept:
            events.append(MessageChunk(self.session_id, index, role, kept))
        return events

    def _add_text(self, message: Message, text: str) -> str:
        """Append within the message's cap; returns what was kept of `text`."""
        room = self.bounds.max_message_chars - message.chars
        if len(text) > room:
            text = text[: max(room, 0)]
            message.truncated = True
        if text:
            message.parts.append(text)
            message.chars += len(text)
            size = text_bytes(text)
            message.size += size
            self._grow(size)
        return text

    def _add_block(self, message: Message, block: dict[str, Any]) -> dict[str, Any] | None:
        """Keep a non-text block within the message's content budget (else a stub)."""
        if len(message.blocks) >= MAX_BLOCKS_PER_MESSAGE:
            message.truncated = True
            return None
        limit = self.bounds.max_content_bytes
        size = json_size(block, limit - message.block_bytes)
        if message.block_bytes + size > limit:
            block = block_stub(block, limit)
            size = json_size(block, limit)
            message.truncated = True
        message.blocks.append(block)
        message.block_bytes += size
        message.size += size
        self._grow(size)
        return block

    def _tool_call(self, raw: Mapping[str, Any], *, create: bool) -> list[Event]:
        tool_call_id: str = raw["toolCallId"]
        record = self.tool_calls.get(tool_call_id)
        created = record is None
        if record is None or create:
            # `tool_call` creates or replaces; an update for an unknown id creates too.
            cancelled = record.cancelled if record is not None else False
            if record is not None:
                self._grow(-record.size)
            record = ToolCall(tool_call_id, cancelled=cancelled)
            self.tool_calls[tool_call_id] = record
            self.tool_calls.move_to_end(tool_call_id)
            if created:
                self._push(ToolCallRef(tool_call_id))
                self._turn_tool_calls[tool_call_id] = None
                while len(self.tool_calls) > self.bounds.max_tool_calls:
                    evicted_id, evicted = self.tool_calls.popitem(last=False)
                    self._grow(-evicted.size)
                    self._turn_tool_calls.pop(evicted_id, None)  # keep this bounded too
        changed: set[str] = set()
        # Only fields present change; `content` and `locations` replace. In v1 an
        # explicit null means unchanged (the schema salvages malformed fields to null).
        if isinstance(raw.get("title"), str):
            record.title = raw["title"][:4096]
            self._field_size(record, "title", text_bytes(record.title))
            changed.add("title")
        if isinstance(raw.get("kind"), str):
            record.kind = raw["kind"][:64]
            changed.add("kind")
        elif create:
            record.kind = "other"
        if isinstance(raw.get("status"), str):
            record.status = raw["status"][:64]
            changed.add("status")
        if isinstance(raw.get("content"), list):
            record.content = self._tool_content(record, raw["content"])
            changed.add("content")
        if isinstance(raw.get("locations"), list):
            locations, size, _ = fit_items(clean_list(raw["locations"]),
                                           self.bounds.max_raw_bytes, self.bounds.max_list_items)
            record.locations = locations
            self._field_size(record, "locations", size)
            changed.add("locations")
        if raw.get("rawInput") is not None:
            record.raw_input = self._raw(record, "raw_input", raw["rawInput"], "raw input")
            changed.add("raw_input")
        if raw.get("rawOutput") is not None:
            record.raw_output = self._raw(record, "raw_output", raw["rawOutput"], "raw output")
            changed.add("raw_output")
        reported = self._agent_terminals(record, raw.get("_meta"))
        if reported:
            changed.add("terminals")
        events: list[Event] = [ToolCallChanged(self.session_id, tool_call_id, created,
                                               frozenset(changed))]
        events.extend(reported)
        return events

    def _agent_terminals(self, record: ToolCall, meta: Any) -> list[Event]:
        """Terminals the agent runs itself, reported in the update's `_meta` (codex's and
        claude's convention: `terminal_info`, `terminal_output_delta` or `terminal_output`
        (output appended), `terminal_exit`). Output is kept up to the byte bound; past it,
        one marker says so and nothing more is kept or passed on."""
        if not isinstance(meta, dict):
            return []
        info = _terminal_meta(meta.get("terminal_info"))
        output = _terminal_meta(meta.get("terminal_output_delta")) \
            or _terminal_meta(meta.get("terminal_output"))
        end = _terminal_meta(meta.get("terminal_exit"))
        reports: dict[str, TerminalReported] = {}
        for part in (info, output, end):
            if part is None:
                continue
            terminal_id = part["terminal_id"]
            terminal = record.terminals.get(terminal_id)
            if terminal is None:
                if len(record.terminals) >= self.bounds.max_agent_terminals:
                    continue
                terminal = record.terminals[terminal_id] = AgentTerminal()
            if part is info:
                continue  # announced with its first output or its end (the command is
                # known by then: claude's first report has only the title "Terminal")
            report = reports.get(terminal_id)
            if report is None:
                command = None if terminal.announced else _command_of(record)
                terminal.announced = True
                report = reports[terminal_id] = TerminalReported(
                    self.session_id, record.tool_call_id, terminal_id, "", command=command)
            if part is output:
                report.data += self._terminal_output(record, terminal_id, terminal,
                                                     part.get("data"))
            if part is end and not terminal.exited:
                code, signal = part.get("exit_code"), part.get("signal")
                terminal.exited = True
                terminal.exit_code = code if isinstance(code, int) \
                    and not isinstance(code, bool) else None
                terminal.signal = signal[:64] if isinstance(signal, str) else None
                report.exited = True
                report.exit_code, report.signal = terminal.exit_code, terminal.signal
        return list(reports.values())

    def _terminal_output(self, record: ToolCall, terminal_id: str, terminal: AgentTerminal,
                         data: Any) -> str:
        """What of `data` is kept and passed on (the marker once the bound is reached)."""
        if not isinstance(data, str) or not data or terminal.cut:
            return ""
        text: str = data
        limit = self.bounds.max_agent_terminal_bytes
        size = text_bytes(text)
        if terminal.output_bytes + size > limit:
            room = limit - terminal.output_bytes
            kept = text.encode("utf-8", "surrogatepass")[:max(room, 0)].decode(
                "utf-8", "ignore")
            text = kept + f"\n[… output cut: over the {limit}-byte limit]\n"
            terminal.cut = True
            record.truncated.add("terminals")
            size = text_bytes(text)
        terminal.output.append(text)
        terminal.output_bytes += size
        self._field_size(record, f"terminal {terminal_id}", terminal.output_bytes)
        return text

    def _field_size(self, record: ToolCall, name: str, size: int) -> None:
        self._grow(size - record.sizes.get(name, 0))
        record.sizes[name] = size

    def _raw(self, record: ToolCall, name: str, value: Any, what: str) -> Any:
        limit = self.bounds.max_raw_bytes
        size = json_size(value, limit)
        if size > limit:
            value = cut_text(what, limit)
            size = len(value)
            record.truncated.add(name)
        else:
            record.truncated.discard(name)
        self._field_size(record, name, size)
        return value

    def _tool_content(self, record: ToolCall, value: Any) -> list[dict[str, Any]]:
        limit = self.bounds.max_content_bytes
        items = clean_list(value)
        kept, size, left_out = fit_items(items, limit, self.bounds.max_list_items)
        if left_out:
            marker = {"type": "content", "content": {"type": "text", "text": cut_text(
                f"{left_out} more content item{'' if left_out == 1 else 's'}", limit)}}
            kept.append(marker)
            size += json_size(marker, limit)
            record.truncated.add("content")
        else:
            record.truncated.discard("content")
        self._field_size(record, "content", size)
        return kept
