"""`/scenario unstable`: the schema's unstable session updates, each sent only where the
client advertised it (as the schema requires): ID-addressed plans (`plan_update` with
items, then markdown, `plan_removed`; `clientCapabilities.plan`), a `notice` (no
capability needed) and a context compaction (`compaction_update` in progress, summary
chunks, then its outcome; `clientCapabilities.session.compaction`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .turn import Turn

STEPS = ["Read the notes", "Change the code", "Run the tests"]
OUTCOMES = ("completed", "failed", "cancelled")


def _items(done: int) -> list[dict[str, str]]:
    return [{"content": step, "priority": "medium",
             "status": "completed" if i < done else "in_progress" if i == done else "pending"}
            for i, step in enumerate(STEPS)]


async def unstable(turn: Turn) -> str:
    delay = turn.knobs.number("delay_ms", 50)
    outcome = turn.knobs.text("compaction", "completed")
    if outcome not in OUTCOMES:
        await turn.say(f"Cannot run `unstable`: compaction is one of {', '.join(OUTCOMES)}.")
        return "end_turn"
    sent = []
    if turn.client.plan_operations:
        for done in range(len(STEPS)):
            turn.update({"sessionUpdate": "plan_update",
                         "plan": {"type": "items", "planId": "demo-steps",
                                  "entries": _items(done)}})
            await turn.pause(delay)
        turn.update({"sessionUpdate": "plan_update",
                     "plan": {"type": "markdown", "planId": "demo-notes",
                              "content": "## Notes\n\n- keep the change small\n- test it"}})
        await turn.pause(delay)
        turn.update({"sessionUpdate": "plan_removed", "planId": "demo-notes"})
        sent.append("plans")
    # A notice is advisory, not history: sent, never recorded for session/load.
    turn.peer.notify("session/update", {"sessionId": turn.session.id, "update": {
        "sessionUpdate": "notice", "severity": "warning", "title": "Demo notice",
        "description": "Shown to you; not part of the session's history."}})
    sent.append("a notice")
    if turn.client.compaction:
        turn.session.next_tool_call += 1
        compaction = f"{turn.session.id}-c{turn.session.next_tool_call}"
        turn.update({"sessionUpdate": "compaction_update", "compactionId": compaction,
                     "status": "in_progress"})
        for text in ("The person asked for a small change", "; the tests pass."):
            await turn.pause(delay)
            turn.update({"sessionUpdate": "compaction_summary_chunk",
                         "compactionId": compaction, "content": {"type": "text", "text": text}})
        final: dict[str, object] = {"sessionUpdate": "compaction_update",
                                    "compactionId": compaction, "status": outcome}
        if outcome == "failed":
            final["error"] = "the summary did not fit"
            final["summary"] = None
        elif outcome == "cancelled":
            final["summary"] = []
        turn.update(final)
        sent.append(f"a compaction ({outcome})")
    await turn.say(f"Sent {', '.join(sent)}.")
    return "end_turn"
