"""Static data of the demo agent: modes, config options, slash commands, canned files.

Nothing here does I/O; the shapes are copied from what real agents send
(shared/docs/acp-protocol-notes.md §3): camelCase keys, snake_case discriminators.
"""

from __future__ import annotations

from typing import Any

from louise.demo_agent import workspace

JsonObject = dict[str, Any]

AGENT_NAME = "louise-demo-agent"
AGENT_TITLE = "Louise demo agent"

MODES: list[JsonObject] = [
    {"id": "ask", "name": "Ask", "description": "Answer questions; never edit files."},
    {"id": "code", "name": "Code", "description": "Read, edit and run things, asking first."},
    {"id": "architect", "name": "Architect", "description": "Plan changes before making them."},
]
DEFAULT_MODE = "code"

MODELS: list[JsonObject] = [
    {"value": "demo-fast", "name": "Demo Fast", "description": "Short, quick answers."},
    {"value": "demo-smart", "name": "Demo Smart", "description": "Longer, careful answers."},
]
THOUGHT_LEVELS: list[JsonObject] = [
    {"value": "off", "name": "Off"},
    {"value": "low", "name": "Low"},
    {"value": "high", "name": "High"},
]

# config id -> (name, category, options); the order is the agent's priority order.
CONFIG_OPTIONS: dict[str, tuple[str, str, list[JsonObject]]] = {
    "mode": (
        "Session Mode",
        "mode",
        [{"value": m["id"], "name": m["name"], "description": m["description"]} for m in MODES],
    ),
    "model": ("Model", "model", MODELS),
    "thought_level": ("Thinking", "thought_level", THOUGHT_LEVELS),
}
DEFAULT_CONFIG: dict[str, str] = {
    "mode": DEFAULT_MODE,
    "model": "demo-fast",
    "thought_level": "low",
}


def modes_state(current: str) -> JsonObject:
    return {"currentModeId": current, "availableModes": [dict(m) for m in MODES]}


def config_options(values: dict[str, str], legacy_models: bool = False
                   ) -> list[JsonObject]:
    """The complete set of config options with their current values (without the model
    when the model is offered the legacy way)."""
    return [
        {
            "id": config_id,
            "name": name,
            "category": category,
            "type": "select",
            "currentValue": values[config_id],
            "options": [dict(o) for o in options],
        }
        for config_id, (name, category, options) in CONFIG_OPTIONS.items()
        if not (legacy_models and config_id == "model")
    ]


def models_state(current: str) -> JsonObject:
    """The legacy model state (as gemini-cli sends it), for LOUISE_DEMO_MODELS=legacy."""
    return {"currentModelId": current,
            "availableModels": [{"modelId": m["value"], "name": m["name"],
                                 "description": m["description"]} for m in MODELS]}


def is_valid_config_value(config_id: str, value: object) -> bool:
    entry = CONFIG_OPTIONS.get(config_id)
    return entry is not None and any(o["value"] == value for o in entry[2])


AVAILABLE_COMMANDS: list[JsonObject] = [
    {
        "name": "scenario",
        "description": "Run a scripted demo scenario (see /help).",
        "input": {"hint": "NAME [key=value …]"},
    },
    {"name": "help", "description": "List the scenarios, knobs and fail modes.", "input": None},
]

CONTEXT_WINDOW = 200_000  # `size` of every usage_update
USD_PER_TOKEN = 0.000004

# ---- canned files for the edit scenarios ----------------------------------------------

HELLO_OLD = workspace.HELLO_OLD  # what the demo's workspace has in hello.py
HELLO_NEW = (
    "def greet(name: str) -> None:\n"
    '    """Greet someone by name."""\n'
    '    print(f"Hello, {name}!")\n'
)

# (relative path, old text or None for a new file, new text)
MULTI_EDIT: list[tuple[str, str | None, str]] = [
    (
        "src/app.py",
        "from greet import greet\n\ngreet()\n",
        'from greet import greet\n\ngreet("louise")\n',
    ),
    (
        "README.md",
        "# Demo\n\nRun `python src/app.py`.\n",
        "# Demo\n\nRun `python src/app.py` to greet louise.\n",
    ),
    ("docs/CHANGES.md", None, "# Changes\n\n- `greet` now takes a name.\n"),
]

README_EXCERPT = "# Demo project\n\nA tiny project used by louise-demo-agent.\n"

CHAT_REPLY = """\
## Hello from the demo agent

You wrote: *{echo}*

A reply can hold all the usual markdown:

- **bold**, *italic* and `inline code`
- a [link](https://agentclientprotocol.com)
- a code fence:

```python
def greet(name: str) -> str:
    return f"Hello, {{name}}!"
```

> Everything here is scripted; no model and no network are involved.

Type `/help` to list the other scenarios, e.g. `/scenario edit`.
"""

# ---- saved sessions, so that session/list and session/load work in a fresh process ----

SAVED_TITLES = [
    "Explain the build",
    "Fix the greeting",
    "Plan the release",
    "Why is CI red?",
]


def saved_history(index: int) -> list[JsonObject]:
    """Replayable updates of saved session `index` (0-based), without `sessionId`."""
    title = SAVED_TITLES[index % len(SAVED_TITLES)]
    prefix = f"saved-{index + 1}"
    return [
        {
            "sessionUpdate": "user_message_chunk",
            "messageId": f"{prefix}-u1",
            "content": {"type": "text", "text": f"{title}, please."},
        },
        {
            "sessionUpdate": "agent_thought_chunk",
            "messageId": f"{prefix}-t1",
            "content": {"type": "text", "text": "Let me look at the README first."},
        },
        {
            "sessionUpdate": "tool_call",
            "toolCallId": f"{prefix}-call-1",
            "title": "Read README.md",
            "kind": "read",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": README_EXCERPT}}],
        },
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": f"{prefix}-m1",
            "content": {
                "type": "text",
                "text": f"Here is my answer to *{title}*:\n\n```sh\npython -m pytest\n```\n",
            },
        },
    ]


def session_title(prompt: str) -> str:
    """A session's title from its first prompt: the words a person wrote, but a scenario
    by its name ("Scenario: multi edit"), not its raw command and knobs."""
    words = prompt.split()
    if words[:1] == ["/scenario"]:
        return "Scenario: " + words[1].replace("_", " ") if len(words) > 1 else "Scenario"
    if words[:1] == ["/help"]:
        return "Help"
    return " ".join(words)[:60] or "Untitled"
