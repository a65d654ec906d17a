"""What an agent says of its own state while a turn waits (a reconnect, a retry), and
which updates count as a turn's progress. Pure.

An agent's note rides on `session_info_update`'s `_meta`, in the agent's own dialect:

- codex-acp (without the AIR typed failures louise does not negotiate): every error of
  the model stream as `{"codex": {"error": {"message": "Reconnecting... 2/5",
  "codexErrorInfo": …, "additionalDetails": …, "turnId": …, "willRetry": true}}}`,
  each time codex retries (about once a minute while the model API is unreachable);
- the AIR typed failures (`{"jetbrains": {"air": {"sessionFailure": {"title": …,
  "severity": …}}}}`), which claude-agent-acp and codex-acp send instead when a client
  negotiates them: read too, so a later capability change shows them at once.

`additionalDetails` is not shown: codex keeps it out of its own typed notices as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

MAX_NOTE_CHARS: Final = 200

# Updates that show the agent doing the turn's work: only these keep the prompt
# watchdog quiet (a `session_info_update` with an error note is not progress, nor are
# usage, commands, modes or options). Compactions are work the agent does for the turn.
PROGRESS_KINDS: Final = frozenset({
    "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan",
    "plan_update", "plan_removed", "compaction_update",
})


def is_progress(kind: str) -> bool:
    """Whether a `session/update` of this kind is progress of the turn."""
    return kind in PROGRESS_KINDS


def note_of(update: Mapping[str, Any]) -> str | None:
    """The note one `session_info_update` carries, on one line within MAX_NOTE_CHARS;
    None when it carries none."""
    meta = update.get("_meta")
    if not isinstance(meta, Mapping):
        return None
    codex = _mapping(meta, "codex")
    error = _mapping(codex, "error")
    text = error.get("message")
    if not isinstance(text, str):
        failure = _mapping(_mapping(_mapping(meta, "jetbrains"), "air"), "sessionFailure")
        text = failure.get("title")
    return one_line(text) if isinstance(text, str) else None


def one_line(text: str) -> str | None:
    """`text` on one line (control characters and runs of spaces folded to one space),
    within MAX_NOTE_CHARS; None when nothing is left."""
    folded = " ".join("".join(c if c.isprintable() else " "
                              for c in text[:MAX_NOTE_CHARS * 4]).split())
    if not folded:
        return None
    if len(folded) > MAX_NOTE_CHARS:
        folded = folded[:MAX_NOTE_CHARS - 1] + "…"
    return folded


def _mapping(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, Mapping) else {}
