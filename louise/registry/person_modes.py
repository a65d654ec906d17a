"""A mode the person picked in louise that approves side effects for them. Pure.

Agents have modes that let edits (or everything) go ahead without asking: gemini-cli
`autoEdit` and `yolo`, qwen-code `auto-edit` and `yolo`, claude `acceptEdits` and
`bypassPermissions`, vibe `accept-edits` and `auto-approve`, codex `full-access`. Such an
agent then writes through `fs/write_text_file` without a permission request, and the gate
(`gate.py`) would ask before every write all the same. When the person chose that mode in
louise (the mode picker, `:LouiseMode`), the choice is their approval: while the session
stays in it, the gate lets what the mode covers through (edits; commands too for a mode
that approves everything). A mode the agent switched to by itself approves nothing.
"""

from __future__ import annotations

from typing import Final

EDIT: Final = "edit"
EXECUTE: Final = "execute"
# Mode ids folded to lowercase letters and digits.
EDIT_MODES = frozenset({"autoedit", "acceptedits"})
EVERYTHING_MODES = frozenset({"yolo", "bypasspermissions", "autoapprove", "fullaccess"})


def folded(mode_id: str) -> str:
    return "".join(c for c in mode_id.lower() if c.isalnum())


def mode_covers(mode_id: str | None) -> frozenset[str]:
    """What a mode approves without asking: edits, and commands too (or nothing)."""
    key = folded(mode_id or "")
    if key in EVERYTHING_MODES:
        return frozenset({EDIT, EXECUTE})
    if key in EDIT_MODES:
        return frozenset({EDIT})
    return frozenset()


def person_approves(person_mode: str | None, current_mode: str | None, kind: str) -> bool:
    """Whether the mode the person picked (`person_mode`), still the session's current
    one, approves a side effect of `kind` (EDIT or EXECUTE)."""
    return person_mode is not None and person_mode == current_mode \
        and kind in mode_covers(person_mode)
