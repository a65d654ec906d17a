"""The one door to the SDK's generated pydantic models (`acp.schema`).

Everything else in louise imports spec-named types from here. The SDK module costs about
half a second to import, so it is loaded on first use, never at import time of louise.

Parsing is lenient by construction: `parse_update` dispatches on the raw `sessionUpdate`
string and validates only the matching variant; an unknown variant or a payload that fails
validation comes back with `model=None` and the raw dict kept, never an exception.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ValidationError

log = logging.getLogger("louise.acp.schema")

PROTOCOL_VERSION = 1

# Spec name -> SDK class name (the SDK names differ; see acp-protocol-notes §2.2).
SPEC_NAMES: dict[str, str] = {
    # session/update variants
    "UserMessageChunk": "UserMessageChunk",
    "AgentMessageChunk": "AgentMessageChunk",
    "AgentThoughtChunk": "AgentThoughtChunk",
    "ToolCall": "ToolCallStart",
    "ToolCallUpdateNotification": "ToolCallProgress",
    "Plan": "AgentPlanUpdate",
    "AvailableCommandsUpdate": "AvailableCommandsUpdate",
    "CurrentModeUpdate": "CurrentModeUpdate",
    "ConfigOptionUpdate": "ConfigOptionUpdate",
    "SessionInfoUpdate": "SessionInfoUpdate",
    "UsageUpdate": "UsageUpdate",
    # objects
    "ToolCallUpdate": "ToolCallUpdate",  # the object inside a permission request
    "PermissionOption": "PermissionOption",
    "RequestPermissionRequest": "RequestPermissionRequest",
    "TextContent": "TextContentBlock",
    "ImageContent": "ImageContentBlock",
    "AudioContent": "AudioContentBlock",
    "ResourceLink": "ResourceContentBlock",
    "EmbeddedResource": "EmbeddedResourceContentBlock",
    "ContentToolCallContent": "ContentToolCallContent",
    "Diff": "FileEditToolCallContent",
    "Terminal": "TerminalToolCallContent",
    "InitializeResponse": "InitializeResponse",
    "AgentCapabilities": "AgentCapabilities",
    "NewSessionResponse": "NewSessionResponse",
    "LoadSessionResponse": "LoadSessionResponse",
    "ResumeSessionResponse": "ResumeSessionResponse",
    "ListSessionsResponse": "ListSessionsResponse",
    "SessionInfo": "SessionInfo",
    "SessionModeState": "SessionModeState",
    "SetSessionConfigOptionResponse": "SetSessionConfigOptionResponse",
    "PromptResponse": "PromptResponse",
    "AuthMethod": "AuthMethodAgent",
    "ReadTextFileRequest": "ReadTextFileRequest",
    "WriteTextFileRequest": "WriteTextFileRequest",
    "CreateTerminalRequest": "CreateTerminalRequest",
}

# sessionUpdate discriminator -> SDK class name
UPDATE_VARIANTS: dict[str, str] = {
    "user_message_chunk": "UserMessageChunk",
    "agent_message_chunk": "AgentMessageChunk",
    "agent_thought_chunk": "AgentThoughtChunk",
    "tool_call": "ToolCallStart",
    "tool_call_update": "ToolCallProgress",
    "plan": "AgentPlanUpdate",
    "available_commands_update": "AvailableCommandsUpdate",
    "current_mode_update": "CurrentModeUpdate",
    "config_option_update": "ConfigOptionUpdate",
    "session_info_update": "SessionInfoUpdate",
    "usage_update": "UsageUpdate",
}


@cache
def sdk() -> ModuleType:
    """The SDK's schema module, imported on first use."""
    return importlib.import_module("acp.schema")


def model(spec_name: str) -> type[BaseModel]:
    """The SDK model class for a spec name (see SPEC_NAMES)."""
    cls: type[BaseModel] = getattr(sdk(), SPEC_NAMES.get(spec_name, spec_name))
    return cls


@cache
def _variant(kind: str) -> type[BaseModel] | None:
    name = UPDATE_VARIANTS.get(kind)
    if name is None:
        return None
    cls: type[BaseModel] = getattr(sdk(), name)
    return cls


@dataclass(frozen=True, slots=True)
class ParsedUpdate:
    """One `session/update` payload: its kind, the raw dict, and the typed model if valid."""

    kind: str
    raw: dict[str, Any]
    model: BaseModel | None
    error: str | None = None


def parse_update(raw: Any) -> ParsedUpdate:
    """Validate one `update` object; never raises."""
    if not isinstance(raw, dict):
        return ParsedUpdate("", {"value": raw}, None, "update is not an object")
    kind = raw.get("sessionUpdate")
    if not isinstance(kind, str):
        return ParsedUpdate("", raw, None, "update has no sessionUpdate")
    cls = _variant(kind)
    if cls is None:
        return ParsedUpdate(kind, raw, None, None)  # unknown variant: kept raw, not an error
    try:
        return ParsedUpdate(kind, raw, cls.model_validate(raw))
    except ValidationError as exc:
        return ParsedUpdate(kind, raw, None, _short(exc))


def validate(spec_name: str, payload: Any) -> BaseModel | None:
    """Validate a payload against a spec type; None (and a debug log) when it fails."""
    try:
        return model(spec_name).model_validate(payload)
    except ValidationError as exc:
        log.debug("payload is not a valid %s: %s", spec_name, _short(exc))
        return None


def dump(value: BaseModel) -> dict[str, Any]:
    """Back to camelCase wire JSON."""
    result: dict[str, Any] = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


def _short(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0] if errors else {"loc": (), "msg": str(exc)}
    where = ".".join(str(part) for part in first.get("loc", ()))
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"
