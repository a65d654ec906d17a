"""The scenarios that ask the person through the client: a form elicitation (`ask`) and
a URL elicitation followed by `elicitation/complete` (`visit`)."""

from __future__ import annotations

from .turn import Turn

ASK_SCHEMA = {
    "type": "object",
    "title": "About the release",
    "properties": {
        "name": {"type": "string", "title": "Release name", "minLength": 1, "maxLength": 40},
        "color": {"type": "string", "title": "Colour", "default": "green",
                  "oneOf": [{"const": "red", "title": "Red"},
                            {"const": "green", "title": "Green"},
                            {"const": "blue", "title": "Blue"}]},
        "count": {"type": "integer", "title": "How many", "minimum": 1, "maximum": 10},
        "notify": {"type": "boolean", "title": "Notify the team", "default": False},
        "tags": {"type": "array", "title": "Tags",
                 "items": {"type": "string", "enum": ["docs", "fix", "feature"]}},
    },
    "required": ["name", "count"],
}


async def ask(turn: Turn) -> str:
    """A form elicitation (needs the client's `elicitation.form`), then the answers."""
    if not turn.client.elicitation_form:
        await turn.say("Your client cannot answer forms (no `elicitation.form`).")
        return "end_turn"
    call = turn.tool_call("Ask about the release", "other")
    result = await turn.ask("elicitation/create", {
        "toolCallId": call, "mode": "form",
        "message": "A few details about the release, please.",
        "requestedSchema": ASK_SCHEMA})
    action = result.get("action") if isinstance(result, dict) else None
    turn.tool_update(call, status="completed")
    if action == "accept":
        content = result.get("content") or {}
        answers = ", ".join(f"{key}={content[key]!r}" for key in sorted(content))
        await turn.say(f"Thanks: {answers}.")
    else:
        await turn.say(f"You chose not to answer ({action}).")
    return "end_turn"


async def visit(turn: Turn) -> str:
    """A URL elicitation (needs `elicitation.url`); once accepted, `elicitation/complete`
    follows after `delay_ms`."""
    if not turn.client.elicitation_url:
        await turn.say("Your client cannot open pages for me (no `elicitation.url`).")
        return "end_turn"
    turn.session.next_tool_call += 1
    ident = f"{turn.session.id}-visit-{turn.session.next_tool_call}"
    url = turn.knobs.text("url", "https://example.com/louise-demo/connect")
    result = await turn.ask("elicitation/create", {
        "mode": "url", "elicitationId": ident, "url": url,
        "message": "Connect the demo account in your browser."})
    action = result.get("action") if isinstance(result, dict) else None
    if action != "accept":
        await turn.say(f"You did not open the page ({action}).")
        return "end_turn"
    await turn.pause(turn.knobs.number("delay_ms", 200))
    turn.peer.notify("elicitation/complete", {"elicitationId": ident})
    await turn.say("The page says you are connected.")
    return "end_turn"


