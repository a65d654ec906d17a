"""What the session host tells a front end beyond ACP, as lines of the chat (pure):
`_louise/permission_answered`, a permission request this front end was also asked that
another front end (or the host's configured rules) answered first; `_louise/turn_ended`,
the end of a turn another front end prompted (begun by that prompt, relayed as a
`user_message_chunk`; a loaded session's answer says one runs, `turn_running`). The
permission request itself is withdrawn by the host's `$/cancel_request` (the broker
closes the question); this is the line that says what became of it and who answered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PERMISSION_ANSWERED = "_louise/permission_answered"
TURN_ENDED = "_louise/turn_ended"
# How the host relays another front end's prompt: a turn runs until TURN_ENDED.
PROMPT_RELAYED = "user_message_chunk"
MAX_SHOWN = 120  # characters of a name or an option the host sends

_KIND_WORDS = {"allow_once": "allowed once", "allow_always": "allowed always",
               "reject_once": "rejected once", "reject_always": "rejected always"}


def _short(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 1] + "…"


@dataclass(frozen=True, slots=True)
class Answered:
    """A permission request the host answered, for the chat's note."""

    session_id: str  # the agent's
    line: str  # for the chat
    tool_call_id: str | None
    outcome: dict[str, Any] | None  # the wire outcome, when an option was selected
    option_kind: str | None  # that option's kind, as the host names it


def permission_answered(params: Any) -> Answered | None:
    """What a `_louise/permission_answered` says, or None for params that do not say."""
    if not isinstance(params, dict):
        return None
    session_id = params.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        return None
    outcome = params.get("outcome")
    selected = isinstance(outcome, dict) and outcome.get("outcome") == "selected"
    if not selected:
        what = "cancelled"
    else:
        kind = params.get("optionKind")
        what = _KIND_WORDS.get(kind, "") if isinstance(kind, str) else ""
        if not what:  # an option of no kind louise knows: its name
            name = _short(params.get("optionName"))
            what = f"answered {name!r}" if name else "answered"
    by = _short(params.get("by"))
    tool_call_id = params.get("toolCallId")
    option_id = outcome.get("optionId") if isinstance(outcome, dict) else None
    return Answered(
        session_id, f"answered in another window: {what}" + (f" — by {by}" if by else ""),
        tool_call_id if isinstance(tool_call_id, str) else None,
        {"outcome": "selected", "optionId": option_id}
        if selected and isinstance(option_id, str) else None,
        kind if selected and isinstance(kind := params.get("optionKind"), str) else None)


_STOP_WORDS = {"end_turn": "ended", "cancelled": "was cancelled", "refusal": "was refused",
               "max_tokens": "reached its token limit",
               "max_turn_requests": "reached its request limit", "error": "failed"}


def turn_ended(params: Any) -> tuple[str, str] | None:
    """(the agent's session id, the chat line) of `_louise/turn_ended`, or None."""
    if not isinstance(params, dict):
        return None
    session_id = params.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        return None
    stop = params.get("stopReason")
    words = _STOP_WORDS.get(stop, "ended") if isinstance(stop, str) else "ended"
    return session_id, f"the turn prompted in another window {words}"


def turn_running(answer: Any) -> bool:
    """Whether the host's answer to `session/load` says a turn runs (another front end's:
    `_meta.louise.turnRunning`)."""
    meta = answer.get("_meta") if isinstance(answer, dict) else None
    louise = meta.get("louise") if isinstance(meta, dict) else None
    return isinstance(louise, dict) and louise.get("turnRunning") is True
