"""What a session shows: its transcript entries, tool calls, plan, commands, modes, config
options, info and usage, built from `session/update`s within byte budgets. Pure.

`SessionContent` is the base of `louise.session.Session`, which adds the status machine;
its own base, `Entries` (entries.py), keeps the transcript and its byte accounting, which
the appliers of tool calls and unstable updates fill too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from louise.acp.schema import ParsedUpdate
from louise.session import tool_calls, unstable
from louise.session.agent_notes import is_progress, note_of
from louise.session.budget import (
    block_stub,
    cut_text,
    json_size,
    text_bytes,
)
from louise.session.entries import Entries
from louise.session.events import (
    AgentNoted,
    CommandsChanged,
    ConfigOptionsChanged,
    Event,
    InfoChanged,
    MessageChunk,
    MessageStarted,
    MessageTruncated,
    ModeChanged,
    ModelChanged,
    PlanChanged,
    UnknownUpdate,
    UsageChanged,
)
from louise.session.records import (
    Message,
    Role,
    SessionBounds,
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


class SessionContent(Entries):
    """The content of one session, on its entries and their byte accounting (`Entries`)."""

    def __init__(self, session_id: str, bounds: SessionBounds | None = None) -> None:
        super().__init__(session_id, bounds)
        self.plan: list[dict[str, Any]] = []
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
        # The agent's last note of its own state in this turn ("Reconnecting... 2/5"),
        # until the turn makes progress again or ends.
        self.agent_note: str | None = None
        self.usage_used: int | None = None
        self.usage_size: int | None = None
        self.cost: dict[str, Any] | None = None
        # The context figure predates a model change: shown "stale" until the next usage.
        self.context_stale = False
        self.unknown_updates: deque[tuple[str, dict[str, Any]]] = deque(
            maxlen=self.bounds.max_unknown_updates)
        self.replaying = False
        self._present_before_replay: set[tuple[Role, str]] = set()
        self._info_sizes: dict[str, int] = {}
        self._unknown_sizes: deque[int] = deque()

    # ------------------------------------------------------------ setup

    def apply_setup(self, modes: Mapping[str, Any] | None,
                    config_options: list[dict[str, Any]] | None,
                    models: Mapping[str, Any] | None = None) -> list[Event]:
        """Modes, config options and legacy models from a session/new, load or resume
        reply."""
        events: list[Event] = []
        if models is not None:
            self.models = [m for m in self.bounded_list("models", models.get("availableModels"))
                           if isinstance(m.get("modelId"), str)]
            current = models.get("currentModelId")
            self.current_model_id = current if isinstance(current, str) else None
            events.append(ModelChanged(self.session_id, self.current_model_id))
        if modes is not None:
            self.modes = self.bounded_list("modes", modes.get("availableModes"))
            current = modes.get("currentModeId")
            self.current_mode_id = current if isinstance(current, str) else None
            events.append(ModeChanged(self.session_id, self.current_mode_id))
        if config_options is not None:
            self.config_options = self.bounded_list("config_options", config_options)
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
        if self.agent_note is None:
            role = CHUNK_ROLES.get(kind)  # a streamed chunk: straight to `_chunk`
            if role is not None and "content" in raw:
                return self._chunk(role, raw)
            return self._apply(kind, raw, update)
        if is_progress(kind):
            self.agent_note = None
            return [AgentNoted(self.session_id, None), *self._apply(kind, raw, update)]
        return self._apply(kind, raw, update)

    def _apply(self, kind: str, raw: dict[str, Any], update: ParsedUpdate) -> list[Event]:
        role = CHUNK_ROLES.get(kind)
        if role is not None and "content" in raw:
            return self._chunk(role, raw)
        if kind == "tool_call" and isinstance(raw.get("toolCallId"), str):
            return tool_calls.apply(self, raw, create=True)
        if kind == "tool_call_update" and isinstance(raw.get("toolCallId"), str):
            return tool_calls.apply(self, raw, create=False)
        if kind == "plan" and isinstance(raw.get("entries"), list):
            self.plan = self.bounded_list("plan", raw["entries"])
            return [PlanChanged(self.session_id, tuple(self.plan))]
        if kind == "available_commands_update" and isinstance(raw.get("availableCommands"), list):
            self.commands = self.bounded_list("commands", raw["availableCommands"])
            return [CommandsChanged(self.session_id, tuple(self.commands))]
        if kind == "current_mode_update" and isinstance(raw.get("currentModeId"), str):
            self.current_mode_id = raw["currentModeId"]
            return [ModeChanged(self.session_id, self.current_mode_id)]
        if kind == "config_option_update" and isinstance(raw.get("configOptions"), list):
            model = _model_value(self.config_options)
            self.config_options = self.bounded_list("config_options", raw["configOptions"])
            if self.usage_used is not None and _model_value(self.config_options) != model:
                self.context_stale = True  # the figure was another model's context
            return [ConfigOptionsChanged(self.session_id, tuple(self.config_options))]
        if kind == "session_info_update":
            events = self._info(raw)
            note = note_of(raw)
            if note is not None:
                self.agent_note = note
                events.append(AgentNoted(self.session_id, note))
            return events
        if kind == "usage_update":
            used, size, cost = raw.get("used"), raw.get("size"), raw.get("cost")
            self.usage_used = used if isinstance(used, int) else self.usage_used
            self.usage_size = size if isinstance(size, int) else self.usage_size
            if isinstance(cost, dict) and json_size(cost, 1024) <= 1024:
                self.cost = cost
            self.context_stale = False
            return [UsageChanged(self.session_id, self.usage_used, self.usage_size, self.cost)]
        if kind == "quota_update":
            return []  # account quota: the registry's limits observer reads it
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
                    self.grow(-self._info_sizes.pop(key, 0))
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
            self.grow(size - self._info_sizes.get(key, 0))
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
            self.grow(-self._unknown_sizes.popleft())
        self.unknown_updates.append((kind, raw))
        self._unknown_sizes.append(size)
        self.grow(size)
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
            message = self.message_index.get(key)
        else:
            last = self.entries[-1] if self.entries else None
            if isinstance(last, Message) and last.role == role and last.message_id is None:
                message = last
        if message is None:
            message = Message(role, message_id, replayed=self.replaying)
            index = self.push(message)
            if message_id is not None:
                self.message_index[(role, message_id)] = message
            events.append(MessageStarted(self.session_id, index, role, message_id))
        elif self.entries[-1] is message:
            index = self.entries_dropped + len(self.entries) - 1
        else:
            index = self.entry_index(message)
        text, block = text_of(raw.get("content"))
        if block is not None:
            was_cut = message.truncated
            kept_block = self._add_block(message, block)
            if kept_block is not None:
                events.append(MessageChunk(self.session_id, index, role, "", kept_block))
            if message.truncated and not was_cut:
                events.append(MessageTruncated(self.session_id, index, role))
            return events
        if message.chars + len(text) <= self.bounds.max_message_chars and text:
            # The streaming hot path: _add_text inlined.
            message.append(text)
            message.chars += len(text)
            size = len(text) if text.isascii() else text_bytes(text)
            message.size += size
            self._size += size
            if self._size > self.bounds.max_session_bytes:
                self._evict_for_bytes()
            events.append(MessageChunk(self.session_id, index, role, text))
            return events
        was_cut = message.truncated
        kept = self._add_text(message, text)
        if kept:
            events.append(MessageChunk(self.session_id, index, role, kept))
        if message.truncated and not was_cut:
            # Said once, after the last text kept: nothing more of it will show.
            events.append(MessageTruncated(self.session_id, index, role))
        return events

    def _add_text(self, message: Message, text: str) -> str:
        """Append within the message's cap; returns what was kept of `text`."""
        room = self.bounds.max_message_chars - message.chars
        if len(text) > room:
            text = text[: max(room, 0)]
            message.truncated = True
        if text:
            message.append(text)
            message.chars += len(text)
            size = text_bytes(text)
            message.size += size
            self.grow(size)
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
        self.grow(size)
        return block
