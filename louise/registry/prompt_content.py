"""Prompt content: the `session/prompt` blocks of a prompt and its context chips (as the
agent's prompt capabilities allow). Split out of `turns.py` (module size rule)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

MAX_CONTEXT_CHIPS = 50
MAX_CHIP_CHARS = 1_000_000
CONTEXT_BREAK = "\n\n"

Chip = Mapping[str, Any]


def context_blocks(chip: Chip, embedded: bool) -> list[dict[str, Any]]:
    """Prompt content for one context chip (`{kind: buffer|file|image|selection|
    diagnostics, path, text, first, last}`): a buffer's text, or a file's (read by
    `attachments.load_attachments`), embedded as a resource only when the agent
    advertises `embeddedContext`, else a resource_link; an image read in as `data` and
    `mime`, as an image block (one the agent cannot take has no data: left out)."""
    kind = chip.get("kind")
    path = str(chip.get("path") or "")
    uri = "file://" + path if path.startswith("/") else path
    name = os.path.basename(path) or path or "context"
    text = str(chip.get("text") or "")[:MAX_CHIP_CHARS]
    if kind in ("buffer", "file"):
        if embedded and text:
            return [{"type": "resource", "resource": {"uri": uri, "text": text,
                                                       "mimeType": "text/plain"}}]
        return [{"type": "resource_link", "uri": uri, "name": name}]
    if kind == "image":
        data, mime = chip.get("data"), chip.get("mime")
        if isinstance(data, str) and isinstance(mime, str):
            block: dict[str, Any] = {"type": "image", "data": data, "mimeType": mime}
            if path.startswith("/") and not chip.get("clipboard"):
                block["uri"] = uri
            return [block]
        return []
    # A text block of context starts on a paragraph of its own: agents (and the
    # transcript) join a prompt's text blocks as they come ("explain thisSelection from").
    if kind == "selection":
        where = f"{path}:{chip.get('first')}-{chip.get('last')}"
        return [{"type": "text",
                 "text": f"{CONTEXT_BREAK}Selection from {where}:\n````\n{text}\n````"}]
    if kind == "diagnostics":
        return [{"type": "text", "text": f"{CONTEXT_BREAK}Diagnostics in {path}:\n{text}"}]
    return []


def prompt_blocks(prompt: str | Sequence[Mapping[str, Any]], context: Sequence[Chip],
                  prompt_capabilities: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The `session/prompt` content: the text (or blocks as given), then the context."""
    blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else \
        [dict(block) for block in prompt]
    embedded = prompt_capabilities.get("embeddedContext") is True
    for chip in context[:MAX_CONTEXT_CHIPS]:
        if isinstance(chip, Mapping):  # from the editor: anything else is ignored
            blocks.extend(context_blocks(chip, embedded))
    return blocks
