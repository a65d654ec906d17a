"""Typed events a session emits; every change reaches subscribers as one of these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from louise.session.records import IdPlan, Notice, Role, Status


@dataclass(slots=True)
class Event:
    """Base of every session event. Events are values: never mutate one. (Not frozen:
    a frozen dataclass costs ~1 us more to build, and one is built per streamed chunk.)"""

    session_id: str


@dataclass(slots=True)
class StatusChanged(Event):
    """The session's status changed."""

    old: Status
    new: Status
    error: str | None = None


@dataclass(slots=True)
class MessageStarted(Event):
    """A message began in the transcript."""

    index: int  # entry index in the transcript
    role: Role
    message_id: str | None


@dataclass(slots=True)
class MessageChunk(Event):
    """Text (or a block) appended to a message."""

    index: int
    role: Role
    text: str  # the appended text ("" for a non-text block)
    block: dict[str, Any] | None = None


@dataclass(slots=True)
class MessageTruncated(Event):
    """The message's budget is spent: what the agent sends for it from here on is not
    kept (sent once per message; the front ends show `budget.MESSAGE_CUT_MARKER`)."""

    index: int
    role: Role


@dataclass(slots=True)
class ToolCallChanged(Event):
    """A tool call was created or changed."""

    tool_call_id: str
    created: bool
    changed: frozenset[str]  # names of fields that changed


@dataclass(slots=True)
class TerminalReported(Event):
    """A terminal the agent runs itself (`ToolCall.terminals`) in one update: the output
    it appended (may be ""), its end once it ended, and `command` (the tool call's title)
    the first time it is reported. Output past the byte bound is not passed on: the one
    event that reaches the bound carries a marker saying so."""

    tool_call_id: str
    terminal_id: str
    data: str
    exited: bool = False
    exit_code: int | None = None
    signal: str | None = None
    command: str | None = None


@dataclass(slots=True)
class PlanChanged(Event):
    """The agent's plan changed."""

    entries: tuple[dict[str, Any], ...]


@dataclass(slots=True)
class CommandsChanged(Event):
    """The agent's slash commands changed."""

    commands: tuple[dict[str, Any], ...]


@dataclass(slots=True)
class ModeChanged(Event):
    """The session's mode changed."""

    current_mode_id: str | None


@dataclass(slots=True)
class ModelChanged(Event):
    """The legacy model state changed (agents without a model config option)."""

    current_model_id: str | None


@dataclass(slots=True)
class ConfigOptionsChanged(Event):
    """The session's config options changed."""

    options: tuple[dict[str, Any], ...]


@dataclass(slots=True)
class InfoChanged(Event):
    """The keys one `session_info_update` changed (None: cleared); the whole table is
    `Session.info`. Only the changes travel: copying the table per update was quadratic."""

    changed: Mapping[str, Any]


@dataclass(slots=True)
class AgentNoted(Event):
    """The agent's note of its own state changed (`Session.agent_note`: a reconnect, a
    retry; see agent_notes.py); None: the turn made progress again, the note is over."""

    note: str | None


@dataclass(slots=True)
class UsageChanged(Event):
    """The context window's use (and cost) changed."""

    used: int | None
    size: int | None
    cost: Mapping[str, Any] | None


@dataclass(slots=True)
class UnknownUpdate(Event):
    """An update louise does not know, or could not read."""

    kind: str
    raw: Mapping[str, Any]
    error: str | None


@dataclass(slots=True)
class NoticeAdded(Event):
    """A notice was added to the transcript."""

    index: int
    notice: Notice


@dataclass(slots=True)
class TurnEnded(Event):
    """The turn ended, and why."""

    stop_reason: str  # end_turn, max_tokens, max_turn_requests, refusal, cancelled, error
    error: str | None = None


@dataclass(slots=True)
class PermissionPending(Event):
    """A permission request of this session waits for the person."""

    request_id: int
    tool_call_id: str | None
    pending: int  # how many permissions this session now waits on


@dataclass(slots=True)
class PermissionSettled(Event):
    """A permission request of this session was answered or withdrawn."""

    request_id: int
    outcome: str  # "selected:<optionId>" or "cancelled"
    pending: int


@dataclass(slots=True)
class SessionRenamed(Event):
    """The person renamed the session (`Session.name`); only headers change."""

    name: str | None


@dataclass(slots=True)
class SessionReplaced(Event):
    """The model behind `session_id` was replaced by a fresh one holding the agent's
    replay of its history (after `session/load`, also when reattaching after a crash).
    Look the session up again and render it whole: entry indexes start over."""


@dataclass(slots=True)
class PlanUpdated(Event):
    """An ID-addressed plan (unstable `plan_update`) changed, or was removed (`plan`
    None); the plans are `Session.id_plans`."""

    plan_id: str
    plan: IdPlan | None


@dataclass(slots=True)
class CompactionChanged(Event):
    """A context compaction (unstable `compaction_update`, `compaction_summary_chunk`)
    began (`created`: its entry was added to the transcript) or changed; the record is
    `Session.compactions[compaction_id]`."""

    compaction_id: str
    created: bool
