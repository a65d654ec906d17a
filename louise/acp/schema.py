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
from collections.abc import Callable
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic loads with the SDK, on first validation (not at louise's start)
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
    # Unstable (the SDK has these; notice and compaction updates are checked by hand in
    # louise/session/unstable.py).
    "plan_update": "AgentPlanContentUpdate",
    "plan_removed": "AgentPlanRemovedUpdate",
}


# What a process runs before the SDK (and pydantic with it) is first imported: louise's
# processes import pydantic without what they never use (storage/first_use.py).
BEFORE_SDK_IMPORT: list[Callable[[], None]] = []


@cache
def sdk() -> ModuleType:
    """The SDK's schema module, imported on first use."""
    for prepare in BEFORE_SDK_IMPORT:
        prepare()
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


class ParsedUpdate:
    """One `session/update` payload: its kind and raw dict; the typed model on demand.

    Validation is lazy: the session model works on the raw dict (defensively), so the
    streaming hot path does not pay for pydantic unless someone asks for `.model`."""

    __slots__ = ("_checked", "_error", "_model", "kind", "raw")

    def __init__(self, kind: str, raw: dict[str, Any], model: BaseModel | None = None,
                 error: str | None = None) -> None:
        self.kind = kind
        self.raw = raw
        self._model = model
        self._error = error
        self._checked = model is not None or error is not None or kind not in UPDATE_VARIANTS

    def _check(self) -> None:
        if self._checked:
            return
        self._checked = True
        cls = _variant(self.kind)
        if cls is None:
            return
        from pydantic import ValidationError

        try:
            self._model = cls.model_validate(self.raw)
        except ValidationError as exc:
            self._error = _short(exc)

    @property
    def model(self) -> BaseModel | None:
        """The validated SDK model; None for unknown variants and invalid payloads."""
        self._check()
        return self._model

    @property
    def error(self) -> str | None:
        self._check()
        return self._error

    def __repr__(self) -> str:
        return f"ParsedUpdate(kind={self.kind!r}, raw={self.raw!r})"


def parse_update(raw: Any) -> ParsedUpdate:
    """Wrap one `update` object; never raises (validation happens on `.model`)."""
    if not isinstance(raw, dict):
        return ParsedUpdate("", {"value": raw}, None, "update is not an object")
    kind = raw.get("sessionUpdate")
    if not isinstance(kind, str):
        return ParsedUpdate("", raw, None, "update has no sessionUpdate")
    return ParsedUpdate(kind, raw)


def validate(spec_name: str, payload: Any) -> BaseModel | None:
    """Validate a payload against a spec type; None (and a debug log) when it fails."""
    from pydantic import ValidationError

    try:
        return model(spec_name).model_validate(payload)
    except ValidationError as exc:
        log.debug("payload is not a valid %s: %s", spec_name, _short(exc))
        return None


def _short(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0] if errors else {"loc": (), "msg": str(exc)}
    where = ".".join(str(part) for part in first.get("loc", ()))
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"
