"""Agents that echo a prompt back (vibe sends it again as `user_message_chunk` updates at
the start of the turn): the host already showed the prompt to the session's other front
ends and put it in the history when it sent it, so the echo goes to the prompt's sender
alone (its own front end recognises it, as without a host) and not into the history: a
front end that loads the session, or looks on, sees the prompt once. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class PromptEcho:
    """The running prompt's text, and how much of it the agent echoed so far."""

    text: str
    offset: int = 0

    @classmethod
    def of(cls, prompt: Any) -> PromptEcho | None:
        """The echo to expect for a prompt's content blocks (None: no text to echo)."""
        if not isinstance(prompt, list):
            return None
        text = "".join(block["text"] for block in prompt if isinstance(block, dict)
                       and block.get("type") == "text" and isinstance(block.get("text"), str))
        return cls(text) if text else None

    def takes(self, update: dict[str, Any]) -> bool:
        """Whether `update` (a user_message_chunk) continues the echo; it is then taken."""
        content = update.get("content")
        if not isinstance(content, dict) or content.get("type") != "text":
            return False
        text = content.get("text")
        if not isinstance(text, str) or not text or not self.text.startswith(text, self.offset):
            return False
        self.offset += len(text)
        return True
