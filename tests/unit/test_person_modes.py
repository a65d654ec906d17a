"""Which modes approve what for the person who picked them (`registry/person_modes.py`),
and an agent's error in its own words (`RpcError.reason`)."""

from __future__ import annotations

import pytest

from louise.acp.errors import MAX_REASON_CHARS, RpcError
from louise.registry.person_modes import EDIT, EXECUTE, mode_covers, person_approves


@pytest.mark.parametrize(("mode", "covers"), [
    ("autoEdit", {EDIT}), ("auto-edit", {EDIT}), ("acceptEdits", {EDIT}),
    ("accept-edits", {EDIT}), ("yolo", {EDIT, EXECUTE}), ("bypassPermissions", {EDIT, EXECUTE}),
    ("full-access", {EDIT, EXECUTE}), ("auto-approve", {EDIT, EXECUTE}),
    ("default", set()), ("auto", set()), ("plan", set()), ("read-only", set()), (None, set()),
])
def test_what_each_agents_modes_approve(mode: str | None, covers: set[str]) -> None:
    assert mode_covers(mode) == covers


def test_only_the_persons_mode_while_it_is_current_approves() -> None:
    assert person_approves("autoEdit", "autoEdit", EDIT)
    assert not person_approves("autoEdit", "autoEdit", EXECUTE)
    assert not person_approves(None, "autoEdit", EDIT), "the agent switched by itself"
    assert not person_approves("autoEdit", "default", EDIT), "the session left it since"


def test_an_agents_reason_is_its_message_and_its_detail() -> None:
    why = "Cannot enable privileged approval modes in an\nuntrusted folder"
    gemini = RpcError(-32603, "Internal error", {"details": why})
    assert gemini.reason == ("Cannot enable privileged approval modes in an "
                             "untrusted folder")
    assert str(gemini) == gemini.reason  # no "JSON-RPC error -32603" for a person
    assert RpcError(-32603, "Internal error", "disk \x1b[31mfull").reason == \
        "disk [31mfull"
    assert RpcError(-32602, "Invalid params: x", {"details": "x"}).reason == \
        "x", "a detail the message already says is not said twice"
    assert RpcError(-32603, "Internal error", {"path": "/p"}).reason == \
        "it failed without saying why"
    assert RpcError(-32601, "Method not found").reason == "it does not support this"
    assert RpcError(-32000, "Rate limit exceeded").reason == "Rate limit exceeded"
    long = RpcError(-32603, "Internal error", {"message": "y" * 5000}).reason
    assert len(long) == MAX_REASON_CHARS and long.endswith("…")
