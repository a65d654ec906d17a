"""One ACP session's model: its content (see `content.py`) and its status machine: turns,
cancels, permissions, failures. Pure: it takes parsed updates and returns typed events; it
performs no I/O and knows nothing of processes or editors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from louise.session.content import SessionContent, text_of
from louise.session.events import (
    Event,
    MessageChunk,
    MessageStarted,
    MessageTruncated,
    NoticeAdded,
    PermissionPending,
    PermissionSettled,
    SessionRenamed,
    StatusChanged,
    ToolCallChanged,
    TurnEnded,
)
from louise.session.records import (
    TURN_STATUSES,
    UNFINISHED_TOOL_STATUSES,
    Message,
    Notice,
    SessionBounds,
    Status,
    ToolCall,
)
from louise.session.usage import TurnUsage

MAX_NAME_CHARS = 200
MAX_OPTION_VALUES = 500
# How a setting is changed when the agent has no config option for it: the legacy
# `session/set_mode` and `session/set_model` (ids no agent's config option uses).
LEGACY_MODE = "_louise.mode"
LEGACY_MODEL = "_louise.model"
SETTING_CATEGORIES = ("mode", "model", "thought_level")


@dataclass(slots=True)
class _PromptEcho:
    """The prompt of the running turn, for agents that echo it back as user chunks."""

    message: Message
    text: str
    offset: int = 0


class Session(SessionContent):
    """The state of one session, driven by `apply` and the turn/status methods."""

    def __init__(self, session_id: str, agent: str, cwd: str,
                 bounds: SessionBounds | None = None, acp_id: str | None = None) -> None:
        # `session_id` identifies the session in events and APIs; `acp_id` is the agent's
        # own id on the wire (the registry makes ids unique across Agents: "agent:acp_id").
        super().__init__(session_id, bounds)
        self.acp_id = acp_id or session_id
        self.agent = agent
        self.name: str | None = None  # the person's name for it (`:LouiseRename`)
        self.cwd = cwd
        self.status: Status = "starting"
        self.error: str | None = None
        self.last_stop_reason: str | None = None
        self.last_turn_usage: TurnUsage | None = None  # what the last turn reported
        self.turn = 0
        self._pending_permissions: set[int] = set()
        self._cancel_requested = False
        self._closing = False  # being closed: no new turn (see `begin_close`)
        self._echo: _PromptEcho | None = None  # the running turn's prompt
        self._watching = False  # the turn running is another window's (`watch_turn`)

    def fresh(self) -> Session:
        """A new, empty model of the same session (same ids, name and bounds), `starting`:
        what a `session/load` replays its history into."""
        model = Session(self.session_id, self.agent, self.cwd, self.bounds, acp_id=self.acp_id)
        model.name = self.name
        model.turn = self.turn
        model._closing = self._closing
        return model

    # ------------------------------------------------------------ reading

    def option_choices(self, only: str | None = None) -> list[dict[str, Any]]:
        """Config options as a person picks them: `{id, name, current, values: [{value,
        name}]}`, select groups flattened, booleans as on/off. An agent with the legacy
        model state and no model option gets a "Model" choice too (`LEGACY_MODEL`)."""
        choices = []
        if self.models and self._option("model") is None and only in (None, LEGACY_MODEL):
            choices.append({"id": LEGACY_MODEL, "name": "Model",
                            "current": self.current_model_id,
                            "values": [{"value": m["modelId"],
                                        "name": str(m.get("name") or m["modelId"])}
                                       for m in self.models[:MAX_OPTION_VALUES]]})
        for option in self.config_options:
            if only is not None and option.get("id") != only:
                continue
            values: list[dict[str, Any]] = []
            if option.get("type") == "boolean":
                values = [{"value": True, "name": "on"}, {"value": False, "name": "off"}]
            else:
                entries = option.get("options")
                for entry in entries if isinstance(entries, list) else []:
                    group = entry.get("options") if isinstance(entry, dict) else None
                    for item in group if isinstance(group, list) else [entry]:
                        if isinstance(item, dict) and "value" in item \
                                and len(values) < MAX_OPTION_VALUES:
                            values.append({"value": item["value"],
                                           "name": str(item.get("name") or item["value"])})
            choices.append({"id": str(option.get("id")), "name": str(option.get("name")),
                            "current": option.get("currentValue"), "values": values})
        return choices

    def _option(self, category: str) -> dict[str, Any] | None:
        return next((o for o in self.config_options if o.get("category") == category), None)

    def _option_value(self, category: str) -> str | None:
        option = self._option(category)
        return str(option.get("currentValue")) if option is not None else None

    @property
    def current_model(self) -> str | None:
        """The model config option's value, else the legacy current model."""
        value = self._option_value("model")
        return value if value is not None else self.current_model_id

    @property
    def model_option_id(self) -> str | None:
        """How the model is picked: its config option's id, `LEGACY_MODEL`, or None."""
        option = self._option("model")
        if option is not None:
            return str(option.get("id"))
        return LEGACY_MODEL if self.models else None

    def setting_for(self, category: str, wanted: str) -> tuple[str, str, bool] | str:
        """How to set a setting (`mode`, `model`, `thought_level`) to `wanted`, matched
        against the offered values' ids, then their names (case-insensitive):
        `(option id or LEGACY_MODE/LEGACY_MODEL, value, already current)`, or a message
        saying why it cannot be set."""
        option = self._option(category)
        if option is None and category == "thought_level":
            option = self._option("thinking")  # vibe-acp's name for it (not the schema's)
        offered: list[tuple[str, str]] = []  # (value, name)
        how: str
        current: Any
        if option is not None:
            how, current = str(option.get("id")), option.get("currentValue")
            choice = next((c for c in self.option_choices(how) if c["id"] == how), None)
            offered = [(str(v["value"]), str(v["name"])) for v in (choice or {}).get("values", [])
                       if not isinstance(v["value"], bool)]
        elif category == "mode" and self.modes:
            how, current = LEGACY_MODE, self.current_mode_id
            offered = [(str(m.get("id")), str(m.get("name") or m.get("id"))) for m in self.modes]
        elif category == "model" and self.models:
            how, current = LEGACY_MODEL, self.current_model_id
            offered = [(m["modelId"], str(m.get("name") or m["modelId"])) for m in self.models]
        else:
            return f"{self.agent} offers no {category.replace('_', ' ')} setting"
        folded = wanted.lower()
        found = next((v for v, _ in offered if v == wanted), None) \
            or next((v for v, n in offered if n.lower() == folded), None) \
            or next((v for v, _ in offered if v.lower() == folded), None)
        if found is not None:
            return how, found, found == current
        names = ", ".join(v for v, _ in offered[:20]) or "none"
        return (f"{self.agent} offers no {category.replace('_', ' ')} {wanted!r} "
                f"(it offers: {names})")

    @property
    def current_mode(self) -> str | None:
        """The mode: the mode config option where the agent has one, else the legacy
        `currentModeId`."""
        value = self._option_value("mode")
        return value if value is not None else self.current_mode_id

    def rename(self, name: str) -> list[Event]:
        """The person's name for the session (whitespace folded; empty clears it)."""
        self.name = " ".join(name.split())[:MAX_NAME_CHARS] or None
        return [SessionRenamed(self.session_id, self.name)]

    # ------------------------------------------------------------ chunks

    def _echoed(self, raw: Mapping[str, Any]) -> bool:
        """Some agents (vibe) echo the prompt back as user chunks: it is already shown."""
        echo = self._echo
        if echo is None:
            return False
        text, block = text_of(raw.get("content"))
        if block is None and text and echo.text.startswith(text, echo.offset):
            echo.offset += len(text)
            message_id = raw.get("messageId")
            if isinstance(message_id, str) and echo.message.message_id is None:
                echo.message.message_id = message_id
                self.message_index[("user", message_id)] = echo.message
            return True
        self._echo = None
        return False

    # ------------------------------------------------------------ status machine

    def _set_status(self, new: Status, error: str | None = None) -> list[Event]:
        old = self.status
        if old == new and error == self.error:
            return []
        self.status = new
        self.error = error if new == "error" else None
        return [StatusChanged(self.session_id, old, new, self.error)]

    def mark_ready(self) -> list[Event]:
        self.seal_last()  # a replay's last message
        self.replaying = False
        self._present_before_replay = set()
        return self._set_status("closing" if self._closing else "ready")

    def mark_starting(self) -> list[Event]:
        return self._set_status("starting")

    def begin_replay(self) -> None:
        """The agent replays history next (`session/load`): messages it re-sends that this
        model already holds are not added twice."""
        self.replaying = True
        self._present_before_replay = set(self.message_index)

    def add_notice(self, kind: str, text: str,
                   data: Mapping[str, Any] | None = None) -> list[Event]:
        notice = Notice(kind, text, data)
        return [NoticeAdded(self.session_id, self.push(notice), notice)]

    def watch_turn(self) -> list[Event]:
        """A turn another window prompted (through the session host) runs: shown running
        here, and a cancel here cancels it, until `end_watched_turn`. Only from `ready`: a
        session prompting itself (or replaying, starting, failed) is left as it is."""
        if self.status != "ready" or self.replaying:
            return []
        self._watching = True
        self._cancel_requested = False
        return self._set_status("prompting")

    def end_watched_turn(self) -> list[Event]:
        """The watched turn ended (or this window prompts now): back to `ready`."""
        if not self._watching:
            return []
        self._watching = False
        self._cancel_requested = False
        if self.status not in TURN_STATUSES:
            return []
        return self._set_status("closing" if self._closing else "ready")

    @property
    def watching(self) -> bool:
        """The turn running is another window's (see `watch_turn`)."""
        return self._watching

    def begin_turn(self, prompt: list[dict[str, Any]]) -> list[Event]:
        """The person's prompt goes into the transcript and the turn starts."""
        if self.status != "ready":
            raise RuntimeError(f"cannot prompt a session that is {self.status}")
        self._watching = False
        self.turn += 1
        self.turn_tool_call_ids.clear()
        self._cancel_requested = False
        self.last_stop_reason = None
        self.agent_note = None
        message, events = self._person_message(prompt)
        self._echo = _PromptEcho(message, message.text)
        events.extend(self._set_status("prompting"))
        return events

    def add_steered(self, prompt: list[dict[str, Any]]) -> list[Event]:
        """A prompt the person sent into the running turn (steering): shown as theirs,
        in the turn; the status does not change."""
        return self._person_message(prompt)[1]

    def _person_message(self, prompt: list[dict[str, Any]]) -> tuple[Message, list[Event]]:
        """The person's prompt as a message of the transcript, within its budgets."""
        message = Message("user", None)
        index = self.push(message)
        events: list[Event] = [MessageStarted(self.session_id, index, "user", None)]
        for block in prompt:
            text, other = text_of(block)
            if other is not None:
                other = self._add_block(message, other)
            else:
                text = self._add_text(message, text)
            events.append(MessageChunk(self.session_id, index, "user", text, other))
        if message.truncated:
            events.append(MessageTruncated(self.session_id, index, "user"))
        return message, events

    def request_cancel(self) -> list[Event]:
        """Person cancelled: unfinished tool calls of this turn show cancelled at once."""
        if self.status not in ("prompting", "waiting_permission"):
            return []
        self._cancel_requested = True
        events: list[Event] = []
        for tool_call_id in self.turn_tool_call_ids:
            record = self.tool_calls.get(tool_call_id)
            if record is not None and record.status in UNFINISHED_TOOL_STATUSES:
                record.cancelled = True
                events.append(ToolCallChanged(self.session_id, tool_call_id, False,
                                              frozenset({"status"})))
        events.extend(self._set_status("cancelling"))
        return events

    def turn_tool_calls(self) -> list[ToolCall]:
        """The tool calls of the running (or the last) turn, in creation order."""
        return [record for tool_call_id in self.turn_tool_call_ids
                if (record := self.tool_calls.get(tool_call_id)) is not None]

    @property
    def cancel_requested(self) -> bool:
        """The person cancelled the running turn (until it ends)."""
        return self._cancel_requested

    @property
    def in_turn(self) -> bool:
        return self.status in TURN_STATUSES

    def end_turn(self, stop_reason: str | None, error: str | None = None, *,
                 connection_lost: bool = False, timed_out: bool = False,
                 usage: TurnUsage | None = None, quota: str | None = None) -> list[Event]:
        """The prompt's reply (or its error) arrived. An error after a cancel is a cancel,
        unless the turn `timed_out` (louise cancelled it: the error says why).

        The `usage` the reply reported goes on the turn's end line (with the stop notice
        when there is one), and so does what the turn used of the account's quota
        (`quota`: `4% of the 5h window`). With `connection_lost` the agent is gone: the
        session ends in `error`."""
        self.last_turn_usage = usage
        self.seal_last()  # the turn's last message, if no notice follows it
        self._echo = None
        self._watching = False
        self.agent_note = None
        if connection_lost:
            lost = [*self.add_notice("error", error or "the agent went away"),
                    TurnEnded(self.session_id, "error", error)]
            self._cancel_requested = False
            return lost + self.fail(error or "the agent went away")
        if self._cancel_requested and error is not None and not timed_out:
            stop_reason, error = "cancelled", None
        reason = stop_reason or ("error" if error else "end_turn")
        self.last_stop_reason = reason
        self._pending_permissions.clear()
        events: list[Event] = []
        if reason == "cancelled":
            for tool_call_id in self.turn_tool_call_ids:
                record = self.tool_calls.get(tool_call_id)
                if record is not None and record.status in UNFINISHED_TOOL_STATUSES \
                        and not record.cancelled:
                    record.cancelled = True
                    events.append(ToolCallChanged(self.session_id, tool_call_id, False,
                                                  frozenset({"status"})))
        notice = _STOP_NOTICES.get(reason)
        spent = usage.text() if usage is not None else None
        if quota:
            spent = f"{spent} · used {quota}" if spent else f"used {quota}"
        if error is not None:
            events.extend(self.add_notice("error", error))
        elif notice is not None:
            text = notice[1] if spent is None else f"{notice[1]} · {spent}"
            events.extend(self.add_notice(notice[0], text))
            spent = None
        if spent is not None:
            events.extend(self.add_notice("usage", spent))
        events.append(TurnEnded(self.session_id, reason, error))
        self._cancel_requested = False
        if self.status not in ("error", "closed"):
            events.extend(self._set_status("closing" if self._closing else "ready"))
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
        if self.status in TURN_STATUSES:
            self._pending_permissions.clear()
            for tool_call_id in self.turn_tool_call_ids:
                record = self.tool_calls.get(tool_call_id)
                if record is not None and record.status in UNFINISHED_TOOL_STATUSES:
                    record.status = "failed"
                    events.append(ToolCallChanged(self.session_id, tool_call_id, False,
                                                  frozenset({"status"})))
        self.replaying = False
        self._watching = False
        events.extend(self._set_status("error", error))
        return events

    def begin_close(self) -> list[Event]:
        """The session is being closed: it takes no new turn. A running turn goes on to its
        end (the caller cancels it), then the session is `closing` until `close()`."""
        self._closing = True
        if self.status in TURN_STATUSES or self.status in ("error", "closed"):
            return []
        return self._set_status("closing")

    @property
    def closing(self) -> bool:
        """Closing has begun (`begin_close`) and the session is not closed yet."""
        return self._closing and self.status != "closed"

    def close(self) -> list[Event]:
        self._pending_permissions.clear()
        self._watching = False
        return self._set_status("closed")


_STOP_NOTICES: dict[str, tuple[str, str]] = {
    "cancelled": ("cancelled", "cancelled"),
    "refusal": ("stop", "the agent refused; this prompt and what followed are not in its context"),
    "max_tokens": ("stop", "stopped: the model reached its token limit"),
    "max_turn_requests": ("stop", "stopped: the turn reached its request limit"),
}
