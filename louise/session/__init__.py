"""One ACP session's model (pure): content within byte budgets, a status machine, and the
typed events every change produces. See `model.Session`.

Everything an agent sends is bounded here: message text, transcript entries, tool calls,
raw payloads and kept-raw unknown updates all have caps (see `SessionBounds`), in bytes
where the agent controls the size, with a visible marker where content is cut.
"""

from louise.session.budget import json_size, text_bytes
from louise.session.content import SessionContent
from louise.session.events import (
    CommandsChanged,
    ConfigOptionsChanged,
    Event,
    InfoChanged,
    MessageChunk,
    MessageStarted,
    ModeChanged,
    ModelChanged,
    NoticeAdded,
    PermissionPending,
    PermissionSettled,
    PlanChanged,
    SessionRenamed,
    SessionReplaced,
    StatusChanged,
    TerminalReported,
    ToolCallChanged,
    TurnEnded,
    UnknownUpdate,
    UsageChanged,
)
from louise.session.model import Session
from louise.session.records import (
    TURN_STATUSES,
    UNFINISHED_TOOL_STATUSES,
    AgentTerminal,
    Entry,
    Message,
    Notice,
    Role,
    SessionBounds,
    Status,
    ToolCall,
    ToolCallRef,
)
from louise.session.usage import TurnUsage

__all__ = [
    "TURN_STATUSES",
    "UNFINISHED_TOOL_STATUSES",
    "AgentTerminal",
    "CommandsChanged",
    "ConfigOptionsChanged",
    "Entry",
    "Event",
    "InfoChanged",
    "Message",
    "MessageChunk",
    "MessageStarted",
    "ModeChanged",
    "ModelChanged",
    "Notice",
    "NoticeAdded",
    "PermissionPending",
    "PermissionSettled",
    "PlanChanged",
    "Role",
    "Session",
    "SessionBounds",
    "SessionContent",
    "SessionRenamed",
    "SessionReplaced",
    "Status",
    "StatusChanged",
    "TerminalReported",
    "ToolCall",
    "ToolCallChanged",
    "ToolCallRef",
    "TurnEnded",
    "TurnUsage",
    "UnknownUpdate",
    "UsageChanged",
    "json_size",
    "text_bytes",
]
